// plugin.hpp: what a plugin author includes to ship agents in a shared
// library that a Switchboard host loads at run time (see
// docs/writing-a-plugin.md and examples/plugin/).
//
//   #include <switchboard/agents/plugin.hpp>
//
//   SWITCHBOARD_PLUGIN(registrar) {
//     registrar.add_schema("text_stats.output@1", my_schema_json);
//     registrar.add(std::make_shared<text_stats_agent>());
//     registrar.add_tool(std::make_shared<word_count_tool>());   (optional)
//   }
//
// The macro defines the two C entry points the loader looks for:
//
//   extern "C" int switchboard_plugin_abi_version(void);
//   extern "C" int switchboard_plugin_init(switchboard_plugin_registrar*, int host_abi_version);
//
// C linkage keeps the symbol names stable across compilers; the ABI version
// guards the C++ types behind them (agent, envelope, ...). The loader reads
// switchboard_plugin_abi_version() first and refuses a plugin built against
// another version before running any of its code; switchboard_plugin_init
// checks the host's version again and returns plugin_init_abi_mismatch if
// it differs. An exception thrown by the registration function is caught
// in the plugin and reported through the registrar, so no exception crosses
// the C boundary.
//
// Host and plugin must link the same switchboard_agents shared library
// (SWITCHBOARD_SHARED=ON, the default).
//
// Thread-safety: a registrar is used by one plugin's init on the loading
// thread only.
#pragma once

#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/tool.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

// Bump when a type a plugin sees changes incompatibly.
// 2: agent::blocks_thread() (a new virtual function), agent_context::raw_text.
// 3: plugin_registrar::host() and notice(), agent_context::workflow_id;
//    plugin_registrar::add_tool() and the tool interface (tool.hpp).
// 4: agent_context::traces, tool_context::trace, chat_request's tracing
//    members (a plugin that builds an agent_context must forward traces).
#define SWITCHBOARD_PLUGIN_ABI_VERSION 4

#if defined(_WIN32)
#define SWITCHBOARD_PLUGIN_EXPORT __declspec(dllexport)
#else
#define SWITCHBOARD_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

extern "C" {
// Opaque handle the host passes to switchboard_plugin_init.
typedef struct switchboard_plugin_registrar switchboard_plugin_registrar;
typedef int (*switchboard_plugin_init_fn)(switchboard_plugin_registrar*, int);
typedef int (*switchboard_plugin_abi_version_fn)(void);
}

namespace switchboard::agents {

inline constexpr int plugin_abi_version = SWITCHBOARD_PLUGIN_ABI_VERSION;
inline constexpr const char* plugin_init_symbol = "switchboard_plugin_init";
inline constexpr const char* plugin_abi_version_symbol = "switchboard_plugin_abi_version";

// Return codes of switchboard_plugin_init.
inline constexpr int plugin_init_ok = 0;
inline constexpr int plugin_init_failed = 1;
inline constexpr int plugin_init_abi_mismatch = 2;

// What the host tells a plugin when it loads it: the invoker's
// configuration (a workflow file, a command line), never stored run state.
struct plugin_host {
  // Relative paths in `config` are relative to this directory (the
  // workflow file's); empty: the current directory.
  std::filesystem::path base_dir;
  // The plugin's configuration as the workflow file gives it
  // ("plugins": [{"name": ..., "config": {...}}]); empty when none.
  boost::json::object config;
  // A private directory (0700) where the plugin may keep state between
  // runs, such as a database; empty when the host offers none.
  std::filesystem::path state_dir;
  // The host runs with a model (agent_context::models has a "default"):
  // a plugin may then offer LLM-backed agents instead of rule-based ones.
  bool model_configured = false;
  // The invoker asked to restore the plugin's state to its seed
  // (`switchboard run --reset`).
  bool reset_state = false;
  // The host's schema registry, holding the schemas loaded before the
  // plugin (a workflow's "schemas" directories); never null when loaded by
  // the loader. For agents that need a registry, such as llm_agent.
  std::shared_ptr<protocol::schema_registry> schemas;
};

// What a plugin's registration function receives. It collects agents, tools
// and schemas; the loader adds them to the host's registries only when the
// whole init succeeded, so a failing plugin registers nothing.
class plugin_registrar {
 public:
  explicit plugin_registrar(std::filesystem::path file, plugin_host host = {});

