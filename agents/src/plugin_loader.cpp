// plugin_loader: dlopen, version check, init, then all-or-nothing
// registration with the library handle tied to every agent it provided.
#include <switchboard/agents/plugin_loader.hpp>

#include <switchboard/agents/plugin.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/json/serialize.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <set>

namespace switchboard::agents {

namespace {

using library_handle = std::shared_ptr<void>;

[[noreturn]] void fail(agent_errc code, const std::filesystem::path& file, const std::string& why) {
  throw agent_error(code, "plugin " + file.string() + ": " + why);
}

library_handle open_library(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) fail(agent_errc::plugin_load_failed, file, "no such file");
  if (std::filesystem::is_directory(file, ec)) {
    fail(agent_errc::plugin_load_failed, file, "is a directory, not a shared library");
  }
  ::dlerror();  // clear a stale message
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    fail(agent_errc::plugin_load_failed, file,
         std::string("dlopen failed: ") + (why ? why : "unknown reason"));
  }
  return library_handle(handle, [](void* h) { ::dlclose(h); });
}

template <class Fn>
Fn find_symbol(const library_handle& lib, const std::filesystem::path& file, const char* symbol) {
  ::dlerror();
  void* address = ::dlsym(lib.get(), symbol);
  if (address == nullptr) {
    fail(agent_errc::plugin_missing_entry, file,
         std::string("entry point '") + symbol +
             "' not found (was the plugin built with SWITCHBOARD_PLUGIN(...)?)");
  }
  return reinterpret_cast<Fn>(address);
}

// Names must be new to the registry and unique within the plugin, checked
// before anything is registered.
void check_agent_names(const agent_registry& registry, plugin_registrar& reg) {
  std::set<std::string, std::less<>> seen;
  for (const auto& a : reg.agents()) {
    if (!a) fail(agent_errc::plugin_init_failed, reg.file(), "registered a null agent");
    const std::string name(a->name());
    if (name.empty()) fail(agent_errc::plugin_init_failed, reg.file(), "registered an agent without a name");
    if (!seen.insert(name).second) {
      fail(agent_errc::plugin_init_failed, reg.file(), "registered agent '" + name + "' twice");
    }
    if (registry.find(name) != nullptr) {
      const auto infos = registry.list();
      const auto it = std::ranges::find(infos, name, &agent_info::name);
      fail(agent_errc::plugin_init_failed, reg.file(),
           "agent '" + name + "' is already registered (from " +
               (it != infos.end() ? it->origin : std::string("?")) + ")");
    }
  }
}

std::vector<std::string> register_schemas(agent_registry& registry, const plugin_registrar& reg) {
  std::vector<std::string> ids;
  auto& schemas = registry.schemas();
  for (const auto& entry : reg.schemas()) {
    const auto id = protocol::schema_id::parse(entry.id);
    if (!id || id->version == 0) {
      fail(agent_errc::plugin_init_failed, reg.file(),
           "schema id '" + entry.id + "' is not of the form name@version");
    }
    if (const auto existing = schemas.find(id->to_string())) {
      if (existing->json() != entry.schema) {
        fail(agent_errc::plugin_init_failed, reg.file(),
             "schema " + entry.id + " is already registered with different content");
      }
    } else {
      try {
        schemas.add(*id, entry.schema, "plugin:" + reg.file().string());
      } catch (const std::exception& e) {
        fail(agent_errc::plugin_init_failed, reg.file(), std::string("schema ") + entry.id + ": " + e.what());
      }
    }
    ids.push_back(id->to_string());
  }
  return ids;
}

// Tool names must be valid, unique within the plugin and new to the
// registry, and their schemas must compile: checked by registering them in
// a scratch registry first, so a bad tool fails the plugin before anything
// is registered.
void check_tools(const tool_registry* tools, plugin_registrar& reg) {
  if (reg.tools().empty()) return;
  if (tools == nullptr) {
    fail(agent_errc::plugin_init_failed, reg.file(),
         "registers tools, but this host loads plugins without a tool registry");
  }
  tool_registry scratch;
  for (const auto& t : reg.tools()) {
    try {
      scratch.add(t, "plugin:" + reg.file().string());
    } catch (const std::exception& e) {
      fail(agent_errc::plugin_init_failed, reg.file(), e.what());
    }
    const std::string name(t->name());
    if (tools->contains(name)) {
      const auto infos = tools->list();
      const auto it = std::ranges::find(infos, name, &tool_info::name);
      fail(agent_errc::plugin_init_failed, reg.file(),
           "tool '" + name + "' is already registered (from " +
               (it != infos.end() ? it->origin : std::string("?")) + ")");
    }
  }
}

// An agent or tool whose last owner also releases the library, after the
// object's own (plugin-side) destructor has run.
template <class T>
std::shared_ptr<T> tie_to_library(std::shared_ptr<T> object, library_handle lib) {
  T* raw = object.get();
  return std::shared_ptr<T>(raw, [keep = std::move(object), lib = std::move(lib)](T*) mutable {
    keep.reset();
    lib.reset();
  });
}

bool is_shared_library(const std::filesystem::path& p) {
  const auto name = p.filename().string();
  return p.extension() == ".so" || name.find(".so.") != std::string::npos;
}

}  // namespace

plugin_registrar::plugin_registrar(std::filesystem::path file, plugin_host host)
    : file_(std::move(file)), host_(std::move(host)) {}

