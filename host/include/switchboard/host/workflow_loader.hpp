// Turning a workflow file into registered agents and tools: everything the
// file names is found relative to the file, then through the invoker's
// settings and the environment, in this order:
//
//   schemas  the file's "schemas" directories, settings.schema_dirs,
//            SWITCHBOARD_SCHEMA_PATH (':'-separated directories)
//   plugins  the file's "plugins" (a path, or a name looked up as NAME.so /
//            libNAME.so in the workflow's directory, settings.plugin_dirs,
//            the directories of SWITCHBOARD_PLUGIN_PATH, then the running
//            program's own ../lib/switchboard/plugins), settings.plugins, and
//            every entry of SWITCHBOARD_PLUGIN_PATH; a file reached twice
//            loads once
//   MCP      the file's "mcp_servers", then settings.mcp_servers (a name
//            given twice: the settings win); each server is started (or
//            reached), and its tools join the registry as "mcp:NAME/TOOL"
//            before the prompt files, which may name them
//   prompts  the file's "prompts" directories, settings.prompt_dirs,
//            SWITCHBOARD_PROMPT_PATH (':'-separated directories)
//
// The configuration comes from the invoker (the file and the settings),
// never from a stored run. Errors throw host_error: missing_path for a file
// or directory the settings name, bad_workflow naming the workflow file and
// the key for what the file names (a missing directory, a plugin that fails
// to load), mcp_server_failed naming the server (and the file when it names
// it); the agents' errors (an agent declared twice, a prompt naming an
// unknown tool, a plugin given in the settings that fails) with their own
// messages.
//
// Thread-safety: set-up code for one thread. Loading runs plugins' code and
// starts MCP servers' processes.
#pragma once

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/mcp/mcp_tool.hpp>
#include <switchboard/orchestrator/workflow.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace switchboard::host {

struct loader_settings {
  std::vector<std::filesystem::path> schema_dirs;  // JSON Schema directories
  std::vector<std::filesystem::path> plugins;      // plugin files loaded besides the workflow's
  std::vector<std::filesystem::path> plugin_dirs;  // where plugins the workflow names are looked for
  std::vector<std::filesystem::path> prompt_dirs;  // prompt file directories
  std::vector<mcp::server_config> mcp_servers;     // besides (or instead of, by name) the workflow's
  std::filesystem::path state_dir;                 // offered to plugins (plugin_host::state_dir)
  bool model_configured = false;                   // told to plugins (plugin_host::model_configured)
  // Told to the workflow's own plugins only (plugin_host::reset_state): a
  // one-time request of this invocation, which a resume does not repeat.
  bool reset_state = false;
};

// What was loaded. Move-only; the registries must outlive every hub and
// agent call that uses them.
struct loaded_agents {
  // Declared first, destroyed last: the MCP tools in `tools` use the
  // clients it runs (null when the workflow names no MCP server).
  std::unique_ptr<mcp::server_host> mcp;
  // Declared before `registry`, destroyed after it: the agents built from
  // prompt files point to it. Plugins' and MCP servers' tools; the prompt
  // files' "tools" must be in it.
  std::unique_ptr<agents::tool_registry> tools;
  std::unique_ptr<agents::agent_registry> registry;
  std::vector<std::string> notices;  // the plugins' and servers' notes for the user (untrusted text)
};

// The agents, tools and schemas `definition` (read from `workflow_file`)
// would use; with an empty `workflow_file` only the settings and the
// environment.
loaded_agents load_agents(const orchestrator::workflow_definition& definition,
                          const std::filesystem::path& workflow_file, const loader_settings& settings);

}  // namespace switchboard::host
