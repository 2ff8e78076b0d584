// schema_registry: name@version → compiled schema, loaded from files or code.
#include <switchboard/protocol/schema_registry.hpp>

#include <switchboard/protocol/limits.hpp>

#include <switchboard/protocol/error.hpp>
#include "detail/declared_checks.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <sstream>

namespace switchboard::protocol {

namespace json = boost::json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// schema_id

namespace {

bool valid_name(std::string_view name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

boost::system::result<schema_id> schema_id::parse(std::string_view text) {
  const auto at = text.find('@');
  schema_id id;
  id.name = std::string(text.substr(0, at));
  if (!valid_name(id.name)) return errc::invalid_schema_id;
  if (at == std::string_view::npos) return id;
  const std::string_view version = text.substr(at + 1);
  const auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), id.version);
  if (version.empty() || ec != std::errc{} || end != version.data() + version.size() ||
      id.version <= 0) {
    return errc::invalid_schema_id;
  }
  return id;
}

std::string schema_id::to_string() const {
  return version > 0 ? name + "@" + std::to_string(version) : name;
}

// ---------------------------------------------------------------------------
// Envelope composition

namespace {

// Local references inside the data schema ("#/definitions/x", "#") point at
// its own root; once it sits at /properties/data they must point there.
void rebase_local_refs(json::value& node) {
  if (auto* obj = node.if_object()) {
    for (auto& [key, child] : *obj) {
      if (key == "$ref" && child.is_string() && child.get_string().starts_with("#")) {
        std::string ref(child.get_string());
        child = "#/properties/data" + ref.substr(1);
      } else {
        rebase_local_refs(child);
      }
    }
  } else if (auto* arr = node.if_array()) {
    for (auto& child : *arr) rebase_local_refs(child);
  }
}

json::value embeddable_data_schema(const json::value& data_schema) {
  json::value copy = data_schema;
  rebase_local_refs(copy);
  if (auto* obj = copy.if_object()) {
    // Its identity would change the base URI inside the envelope schema.
    obj->erase("$id");
    obj->erase("$schema");
  }
  return copy;
}

}  // namespace

json::value compose_envelope_schema(const json::value& data_schema) {
  return json::object{
      {"$schema", "http://json-schema.org/draft-07/schema#"},
      {"type", "object"},
      {"properties",
       json::object{
           {"data", embeddable_data_schema(data_schema)},
           {"explanation",
            json::object{{"type", "string"},
                         {"minLength", 1},
                         {"description", "One or two sentences a user can read."}}},
           {"confidence",
            json::object{{"type", "number"},
                         {"minimum", 0},
                         {"maximum", 1},
                         {"description", "How sure the agent is, from 0 to 1."}}},
           {"reasoning",
            json::object{{"type", "string"},
                         {"minLength", 1},
                         {"description", "Why the agent concluded this."}}},
       }},
      {"required", json::array{"data", "explanation", "confidence", "reasoning"}},
      {"additionalProperties", false},
  };
}

namespace {

// Makes a data-schema invariant work on the envelope: it sees /data and its
// errors carry the /data prefix.
invariant_check on_envelope_data(invariant_check check) {
  return [check = std::move(check)](const json::value& envelope) -> std::optional<validation_error> {
    const auto* obj = envelope.if_object();
    const auto* data = obj ? obj->if_contains("data") : nullptr;
    if (!data) return std::nullopt;  // the schema already reported it
    auto error = check(*data);
    if (error) error->path = "/data" + error->path;
    return error;
  };
}

std::string read_file_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw protocol_error(errc::unparsable_schema,
                         "schema file '" + file.string() + "' cannot be opened");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

// ---------------------------------------------------------------------------
// schema_registry

struct schema_registry::impl {
  struct entry {
    compiled_schema base;  // without invariants
    std::vector<std::pair<std::string, invariant_check>> invariants;
    std::string source;
    compiled_schema with_invariants() const {
      compiled_schema out = base;
      for (const auto& [name, check] : invariants) out = out.with_invariant(name, check);
      return out;
    }
  };

  mutable std::shared_mutex mutex;
  // name → version → entry; std::map keeps versions ordered, newest last.
  std::map<std::string, std::map<int, entry>, std::less<>> schemas;

  mutable std::mutex envelope_mutex;
  mutable std::map<std::string, compiled_schema> envelope_cache;  // by "name@version"

  // Caller holds `mutex` (shared at least).
  const entry* lookup(const schema_id& id) const {
    const auto by_name = schemas.find(id.name);
    if (by_name == schemas.end() || by_name->second.empty()) return nullptr;
    if (id.version == 0) return &by_name->second.rbegin()->second;
    const auto it = by_name->second.find(id.version);
    return it == by_name->second.end() ? nullptr : &it->second;
  }

  std::string known_versions(const std::string& name) const {
    const auto by_name = schemas.find(name);
    if (by_name == schemas.end()) return "no schema of that name is registered";
    std::string out = "registered versions:";
    for (const auto& [version, e] : by_name->second) out += " " + name + "@" + std::to_string(version);
    return out;
  }

