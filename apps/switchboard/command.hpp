// Subcommands of the `switchboard` tool register themselves here:
//
//   static const switchboard::cli::command_registration reg{
//       "validate", "check a model's raw output against a schema", &run_validate};
//
// Exit codes shared by every subcommand (run and resume add 3, 4 and
// 128 + N: run_session.hpp).
#pragma once

#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::cli {

inline constexpr int exit_ok = 0;       // success / valid output
inline constexpr int exit_failure = 1;  // the thing checked was invalid, the run failed
inline constexpr int exit_usage = 2;    // bad command line, missing file

// A bad command line or a missing file: subcommands exit with exit_usage.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether `e` is a mistake on the command line: a usage_error, or a file or
// directory it named that does not exist (host::host_errc::missing_path).
// Such errors exit with exit_usage and show the command's usage.
bool is_usage_mistake(const std::exception& e) noexcept;

// The value of the option at args[i] (advancing i past it); a usage_error
// naming the option when it is missing.
inline const std::string& option_value(std::span<const std::string> args, std::size_t& i) {
  if (i + 1 >= args.size()) throw usage_error("option '" + args[i] + "' needs a value");
  return args[++i];
}

// A path from the command line made absolute, so that a command printed for
// later use (a resume hint) works from any directory.
inline std::filesystem::path absolute_path(const std::filesystem::path& p) {
  return p.empty() ? p : std::filesystem::absolute(p).lexically_normal();
}

// args excludes the program and subcommand names.
using command_fn = int (*)(std::span<const std::string> args);

struct command {
  std::string_view name;
  std::string_view summary;
  command_fn run;
};

struct command_registration {
  command_registration(std::string_view name, std::string_view summary, command_fn run);
};

const std::vector<command>& commands();

}  // namespace switchboard::cli
