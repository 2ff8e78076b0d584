// Runs the built `switchboard` binary as a user would, for the CLI tests:
// through the shell, in a given directory, with standard input from a file,
// and returns the exit status with what it printed.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace switchboard::test {

struct cli_result {
  int exit_code = -1;
  std::string out;  // standard output (with standard error too when merged)
};

inline std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// Runs `switchboard <arguments>` in `dir`. `arguments` are already quoted;
// `environment` ("NAME=value ..." assignments, quoted) is set for the command
// only. With `merge_stderr` standard error goes into `out` as well; otherwise
// it goes to `dir`/stderr.txt.
inline cli_result run_switchboard(const std::filesystem::path& dir, const std::string& arguments,
                                  const std::filesystem::path& stdin_file, bool merge_stderr = true,
                                  const std::string& environment = "") {
  const std::string command = "cd " + shell_quoted(dir.string()) + " && " + environment + " " +
                              shell_quoted(SWITCHBOARD_BINARY_DIR "/bin/switchboard") + " " + arguments +
                              " < " + shell_quoted(stdin_file.string()) +
                              (merge_stderr ? " 2>&1" : " 2> stderr.txt");
  cli_result result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace switchboard::test