  schema_id resolve(std::string_view name_or_id) const {
    auto parsed = schema_id::parse(name_or_id);
    if (!parsed) {
      throw protocol_error(errc::invalid_schema_id,
                           "'" + std::string(name_or_id) +
                               "' is not a schema id (expected name or name@version)");
    }
    return *parsed;
  }
};

schema_registry::schema_registry() : impl_(std::make_unique<impl>()) {}
schema_registry::~schema_registry() = default;

compiled_schema schema_registry::add(const schema_id& id, const json::value& schema,
                                     std::string source) {
  if (!valid_name(id.name) || id.version <= 0) {
    throw protocol_error(errc::invalid_schema_id,
                         "schema id '" + id.to_string() + "' from " + source +
                             " is invalid: expected name@version with a version >= 1");
  }
  std::vector<detail::named_check> declared;
  compiled_schema compiled = [&] {
    try {
      // x-invariants and x-schema-versions become checks; the schema that is
      // compiled (and sent to providers) is plain JSON Schema.
      json::value plain = schema;
      declared = detail::take_declared_checks(plain, id.to_string());
      return compiled_schema::compile(plain, id.to_string());
    } catch (const protocol_error& e) {
      throw protocol_error(errc::unparsable_schema, std::string(e.what()) + " (from " + source + ")");
    }
  }();
  std::unique_lock lock(impl_->mutex);
  auto& versions = impl_->schemas[id.name];
  if (const auto existing = versions.find(id.version); existing != versions.end()) {
    throw protocol_error(errc::duplicate_schema,
                         "schema '" + id.to_string() + "' from " + source +
                             " is already registered (from " + existing->second.source + ")");
  }
  versions.emplace(id.version, impl::entry{compiled, declared, std::move(source)});
  for (const auto& [name, check] : declared) compiled = compiled.with_invariant(name, check);
  return compiled;
}

compiled_schema schema_registry::load_file(const fs::path& file) {
  const std::string text = read_file_text(file);
  boost::system::error_code ec;
  json::value schema = json::parse(text, ec, {}, untrusted_parse_options());
  if (ec) {
    throw protocol_error(errc::unparsable_schema,
                         "schema file '" + file.string() + "' is not valid JSON (or nested deeper than " +
                             std::to_string(max_json_depth) + " levels): " + ec.message());
  }
  // A "$id" of the form name@version wins over the file name.
  std::optional<schema_id> id;
  if (const auto* obj = schema.if_object()) {
    if (const auto* declared = obj->if_contains("$id"); declared && declared->is_string()) {
      if (auto parsed = schema_id::parse(declared->get_string()); parsed && parsed->version > 0) {
        id = *parsed;
      }
    }
  }
  if (!id) {
    auto parsed = schema_id::parse(file.stem().string());
    if (!parsed || parsed->version == 0) {
      throw protocol_error(errc::invalid_schema_id,
                           "schema file '" + file.string() +
                               "' must be named <name>@<version>.json (or declare such an $id)");
    }
    id = *parsed;
  }
  return add(*id, schema, "file '" + file.string() + "'");
}

std::size_t schema_registry::load_directory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw protocol_error(errc::unknown_schema,
                         "schema directory '" + dir.string() + "' does not exist or is not a directory");
  }
  std::vector<fs::path> files;
  for (const auto& item : fs::recursive_directory_iterator(dir)) {
    if (item.is_regular_file() && item.path().extension() == ".json") files.push_back(item.path());
  }
  std::ranges::sort(files);  // deterministic order, so errors are reproducible
  for (const auto& file : files) load_file(file);
  return files.size();
}

std::optional<compiled_schema> schema_registry::find(std::string_view name_or_id) const {
  const auto id = schema_id::parse(name_or_id);
  if (!id) return std::nullopt;
  std::shared_lock lock(impl_->mutex);
  const auto* e = impl_->lookup(*id);
  if (!e) return std::nullopt;
  return e->with_invariants();
}

compiled_schema schema_registry::at(std::string_view name_or_id) const {
  const schema_id id = impl_->resolve(name_or_id);
  std::shared_lock lock(impl_->mutex);
  const auto* e = impl_->lookup(id);
  if (!e) {
    throw protocol_error(errc::unknown_schema, "unknown schema '" + std::string(name_or_id) +
                                                   "': " + impl_->known_versions(id.name));
  }
  return e->with_invariants();
}

void schema_registry::add_invariant(std::string_view name_or_id, std::string invariant_name,
                                    invariant_check check) {
  const schema_id id = impl_->resolve(name_or_id);
  std::unique_lock lock(impl_->mutex);
  auto* e = const_cast<impl::entry*>(impl_->lookup(id));
  if (!e) {
    throw protocol_error(errc::unknown_schema, "cannot add invariant '" + invariant_name +
                                                   "' to unknown schema '" +
                                                   std::string(name_or_id) + "'");
  }
  e->invariants.emplace_back(std::move(invariant_name), std::move(check));
  std::lock_guard cache_lock(impl_->envelope_mutex);
  impl_->envelope_cache.erase(e->base.id());
}

compiled_schema schema_registry::envelope_schema(std::string_view data_schema_id) const {
  const schema_id id = impl_->resolve(data_schema_id);
  std::shared_lock lock(impl_->mutex);
  const auto* e = impl_->lookup(id);
  if (!e) {
    throw protocol_error(errc::unknown_schema, "unknown schema '" + std::string(data_schema_id) +
                                                   "': " + impl_->known_versions(id.name));
  }
  const std::string& exact = e->base.id();
  std::lock_guard cache_lock(impl_->envelope_mutex);
  if (const auto cached = impl_->envelope_cache.find(exact); cached != impl_->envelope_cache.end()) {
    return cached->second;
  }
  compiled_schema envelope =
      compiled_schema::compile(compose_envelope_schema(e->base.json()), "envelope(" + exact + ")");
  for (const auto& [name, check] : e->invariants) {
    envelope = envelope.with_invariant(name, on_envelope_data(check));
  }
  impl_->envelope_cache.emplace(exact, envelope);
  return envelope;
}

std::vector<schema_id> schema_registry::list() const {
  std::shared_lock lock(impl_->mutex);
  std::vector<schema_id> ids;
  for (const auto& [name, versions] : impl_->schemas) {
    for (const auto& [version, e] : versions) ids.push_back({name, version});
  }
  return ids;
}

}  // namespace switchboard::protocol
