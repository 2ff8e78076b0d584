// Loading what a workflow file names (see workflow_loader.hpp).
#include <switchboard/a2a/remote_agent.hpp>
#include <switchboard/host/workflow_loader.hpp>

#include <switchboard/host/error.hpp>

#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/agents/plugin_loader.hpp>
#include <switchboard/agents/prompt_library.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>

namespace switchboard::host {
namespace {

namespace fs = std::filesystem;

// The ':'-separated entries of an environment variable, made absolute.
std::vector<fs::path> path_list(const char* variable) {
  std::vector<fs::path> out;
  const char* value = std::getenv(variable);
  std::string_view rest = value ? value : "";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    if (const auto entry = rest.substr(0, colon); !entry.empty())
      out.push_back(fs::absolute(std::string(entry)).lexically_normal());
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
  }
  return out;
}

// Where the running program keeps the plugins installed with it.
fs::path own_plugin_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return (exe.parent_path() / SWITCHBOARD_PLUGIN_DIR_FROM_BIN).lexically_normal();
}

// A directory the workflow file names: relative to the file, and present.
fs::path named_directory(const fs::path& workflow_file, std::string_view key, std::size_t index,
                         const std::string& dir) {
  const fs::path p = fs::path(dir).is_absolute() ? fs::path(dir) : workflow_file.parent_path() / dir;
  std::error_code ec;
  if (!fs::is_directory(p, ec))
    throw host_error(host_errc::bad_workflow, workflow_file.string() + ": /" + std::string(key) + "/" +
                                                  std::to_string(index) + ": directory '" +
                                                  p.lexically_normal().string() + "' does not exist");
  return p.lexically_normal();
}

// A directory the settings name (`what`: "schema", "plugin search", ...).
void require_directory(const fs::path& dir, std::string_view what) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw host_error(host_errc::missing_path,
                     std::string(what) + " directory '" + dir.string() + "' does not exist");
}

// Directories in order, each once however often it was named (the
// workflow's own and the same one in the settings, say).
class directory_list {
 public:
  void add(const fs::path& dir) {
    std::error_code ec;
    const fs::path key = fs::weakly_canonical(dir, ec);
    if (seen_.insert(ec ? dir : key).second) dirs_.push_back(dir);
  }
  const std::vector<fs::path>& dirs() const noexcept { return dirs_; }

 private:
  std::set<fs::path> seen_;
  std::vector<fs::path> dirs_;
};

// The directories of one kind, in the order they apply: the workflow
// file's (under `key`), the settings' (`what`), the environment's.
std::vector<fs::path> directories(const std::vector<std::string>& named, const fs::path& workflow_file,
                                  std::string_view key, const std::vector<fs::path>& given, std::string_view what,
                                  const char* variable) {
  directory_list dirs;
  for (std::size_t i = 0; i < named.size(); ++i) dirs.add(named_directory(workflow_file, key, i, named[i]));
  for (const auto& dir : given) {
    require_directory(dir, what);
    dirs.add(dir);
  }
  for (const auto& dir : path_list(variable))
    if (fs::is_directory(dir)) dirs.add(dir);
  return dirs.dirs();
}

void load_schemas(protocol::schema_registry& schemas, const orchestrator::workflow_definition& definition,
                  const fs::path& workflow_file, const loader_settings& settings) {
  for (const auto& dir : directories(definition.schema_dirs, workflow_file, "schemas", settings.schema_dirs,
                                     "schema", "SWITCHBOARD_SCHEMA_PATH"))
    schemas.load_directory(dir);
}

// As agents::load_plugins reads a directory: "x.so" and versioned "x.so.1".
bool is_shared_library(const fs::path& p) {
  return p.extension() == ".so" || p.filename().string().find(".so.") != std::string::npos;
}

// Loads each plugin file once, whichever way it was reached.
class plugin_set {
 public:
  plugin_set(agents::agent_registry& registry, agents::tool_registry& tools, loaded_agents& out)
      : registry_(registry), tools_(tools), out_(out) {}

  void load(const fs::path& file, agents::plugin_host host) {
    std::error_code ec;
    const fs::path key = fs::weakly_canonical(file, ec);
    if (!loaded_.insert(ec ? file : key).second) return;
    auto loaded = agents::load_plugin(registry_, tools_, file, std::move(host));
    for (auto& notice : loaded.notices) out_.notices.push_back(std::move(notice));
  }

 private:
  agents::agent_registry& registry_;
  agents::tool_registry& tools_;
  loaded_agents& out_;
  std::set<fs::path> loaded_;
};

// Where plugins the workflow names are looked for, in order.
std::vector<fs::path> plugin_search_path(const fs::path& workflow_file, const loader_settings& settings,
                                         const std::vector<fs::path>& from_environment) {
  std::vector<fs::path> search;
  if (!workflow_file.empty()) search.push_back(workflow_file.parent_path());
  for (const auto& dir : settings.plugin_dirs) {
    require_directory(dir, "plugin search");
    search.push_back(dir);
  }
  for (const auto& entry : from_environment)
    if (fs::is_directory(entry)) search.push_back(entry);
  if (const auto own = own_plugin_dir(); !own.empty()) search.push_back(own);
  return search;
}

