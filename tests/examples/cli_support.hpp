// The end-to-end tests of the sample: where it is, a scratch directory per
// test (its state directory too) and `switchboard` run there through the
// one runner of the command line tests (tests/cli_runner.hpp), standard
// input from /dev/null, so never a terminal.
#pragma once

#include "../cli_runner.hpp"

#include <switchboard/testing/temp_dir.hpp>

#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace switchboard::testing {

using test::cli_result;
using test::file_text;
using test::shell_quoted;
using test::switchboard_binary;

// The sample as shipped: its bookings wait for the user's approval.
inline const std::filesystem::path shipped_sample_workflow = std::filesystem::path(SWITCHBOARD_SOURCE_DIR) /
                                                             "examples" / "scheduling" / "workflow.json";
// A copy of the sample (data, schemas, workflow.json; the build writes it,
// tests/examples/CMakeLists.txt) that books without asking
// ("confirm_bookings": false): what most end-to-end tests run.
inline const std::filesystem::path sample_workflow =
    std::filesystem::path(SWITCHBOARD_UNCONFIRMED_SAMPLE) / "workflow.json";

// The whole result, for a failure message.
inline std::string describe(const cli_result& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

// `switchboard ARGS...` in `scratch` (also its state directory), isolated
// from the developer's own configuration (test::isolated_environment) with
// `env` (NAME=VALUE entries) added.
inline cli_result run_switchboard(const std::vector<std::string>& args, const temp_dir& scratch,
                                  const std::vector<std::string>& env = {}) {
  std::string environment = test::isolated_environment(scratch.path());
  for (const auto& e : env) environment += " " + test::shell_quoted(e);
  return test::run_switchboard(scratch.path(), test::shell_words(args), "/dev/null", false, environment);
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
