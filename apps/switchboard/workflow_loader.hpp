// How `switchboard run`, `resume` and `agents` turn a workflow file into
// registered agents: everything the file names is found relative to the
// file, then through the command line and the environment, in this order:
//
//   schemas  the file's "schemas" directories, --schemas DIR...,
//            SWITCHBOARD_SCHEMA_PATH (':'-separated directories)
//   plugins  the file's "plugins" (a path, or a name looked up as NAME.so /
//            libNAME.so in the workflow's directory, --plugin-path DIR...,
//            the directories of SWITCHBOARD_PLUGIN_PATH, then the tool's own
//            lib/switchboard/plugins), --plugin FILE..., and every entry of
//            SWITCHBOARD_PLUGIN_PATH; a file reached twice loads once
//   prompts  the file's "prompts" directories, --prompts DIR...,
//            SWITCHBOARD_PROMPT_PATH (':'-separated directories)
//   MCP      the file's "mcp_servers", then --mcp NAME=SPEC... (a name given
//            twice: the command line wins); each server is started (or
//            reached), and its tools join the registry as "mcp:NAME/TOOL"
//            before the prompt files, which may name them
//
// The configuration comes from the invoker (the file and the command line),
// never from a stored run. Errors throw: usage_error for a missing file or
// directory the command line names, std::runtime_error naming the workflow
// file for what the file names, and the agents/orchestrator errors (a
// plugin that fails, an agent declared twice) with their own messages.
//
// Thread-safety: set-up code for one thread.
#pragma once

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/mcp/mcp_tool.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/orchestrator/workflow.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace switchboard::cli {

struct loader_settings {
  std::vector<std::filesystem::path> schema_dirs;  // --schemas
  std::vector<std::filesystem::path> plugins;      // --plugin
  std::vector<std::filesystem::path> plugin_dirs;  // --plugin-path
  std::vector<std::filesystem::path> prompt_dirs;  // --prompts
  std::filesystem::path state_dir;                 // offered to plugins
  bool model_configured = false;
  bool reset_state = false;                        // --reset: for the workflow's own plugins
  std::vector<mcp::server_config> mcp_servers;  // --mcp NAME=SPEC
};

struct loaded_agents {
  // Declared first, destroyed last: the MCP tools in `tools` use the
  // clients it runs (null when the workflow names no MCP server).
  std::unique_ptr<mcp::server_host> mcp;
  // Declared first, destroyed last: the agents built from prompt files
  // point to it. Plugins' tools; the prompt files' "tools" must be in it.
  std::unique_ptr<agents::tool_registry> tools;
  std::unique_ptr<agents::agent_registry> registry;
  std::vector<std::string> notices;  // the plugins' notes for the user (untrusted)
};

// The agents and schemas `definition` (read from `workflow_file`) would use;
// with an empty `workflow_file` only the command line and the environment.
loaded_agents load_agents(const orchestrator::workflow_definition& definition,
                          const std::filesystem::path& workflow_file, const loader_settings& settings);

// Options shared by the commands that load agents: --schemas, --plugin,
// --plugin-path, --prompts, --mcp. False when args[i] is none of them; throws
// usage_error when its value is missing.
bool take_loader_option(std::span<const std::string> args, std::size_t& i, loader_settings& settings);

// --mcp's value NAME=SPEC as a server configuration; usage_error when it
// is not one.
mcp::server_config parse_mcp_option(const std::string& value);

// The usage lines of those options.
inline constexpr std::string_view loader_options_usage =
    "  --schemas DIR         JSON Schemas <name>@<version>.json (repeatable; also SWITCHBOARD_SCHEMA_PATH)\n"
    "  --plugin FILE         a plugin shared library (repeatable; also SWITCHBOARD_PLUGIN_PATH)\n"
    "  --plugin-path DIR     where plugins named in a workflow file are looked for (repeatable)\n"
    "  --prompts DIR         prompt files <name>.v<version>.json (repeatable; also SWITCHBOARD_PROMPT_PATH)\n"
    "  --mcp NAME=SPEC       an MCP server's tools as mcp:NAME/TOOL; SPEC is stdio:COMMAND ARG... or an\n"
    "                        http(s):// URL (repeatable; see docs/mcp.md)\n";

}  // namespace switchboard::cli