void load_plugins(plugin_set& plugins, const orchestrator::workflow_definition& definition,
                  const fs::path& workflow_file, const loader_settings& settings) {
  agents::plugin_host host;
  host.state_dir = settings.state_dir;
  host.model_configured = settings.model_configured;

  const auto from_environment = path_list("SWITCHBOARD_PLUGIN_PATH");
  const auto search = plugin_search_path(workflow_file, settings, from_environment);
  for (std::size_t i = 0; i < definition.plugins.size(); ++i) {
    const auto& reference = definition.plugins[i];
    // A reset is for the workflow's own plugins: a plugin that only happens
    // to be on the search path keeps its state.
    agents::plugin_host configured = host;
    configured.base_dir = workflow_file.parent_path();
    configured.config = reference.config;
    configured.reset_state = settings.reset_state;
    try {
      plugins.load(agents::find_plugin(reference.name, workflow_file.parent_path(), search), std::move(configured));
    } catch (const std::exception& e) {
      throw host_error(host_errc::bad_workflow,
                       workflow_file.string() + ": /plugins/" + std::to_string(i) + ": " + e.what());
    }
  }
  for (const auto& file : settings.plugins) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
      throw host_error(host_errc::missing_path, "plugin file '" + file.string() + "' does not exist");
    plugins.load(file, host);
  }
  for (const auto& entry : from_environment) {
    if (!fs::is_directory(entry)) {
      plugins.load(entry, host);
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(entry))
      if (f.is_regular_file() && is_shared_library(f.path())) files.push_back(f.path());
    std::ranges::sort(files);
    for (const auto& f : files) plugins.load(f, host);
  }
}

void load_prompts(agents::agent_registry& registry, const agents::tool_registry& tools,
                  const orchestrator::workflow_definition& definition, const fs::path& workflow_file,
                  const loader_settings& settings) {
  agents::prompt_library library;
  for (const auto& dir : directories(definition.prompt_dirs, workflow_file, "prompts", settings.prompt_dirs,
                                     "prompt", "SWITCHBOARD_PROMPT_PATH"))
    library.load_directory(dir);
  // A prompt naming a tool no plugin brought is refused, naming both.
  agents::register_prompt_agents(registry, library, {}, &tools);
}

// The file's MCP servers and the settings' (which win on a name), started
// and registered before the prompt files that name their tools.
void load_mcp_servers(loaded_agents& out, const orchestrator::workflow_definition& definition,
                      const fs::path& workflow_file, const loader_settings& settings) {
  struct origin_server {
    mcp::server_config config;
    bool from_file;
  };
  std::vector<origin_server> servers;
  for (const auto& s : definition.mcp_servers) servers.push_back({s, true});
  for (const auto& extra : settings.mcp_servers) {
    std::erase_if(servers, [&](const auto& s) { return s.config.name == extra.name; });
    servers.push_back({extra, false});
  }
  if (servers.empty()) return;
  out.mcp = std::make_unique<mcp::server_host>();
  for (const auto& server : servers) {
    try {
      for (auto& warning : out.mcp->connect_and_register(server.config, *out.tools))
        out.notices.push_back(std::move(warning));
    } catch (const mcp::mcp_error& e) {
      const std::string where = server.from_file ? workflow_file.string() + ": /mcp_servers/" + server.config.name
                                                 : "MCP server '" + server.config.name + "'";
      throw host_error(host_errc::mcp_server_failed, where + ": " + e.what());
    }
  }
}

// The file's remote A2A agents, registered under their names (their
// schemas must be loaded). Nothing is reached until a step calls one.
void load_a2a_agents(agents::agent_registry& registry, const orchestrator::workflow_definition& definition,
                     const fs::path& workflow_file) {
  for (const auto& config : definition.a2a_agents) {
    try {
      registry.add(std::make_shared<a2a::remote_agent>(config), "a2a:" + (config.card_url.empty() ? config.url : config.card_url));
    } catch (const std::exception& e) {
      throw host_error(host_errc::bad_workflow,
                       workflow_file.string() + ": /a2a_agents/" + config.name + ": " + e.what());
    }
  }
}

}  // namespace

loaded_agents load_agents(const orchestrator::workflow_definition& definition, const fs::path& workflow_file,
                          const loader_settings& settings) {
  loaded_agents out;
  out.tools = std::make_unique<agents::tool_registry>();
  out.registry = std::make_unique<agents::agent_registry>(std::make_shared<protocol::schema_registry>());
  load_schemas(out.registry->schemas(), definition, workflow_file, settings);
  plugin_set plugins(*out.registry, *out.tools, out);
  load_plugins(plugins, definition, workflow_file, settings);
  load_mcp_servers(out, definition, workflow_file, settings);
  load_prompts(*out.registry, *out.tools, definition, workflow_file, settings);
  load_a2a_agents(*out.registry, definition, workflow_file);
  return out;
}

}  // namespace switchboard::host
