// switchboard agents — lists the agents a workflow would use (what its file
// names, plus the command line and the environment:
// switchboard/host/workflow_loader.hpp), or
// without a workflow the agents of the plugins and prompt files given, with
// their output schema and origin.
#include "command.hpp"
#include "terminal_output.hpp"
#include "loader_arguments.hpp"

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/host/model_options.hpp>
#include <switchboard/orchestrator/workflow_file.hpp>

#include <boost/json/array.hpp>

#include <algorithm>
#include <iostream>
#include <memory>

namespace {

namespace sb = switchboard;
namespace fs = std::filesystem;

constexpr std::string_view usage_text =
    "usage: switchboard agents [WORKFLOW] [options]\n"
    "\n"
    "Lists the agents WORKFLOW would use (from what its file names, the options and the\n"
    "environment), or without WORKFLOW the agents of the plugins and prompt files given, with\n"
    "their output schema and origin.\n";

std::string usage() {
  return std::string(usage_text) + std::string(sb::cli::loader_options_usage) +
         "  --json                print a JSON array instead of a table\n";
}

struct options {
  fs::path workflow;
  sb::host::loader_settings loader;
  bool json = false;
};

options parse(std::span<const std::string> args) {
  options out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (sb::cli::take_loader_option(args, i, out.loader)) continue;
    if (a == "--json") out.json = true;
    else if (a.starts_with("-")) throw sb::cli::usage_error("unknown option '" + a + "'");
    else if (out.workflow.empty()) out.workflow = fs::absolute(a).lexically_normal();
    else throw sb::cli::usage_error("unexpected argument '" + a + "'");
  }
  return out;
}

void print_table(const std::vector<sb::agents::agent_info>& infos) {
  if (infos.empty()) {
    std::cout << "no agents: name a workflow file (switchboard agents WORKFLOW), or give --plugin FILE "
                 "or --prompts DIR\n";
    return;
  }
  // Names, schemas and descriptions come from plugins and prompt files:
  // escaped before the columns are measured.
  std::vector<sb::agents::agent_info> rows;
  std::size_t name_w = 5, schema_w = 6;
  for (const auto& i : infos) {
    rows.push_back({.name = sb::cli::shown(i.name),
                    .description = sb::cli::shown(i.description),
                    .output_schema = sb::cli::shown(i.output_schema),
                    .origin = sb::cli::shown(i.origin)});
    name_w = std::max(name_w, rows.back().name.size());
    schema_w = std::max(schema_w, rows.back().output_schema.size());
  }
  auto pad = [](const std::string& s, std::size_t w) { return s + std::string(w - s.size() + 2, ' '); };
  std::cout << pad("AGENT", name_w) << pad("SCHEMA", schema_w) << "ORIGIN\n";
  for (const auto& r : rows) {
    std::cout << pad(r.name, name_w) << pad(r.output_schema, schema_w) << r.origin << "\n"
              << "  " << r.description << "\n";
  }
}

void print_json(const std::vector<sb::agents::agent_info>& infos) {
  boost::json::array out;
  for (const auto& i : infos) {
    out.push_back({{"name", i.name},
                   {"description", i.description},
                   {"output_schema", i.output_schema},
                   {"origin", i.origin}});
  }
  sb::cli::print_json(std::cout, out);
}

int list_agents(const options& opts) {
  sb::orchestrator::workflow_definition definition;
  if (!opts.workflow.empty()) {
    if (!fs::is_regular_file(opts.workflow))
      throw sb::cli::usage_error("workflow file '" + opts.workflow.string() + "' does not exist");
    definition = sb::orchestrator::load_workflow_file(opts.workflow);
  }
  // As `run` would with this environment: a plugin may offer other agents
  // when a model is configured.
  sb::host::loader_settings loader = opts.loader;
  loader.model_configured = sb::host::configured({});
  const auto loaded = sb::host::load_agents(definition, opts.workflow, loader);
  const auto infos = loaded.registry->list();
  if (opts.json) {
    print_json(infos);
  } else {
    for (const auto& notice : loaded.notices) std::cout << sb::cli::shown(notice) << "\n";
    print_table(infos);
  }
  return sb::cli::exit_ok;
}

int run_agents(std::span<const std::string> args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << usage();
    return sb::cli::exit_ok;
  }
  try {
    return list_agents(parse(args));
  } catch (const std::exception& e) {
    const bool usage_mistake = sb::cli::is_usage_mistake(e);
    std::cerr << "switchboard agents: " << sb::cli::shown(e.what()) << "\n" << (usage_mistake ? "\n" + usage() : "");
    return usage_mistake ? sb::cli::exit_usage : sb::cli::exit_failure;
  }
}

const sb::cli::command_registration registration{
    "agents", "list the agents a workflow uses (plugins, prompt files) with schema and origin", &run_agents};

}  // namespace
