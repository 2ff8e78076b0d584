// plugin_loader: loads plugins (shared libraries built with
// SWITCHBOARD_PLUGIN, see plugin.hpp) into an agent registry.
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
//                         or registering its schemas/agents failed (e.g. a duplicate name)
// A plugin registers all its agents or none.
//
// Lifetime: the library stays loaded as long as any of its agents lives
// (each registered agent holds a reference to the library handle), so
// agents may outlive the loader and no agent code is unloaded under a
// running coroutine.
//
// Thread-safety: loading is for set-up time; it registers into the
// registries under their own locks.
#pragma once

#include <switchboard/agents/agent_registry.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {

struct loaded_plugin {
  std::filesystem::path file;
  std::vector<std::string> agents;   // names registered, in registration order
  std::vector<std::string> schemas;  // schema ids it brought (registered or reused)
};

// Loads one plugin file and registers its schemas and agents with origin
// "plugin:<file>".
loaded_plugin load_plugin(agent_registry& registry, const std::filesystem::path& file);

// Loads every entry of a colon-separated list (files or directories);
// empty entries are skipped. A directory entry with no *.so loads nothing.
std::vector<loaded_plugin> load_plugins(agent_registry& registry, std::string_view path_list);

// load_plugins(registry, $SWITCHBOARD_PLUGIN_PATH); nothing when unset.
std::vector<loaded_plugin> load_plugins_from_environment(agent_registry& registry);

}  // namespace switchboard::agents