  // An agent to register. Its name must be unique in the host's registry.
  void add(std::shared_ptr<agent> a);
  // A tool to register (tool.hpp). Its name must be unique in the host's
  // tool registry and its parameters schema must compile. A host that loads
  // without a tool registry refuses a plugin that brings tools.
  void add_tool(std::shared_ptr<tool> t);
  // A JSON Schema the plugin's agents declare ("text_stats.output@1"). If
  // the host already has this id with the same schema it is reused.
  void add_schema(std::string_view id, const boost::json::value& schema);
  // Reports why init failed (the macro calls it for exceptions).
  void fail(std::string message);
  // A one-line note for the user about how the plugin is set up ("offline:
  // rule-based parser"); a host shows it before a run.
  void notice(std::string text);

  const std::filesystem::path& file() const noexcept { return file_; }
  const plugin_host& host() const noexcept { return host_; }

  // For the loader.
  struct schema_entry {
    std::string id;
    boost::json::value schema;
  };
  std::vector<std::shared_ptr<agent>>& agents() noexcept { return agents_; }
  std::vector<std::shared_ptr<tool>>& tools() noexcept { return tools_; }
  const std::vector<schema_entry>& schemas() const noexcept { return schemas_; }
  const std::string& failure() const noexcept { return failure_; }
  const std::vector<std::string>& notices() const noexcept { return notices_; }

  switchboard_plugin_registrar* c_handle() noexcept {
    return reinterpret_cast<switchboard_plugin_registrar*>(this);
  }
  static plugin_registrar& from_c_handle(switchboard_plugin_registrar* handle) noexcept {
    return *reinterpret_cast<plugin_registrar*>(handle);
  }

 private:
  std::filesystem::path file_;
  plugin_host host_;
  std::vector<std::string> notices_;
  std::vector<std::shared_ptr<agent>> agents_;
  std::vector<std::shared_ptr<tool>> tools_;
  std::vector<schema_entry> schemas_;
  std::string failure_;
};

namespace detail {

// Body of the generated switchboard_plugin_init: checks the host's ABI
// version and keeps exceptions on the plugin's side of the C boundary.
inline int run_plugin_init(switchboard_plugin_registrar* handle, int host_abi_version,
                           void (*register_fn)(plugin_registrar&)) noexcept {
  if (host_abi_version != SWITCHBOARD_PLUGIN_ABI_VERSION) return plugin_init_abi_mismatch;
  if (handle == nullptr) return plugin_init_failed;
  plugin_registrar& registrar = plugin_registrar::from_c_handle(handle);
  try {
    register_fn(registrar);
    return registrar.failure().empty() ? plugin_init_ok : plugin_init_failed;
  } catch (const std::exception& e) {
    try {
      registrar.fail(e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      registrar.fail("unknown exception");
    } catch (...) {
    }
  }
  return plugin_init_failed;
}

}  // namespace detail
}  // namespace switchboard::agents

// Defines the plugin's entry points around a registration function body:
//   SWITCHBOARD_PLUGIN(registrar) { registrar.add(...); }
#define SWITCHBOARD_PLUGIN(registrar_name)                                                      \
  static void switchboard_plugin_register(::switchboard::agents::plugin_registrar&);          \
  extern "C" SWITCHBOARD_PLUGIN_EXPORT int switchboard_plugin_abi_version(void) {             \
    return SWITCHBOARD_PLUGIN_ABI_VERSION;                                                     \
  }                                                                                            \
  extern "C" SWITCHBOARD_PLUGIN_EXPORT int switchboard_plugin_init(                            \
      switchboard_plugin_registrar* handle, int host_abi_version) {                            \
    return ::switchboard::agents::detail::run_plugin_init(handle, host_abi_version,            \
                                                          &switchboard_plugin_register);       \
  }                                                                                            \
  static void switchboard_plugin_register(::switchboard::agents::plugin_registrar& registrar_name)
