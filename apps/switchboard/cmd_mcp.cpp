// switchboard mcp — serves workflows as tools to an MCP client over
// standard input and output (docs/interop.md): one tool per workflow file,
// plus `resume`. Runs are kept in the store `switchboard run` uses (--store,
// default the state directory's workflows.db), so `switchboard runs` lists
// them and `switchboard resume` continues them as well as the resume tool.
//
// Standard output is the protocol: everything else that would write to it
// (a plugin's printf, a library) is sent to standard error instead.
#include "command.hpp"
#include "loader_arguments.hpp"
#include "model_arguments.hpp"
#include "state_store.hpp"
#include "terminal_output.hpp"

#include <switchboard/host/opened_workflow.hpp>
#include <switchboard/host/store.hpp>
#include <switchboard/host/workflow_tools.hpp>
#include <switchboard/host/workflow_tracing.hpp>
#include <switchboard/mcp/stdio_server.hpp>
#include <switchboard/models/model_error.hpp>

#include <boost/asio/io_context.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

namespace {

namespace cli = switchboard::cli;
namespace host = switchboard::host;
namespace mcp = switchboard::mcp;
using cli::option_value;
using cli::usage_error;

std::string usage_of_mcp() {
  return "usage: switchboard mcp WORKFLOW... [options]\n"
         "Serves each workflow file as an MCP tool over standard input and output (newline-delimited\n"
         "JSON-RPC), plus a `resume` tool for runs paused for a clarification or an approval. Logs go to\n"
         "standard error. See docs/interop.md.\n" +
         std::string(cli::loader_options_usage) + std::string(cli::model_options_usage) +
         "  --store SPEC          memory, sqlite:PATH or postgresql://USER@HOST/DB (default: workflows.db\n"
         "                        in the state directory, as `switchboard run`)\n"
         "  --verbose             debug logging on standard error\n";
}

struct mcp_settings {
  std::vector<std::filesystem::path> workflow_files;
  host::workflow_settings workflow;
  std::string store_url;
  bool verbose = false;
};

mcp_settings read_arguments(std::span<const std::string> args) {
  mcp_settings settings;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (cli::take_loader_option(args, i, settings.workflow.loader)) continue;
    if (cli::take_model_option(args, i, settings.workflow.model)) {
      settings.workflow.model.ca_file = cli::absolute_path(settings.workflow.model.ca_file).string();
      settings.workflow.model.cache_dir = cli::absolute_path(settings.workflow.model.cache_dir);
      continue;
    }
    if (a == "--store") settings.store_url = host::absolute_store_url(option_value(args, i));
    else if (a == "--verbose") settings.verbose = true;
    else if (a.starts_with("-")) throw usage_error("unknown option '" + a + "'");
    else settings.workflow_files.push_back(cli::absolute_path(a));
  }
  if (settings.workflow_files.empty()) throw usage_error("missing the workflow file(s)");
  return settings;
}

// Keeps the protocol's standard output for the server alone: returns a
// descriptor of it, and points descriptor 1 at standard error.
int take_standard_output() {
  const int protocol_fd = ::dup(STDOUT_FILENO);
  if (protocol_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    throw std::runtime_error(std::string("cannot set up standard output: ") + std::strerror(errno));
  return protocol_fd;
}

int serve(const mcp_settings& settings, int protocol_fd) {
  auto store = cli::open_state_store(settings.store_url);
  std::vector<host::tool_workflow> workflows;
  for (const auto& file : settings.workflow_files) {
    host::workflow_settings one = settings.workflow;
    one.workflow_file = file;
    auto opened = std::make_shared<host::opened_workflow>(host::open_workflow(one, store));
    for (const auto& notice : opened->agents.notices) std::cerr << cli::shown(notice) << "\n";
    workflows.push_back({std::move(opened), host::workflow_description(file)});
  }
  boost::asio::io_context io;
  auto tools = std::make_shared<host::workflow_tools>(io.get_executor(), std::move(workflows));
  // Spans when the OTEL_* variables ask for them, as for `switchboard run`;
  // its destructor (after the session) ends what is open and flushes.
  host::process_tracing tracing(switchboard::telemetry::process_environment(), "switchboard");
  if (tracing.enabled()) tools->trace_with(tracing.observer());
  spdlog::info("switchboard mcp: serving {} workflow(s) on standard input and output",
               settings.workflow_files.size());
  mcp::server_info info{"switchboard", "0.1.0",
                        "Each tool runs a workflow. A run that pauses for a question or an approval returns its "
                        "run_id; the resume tool continues it."};
  mcp::serve_stdio(io, tools, std::move(info), {.in_fd = STDIN_FILENO, .out_fd = protocol_fd, .handle_signals = true, .limits = {}});
  spdlog::info("switchboard mcp: the client closed the session");
  return cli::exit_ok;
}

int run_mcp(std::span<const std::string> args) {
  const std::string usage = usage_of_mcp();
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << usage;
      return cli::exit_ok;
    }
  }
  try {
    const mcp_settings settings = read_arguments(args);
    if (settings.verbose) spdlog::set_level(spdlog::level::debug);
    const int protocol_fd = take_standard_output();
    return serve(settings, protocol_fd);
  } catch (const switchboard::models::model_error& e) {
    std::cerr << "switchboard mcp: " << cli::shown(e.what()) << "\n";
    return e.errc() == switchboard::models::model_errc::not_configured ? cli::exit_usage : cli::exit_failure;
  } catch (const std::exception& e) {
    const bool usage_mistake = cli::is_usage_mistake(e);
    std::cerr << "switchboard mcp: " << cli::shown(e.what()) << "\n" << (usage_mistake ? usage : std::string{});
    return usage_mistake ? cli::exit_usage : cli::exit_failure;
  }
}

const cli::command_registration registration{
    "mcp", "serve workflows as tools to an MCP client over standard input and output", &run_mcp};

}  // namespace
