// plugin_loader: loads plugins (shared libraries built with
// SWITCHBOARD_PLUGIN, see plugin.hpp) into an agent registry and, for
// plugins that bring tools, a tool registry.
//
// Sources: explicit paths (command line, a workflow file: the caller
// resolves relative paths), and SWITCHBOARD_PLUGIN_PATH, a colon-separated
// list of plugin files and directories (every *.so directly inside a
// directory, in name order).
//
// Each failure throws agent_error naming the file and the cause:
//   plugin_load_failed    the path does not exist, or dlopen failed (dlerror's text)
//   plugin_missing_entry  switchboard_plugin_init or switchboard_plugin_abi_version is absent
//   plugin_abi_mismatch   built against another plugin ABI version (both numbers named)
//   plugin_init_failed    the plugin's registration threw or reported failure,
//                         or registering its schemas/agents/tools failed (a duplicate
//                         or invalid name, a tool schema that does not compile), or it
//                         brings tools and the host passed no tool registry
// A plugin registers all its agents and tools or none: every name and tool
// schema is checked before anything is registered.
//
// Lifetime: the library stays loaded as long as any of its agents or tools
// lives (each registered one holds a reference to the library handle), so
// they may outlive the loader and no plugin code is unloaded under a
// running coroutine.
//
// Thread-safety: loading is for set-up time; it registers into the
// registries under their own locks.
#pragma once

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/plugin.hpp>
#include <switchboard/agents/tool_registry.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {

struct loaded_plugin {
  std::filesystem::path file;
  std::vector<std::string> agents;   // names registered, in registration order
  std::vector<std::string> tools;    // tool names registered, in registration order
  std::vector<std::string> schemas;  // schema ids it brought (registered or reused)
  std::vector<std::string> notices;  // what the plugin asked the host to show (untrusted text)
};

// Loads one plugin file and registers its schemas and agents with origin
// "plugin:<file>". `host` is what the plugin sees as registrar.host(); its
// `schemas` is set to the registry's.
loaded_plugin load_plugin(agent_registry& registry, const std::filesystem::path& file,
                          plugin_host host = {});
// As above, registering the plugin's tools into `tools` with the same origin.
loaded_plugin load_plugin(agent_registry& registry, tool_registry& tools, const std::filesystem::path& file,
                          plugin_host host = {});

// Finds the plugin a workflow file names. A reference with a '/' or ending
// in ".so" is a path (relative ones against `base_dir`); any other is a
// name, looked up as <name>.so, then lib<name>.so, in each of `search_dirs`
// in order. Throws agent_error(plugin_load_failed) naming the reference and
// every place looked at when nothing is found.
std::filesystem::path find_plugin(std::string_view reference, const std::filesystem::path& base_dir,
                                  const std::vector<std::filesystem::path>& search_dirs);

// Loads every entry of a colon-separated list (files or directories);
// empty entries are skipped. A directory entry with no *.so loads nothing.
std::vector<loaded_plugin> load_plugins(agent_registry& registry, std::string_view path_list);

// load_plugins(registry, $SWITCHBOARD_PLUGIN_PATH); nothing when unset.
std::vector<loaded_plugin> load_plugins_from_environment(agent_registry& registry);

}  // namespace switchboard::agents
