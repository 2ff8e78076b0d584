// switchboard agents — lists the agents a host would register: plugins
// (--plugin, SWITCHBOARD_PLUGIN_PATH) and prompt files (--prompts), with
// their output schema and origin.
#include "command.hpp"
#include "terminal_output.hpp"

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/agents/plugin_loader.hpp>
#include <switchboard/agents/prompt_library.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/json/array.hpp>

#include <algorithm>
#include <iostream>
#include <memory>

namespace {

namespace sb = switchboard;

constexpr const char* usage_text =
    "usage: switchboard agents [--plugin PATH]... [--prompts DIR]... [--schemas DIR]... [--json]\n"
    "\n"
    "Lists the registered agents with their output schema and origin.\n"
    "  --plugin PATH   load a plugin shared library (repeatable); SWITCHBOARD_PLUGIN_PATH\n"
    "                  (colon-separated files or directories) is loaded too\n"
    "  --prompts DIR   load the prompt files <name>.v<version>.json in DIR (repeatable)\n"
    "  --schemas DIR   load the JSON Schemas <name>@<version>.json the prompts declare\n"
    "  --json          print a JSON array instead of a table\n";

struct options {
  std::vector<std::string> plugins;
  std::vector<std::string> prompt_dirs;
  std::vector<std::string> schema_dirs;
  bool json = false;
};

// Returns false (after printing why) on a bad command line.
bool parse(std::span<const std::string> args, options& out) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::vector<std::string>& into) {
      if (i + 1 >= args.size()) {
        std::cerr << "switchboard agents: " << sb::cli::shown(a) << " needs a value\n\n" << usage_text;
        return false;
      }
      into.push_back(args[++i]);
      return true;
    };
    if (a == "--plugin") {
      if (!value(out.plugins)) return false;
    } else if (a == "--prompts") {
      if (!value(out.prompt_dirs)) return false;
    } else if (a == "--schemas") {
      if (!value(out.schema_dirs)) return false;
    } else if (a == "--json") {
      out.json = true;
    } else {
      std::cerr << "switchboard agents: unknown option '" << sb::cli::shown(a) << "'\n\n" << usage_text;
      return false;
    }
  }
  return true;
}

void print_table(const std::vector<sb::agents::agent_info>& infos) {
  if (infos.empty()) {
    std::cout << "no agents registered (give --plugin PATH or --prompts DIR)\n";
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

int run_agents(std::span<const std::string> args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << usage_text;
    return sb::cli::exit_ok;
  }
  options opts;
  if (!parse(args, opts)) return sb::cli::exit_usage;

  auto schemas = std::make_shared<sb::protocol::schema_registry>();
  for (const auto& dir : opts.schema_dirs) schemas->load_directory(dir);
  sb::agents::agent_registry registry(schemas);
  for (const auto& p : opts.plugins) sb::agents::load_plugin(registry, p);
  sb::agents::load_plugins_from_environment(registry);

  sb::agents::prompt_library library;
  for (const auto& dir : opts.prompt_dirs) library.load_directory(dir);
  try {
    sb::agents::register_prompt_agents(registry, library);
  } catch (const sb::agents::agent_error& e) {
    if (e.code() != sb::agents::agent_errc::unknown_output_schema) throw;
    std::cerr << "switchboard agents: " << sb::cli::shown(e.what())
              << "\n(load the schemas the prompt files declare with --schemas DIR)\n";
    return sb::cli::exit_failure;
  }

  const auto infos = registry.list();
  if (opts.json) {
    print_json(infos);
  } else {
    print_table(infos);
  }
  return sb::cli::exit_ok;
}

const sb::cli::command_registration registration{
    "agents", "list registered agents (plugins, prompt files) with schema and origin", &run_agents};

}  // namespace