void plugin_registrar::add(std::shared_ptr<agent> a) { agents_.push_back(std::move(a)); }

void plugin_registrar::add_tool(std::shared_ptr<tool> t) { tools_.push_back(std::move(t)); }

void plugin_registrar::add_schema(std::string_view id, const boost::json::value& schema) {
  schemas_.push_back({std::string(id), schema});
}

void plugin_registrar::notice(std::string text) { notices_.push_back(std::move(text)); }

void plugin_registrar::fail(std::string message) {
  if (!failure_.empty()) failure_ += "; ";
  failure_ += message;
}

namespace {

loaded_plugin load_plugin_into(agent_registry& registry, tool_registry* tools, const std::filesystem::path& file,
                               plugin_host host) {
  // Declared first so it outlives the registrar and the agents it holds.
  library_handle lib = open_library(file);
  const auto abi = find_symbol<switchboard_plugin_abi_version_fn>(lib, file, plugin_abi_version_symbol);
  const auto init = find_symbol<switchboard_plugin_init_fn>(lib, file, plugin_init_symbol);

  const int plugin_abi = abi();
  if (plugin_abi != plugin_abi_version) {
    fail(agent_errc::plugin_abi_mismatch, file,
         "built against plugin ABI version " + std::to_string(plugin_abi) + ", this host speaks " +
             std::to_string(plugin_abi_version) + "; rebuild it against this Switchboard");
  }
  host.schemas = registry.schemas_ptr();
  plugin_registrar reg(file, std::move(host));
  const int rc = init(reg.c_handle(), plugin_abi_version);
  if (rc == plugin_init_abi_mismatch) {
    fail(agent_errc::plugin_abi_mismatch, file,
         "its init refused host plugin ABI version " + std::to_string(plugin_abi_version));
  }
  if (rc != plugin_init_ok) {
    fail(agent_errc::plugin_init_failed, file,
         "init failed (code " + std::to_string(rc) + ")" +
             (reg.failure().empty() ? std::string() : ": " + reg.failure()));
  }
  check_agent_names(registry, reg);
  check_tools(tools, reg);

  loaded_plugin out;
  out.file = file;
  out.notices = reg.notices();
  out.schemas = register_schemas(registry, reg);
  for (auto& a : reg.agents()) {
    out.agents.emplace_back(a->name());
    registry.add(tie_to_library(std::move(a), lib), "plugin:" + file.string());
  }
  reg.agents().clear();
  for (auto& t : reg.tools()) {
    out.tools.emplace_back(t->name());
    tools->add(tie_to_library(std::move(t), lib), "plugin:" + file.string());
  }
  reg.tools().clear();
  return out;
}

}  // namespace

loaded_plugin load_plugin(agent_registry& registry, const std::filesystem::path& file, plugin_host host) {
  return load_plugin_into(registry, nullptr, file, std::move(host));
}

loaded_plugin load_plugin(agent_registry& registry, tool_registry& tools, const std::filesystem::path& file,
                          plugin_host host) {
  return load_plugin_into(registry, &tools, file, std::move(host));
}

std::filesystem::path find_plugin(std::string_view reference, const std::filesystem::path& base_dir,
                                  const std::vector<std::filesystem::path>& search_dirs) {
  const std::filesystem::path given{std::string(reference)};
  if (reference.empty()) throw agent_error(agent_errc::plugin_load_failed, "plugin reference is empty");
  if (reference.find('/') != std::string_view::npos || is_shared_library(given)) {
    return given.is_absolute() || base_dir.empty() ? given : base_dir / given;
  }
  std::string looked;
  for (const auto& dir : search_dirs) {
    for (const std::string& file : {given.string() + ".so", "lib" + given.string() + ".so"}) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(dir / file, ec)) return dir / file;
    }
    looked += (looked.empty() ? "" : ", ") + dir.string();
  }
  throw agent_error(agent_errc::plugin_load_failed,
                    "plugin '" + std::string(reference) + "' not found as " + given.string() + ".so or lib" +
                        given.string() + ".so in " + (looked.empty() ? std::string("no directory") : looked) +
                        " (add a directory with --plugin-path or SWITCHBOARD_PLUGIN_PATH, or name a file)");
}

std::vector<loaded_plugin> load_plugins(agent_registry& registry, std::string_view path_list) {
  std::vector<loaded_plugin> out;
  while (!path_list.empty()) {
    const auto colon = path_list.find(':');
    const std::filesystem::path entry(std::string(path_list.substr(0, colon)));
    path_list = colon == std::string_view::npos ? std::string_view{} : path_list.substr(colon + 1);
    if (entry.empty()) continue;
    std::error_code ec;
    if (std::filesystem::is_directory(entry, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& f : std::filesystem::directory_iterator(entry)) {
        if (f.is_regular_file() && is_shared_library(f.path())) files.push_back(f.path());
      }
      std::ranges::sort(files);
      for (const auto& f : files) out.push_back(load_plugin(registry, f));
    } else {
      out.push_back(load_plugin(registry, entry));
    }
  }
  return out;
}

std::vector<loaded_plugin> load_plugins_from_environment(agent_registry& registry) {
  const char* value = std::getenv("SWITCHBOARD_PLUGIN_PATH");
  if (value == nullptr) return {};
  return load_plugins(registry, value);
}

}  // namespace switchboard::agents
