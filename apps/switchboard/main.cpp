// switchboard — command line entry point; dispatches to the registered
// subcommands (cmd_*.cpp).
//
// Exit codes: 0 success, 1 failed (an invalid answer, a failed or refused
// run), 2 usage (a bad option, a missing file), 3 a run paused for
// clarification, 4 a run awaiting approval of tool calls, 128 + N a run
// interrupted by signal N (resumable).
#include "command.hpp"
#include "terminal_output.hpp"

#include <switchboard/host/error.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace switchboard::cli {

static std::vector<command>& command_table() {
  static std::vector<command> table;
  return table;
}

command_registration::command_registration(std::string_view name, std::string_view summary,
                                           command_fn run) {
  command_table().push_back({name, summary, run});
}

const std::vector<command>& commands() { return command_table(); }

bool is_usage_mistake(const std::exception& e) noexcept {
  if (dynamic_cast<const usage_error*>(&e)) return true;
  const auto* host_error = dynamic_cast<const host::host_error*>(&e);
  return host_error && host_error->errc() == host::host_errc::missing_path;
}

}  // namespace switchboard::cli

namespace {

void print_usage(std::ostream& out) {
  out << "usage: switchboard <command> [options]\n\ncommands:\n";
  auto sorted = switchboard::cli::commands();
  std::ranges::sort(sorted, {}, &switchboard::cli::command::name);
  for (const auto& c : sorted) {
    out << "  " << c.name << std::string(12 - std::min<std::size_t>(c.name.size(), 11), ' ')
        << c.summary << "\n";
  }
  out << "\nRun 'switchboard <command> --help' for the options of a command.\n"
         "exit codes: 0 success, 1 failed, 2 usage, 3 paused for clarification,\n"
         "            4 awaiting approval of tool calls, 128+N interrupted by signal N\n"
         "tracing: run, resume and serve send OpenTelemetry traces when OTEL_EXPORTER_OTLP_ENDPOINT is set\n"
         "         (see 'switchboard run --help' for the OTEL_* variables, docs/observability.md)\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace switchboard::cli;
  // Standard output holds what a command prints (JSON for scripts): the
  // library's log goes to standard error, one escaped line per record.
  use_stderr_logger("switchboard", spdlog::level::info);
  // A reader that went away (`switchboard run ... | head -1`) is a write
  // error to handle, not a signal that kills a run in the middle of a step.
  std::signal(SIGPIPE, SIG_IGN);
  if (argc < 2) {
    print_usage(std::cerr);
    return exit_usage;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(std::cout);
    return exit_ok;
  }
  const auto& table = commands();
  const auto it = std::ranges::find(table, name, &command::name);
  if (it == table.end()) {
    std::cerr << "switchboard: unknown command '" << shown(name) << "'\n\n";
    print_usage(std::cerr);
    return exit_usage;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    return it->run(args);
  } catch (const std::exception& e) {
    std::cerr << "switchboard " << name << ": " << shown(e.what()) << "\n";
    return exit_failure;
  }
}
