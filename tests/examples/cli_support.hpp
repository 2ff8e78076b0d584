// Runs the built `switchboard` binary in a child process (stdin from
// /dev/null, so never a terminal) and captures its exit code and output.
#pragma once

#include <switchboard/testing/temp_dir.hpp>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace switchboard::testing {

inline const std::filesystem::path switchboard_binary =
    std::filesystem::path(SWITCHBOARD_BINARY_DIR) / "bin" / "switchboard";
// The sample as shipped: its bookings wait for the user's approval.
inline const std::filesystem::path shipped_sample_workflow = std::filesystem::path(SWITCHBOARD_SOURCE_DIR) /
                                                             "examples" / "scheduling" / "workflow.json";
// A copy of the sample (data, schemas, workflow.json; the build writes it,
// tests/examples/CMakeLists.txt) that books without asking
// ("confirm_bookings": false): what most end-to-end tests run.
inline const std::filesystem::path sample_workflow =
    std::filesystem::path(SWITCHBOARD_UNCONFIRMED_SAMPLE) / "workflow.json";

struct cli_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The whole result, for a failure message.
inline std::string describe(const cli_result& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

inline std::string shell_quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

inline std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `env` entries are NAME=VALUE; OPENAI_* variables are cleared unless given,
// so that a developer's own configuration cannot turn the run online.
inline cli_result run_switchboard(const std::vector<std::string>& args, const temp_dir& scratch,
                                  const std::vector<std::string>& env = {}) {
  std::string command = "env -u OPENAI_BASE_URL -u OPENAI_API_KEY -u SWITCHBOARD_MODEL -u SWITCHBOARD_PLUGIN_PATH";
  command += " SWITCHBOARD_STATE_DIR=" + shell_quote(scratch.path().string());
  for (const auto& e : env) command += " " + shell_quote(e);
  command += " " + shell_quote(switchboard_binary.string());
  for (const auto& a : args) command += " " + shell_quote(a);
  const auto out = scratch.path() / "stdout.txt";
  const auto err = scratch.path() / "stderr.txt";
  command += " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string()) + " </dev/null";
  const int status = std::system(command.c_str());
  cli_result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// How many entries of `owner` (a member or resource) are titled `title`
// (ignoring case) in the sample's calendar file under `state_dir`, read with
// SQLite itself; -1 when there is no calendar file.
inline int calendar_entries(const std::filesystem::path& state_dir, const std::string& owner,
                            const std::string& title) {
  const auto file = state_dir / "scheduling" / "calendar.db";
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return -1;
  }
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM entries WHERE owner = ? AND lower(title) = lower(?)", -1, &stmt,
                     nullptr);
  sqlite3_bind_text(stmt, 1, owner.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 2, title.c_str(), -1, SQLITE_TRANSIENT);
  const int n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -1;
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

}  // namespace switchboard::testing
