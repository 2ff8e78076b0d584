// tool_registry: unique names, origins, schemas compiled once, and the
// untrusted-argument check the tool loop relies on.
#include <switchboard/agents/tool_registry.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/protocol/limits.hpp>

#include <boost/json/stream_parser.hpp>

#include <algorithm>
#include <mutex>

namespace switchboard::agents {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? std::string{"(none)"} : out;
}

[[noreturn]] void refuse(const std::string& name, const std::string& origin, const std::string& why) {
  throw agent_error(agent_errc::invalid_tool, "tool '" + name + "' (from " + origin + "): " + why);
}

// Providers take an object of arguments: a schema for anything else could
// never be satisfied by a call.
void check_object_schema(const boost::json::object& schema, const std::string& name,
                         const std::string& origin) {
  const auto* type = schema.if_contains("type");
  if (type != nullptr && !(type->is_string() && type->get_string() == "object")) {
    refuse(name, origin, "parameters schema must have \"type\": \"object\"");
  }
}

protocol::compiled_schema compile(const boost::json::object& schema, const std::string& name,
                                  const std::string& origin) {
  check_object_schema(schema, name, origin);
  try {
    return protocol::compiled_schema::compile(schema, "tool:" + name + " parameters");
  } catch (const std::exception& e) {
    refuse(name, origin, std::string("parameters schema does not compile: ") + e.what());
  }
}

protocol::validation_error argument_error(std::string path, std::string message) {
  return {std::move(path), std::move(message), protocol::errc::schema_violation};
}

bool is_blank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// The parsed arguments, or the reason they cannot be parsed.
tool_arguments parse_arguments(std::string_view text) {
  tool_arguments out;
  if (text.size() > protocol::max_tool_arguments_bytes) {
    out.errors.push_back(argument_error("", "arguments are " + std::to_string(text.size()) +
                                                " bytes, more than the limit of " +
                                                std::to_string(protocol::max_tool_arguments_bytes)));
    return out;
  }
  if (is_blank(text)) {
    out.value = boost::json::object{};
    return out;
  }
  boost::json::stream_parser parser({}, protocol::untrusted_parse_options());
  boost::system::error_code ec;
  const std::size_t consumed = parser.write_some(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) {
    out.errors.push_back(argument_error(
        "", "arguments are not valid JSON (" + ec.message() + " at offset " + std::to_string(consumed) + ")"));
    return out;
  }
  out.value = parser.release();
  if (const auto why = protocol::check_untrusted_value(out.value)) {
    out.errors.push_back(argument_error("", "arguments refused: " + *why));
  } else if (!out.value.is_object()) {
    out.errors.push_back(argument_error("", "arguments must be a JSON object"));
  }
  return out;
}

}  // namespace

std::string tool_arguments::describe(std::string_view tool_name) const {
  std::string out = "invalid arguments for tool '" + std::string(tool_name) + "':";
  for (const auto& e : errors) out += "\n" + e.to_string();
  return out;
}

void tool_registry::add(std::shared_ptr<tool> t, std::string origin) {
  if (!t) throw agent_error(agent_errc::invalid_tool, "tool_registry::add: tool is null (from " + origin + ")");
  std::string name(t->name());
  if (!is_valid_tool_name(name)) {
    refuse(name, origin, "the name must match [A-Za-z0-9_.:/-]{1,128}");
  }
  // Compiled before taking the lock: a slow or failing compile blocks no lookup.
  auto schema = compile(t->parameters(), name, origin);
  std::unique_lock lock(mutex_);
  const auto pos = std::ranges::lower_bound(entries_, name, {}, &entry::name);
  if (pos != entries_.end() && pos->name == name) {
    throw agent_error(agent_errc::duplicate_tool, "tool '" + name + "' is already registered (from " +
                                                      pos->origin + "); refused the one from " + origin);
  }
  entries_.insert(pos, entry{std::move(t), std::move(name), std::move(origin), std::move(schema)});
}

const tool_registry::entry* tool_registry::find_entry(std::string_view name) const {
  const auto pos = std::ranges::lower_bound(entries_, name, {}, &entry::name);
  return pos != entries_.end() && pos->name == name ? &*pos : nullptr;
}

tool* tool_registry::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  const entry* e = find_entry(name);
  return e != nullptr ? e->instance.get() : nullptr;
}

std::shared_ptr<tool> tool_registry::find_shared(std::string_view name) const {
  std::shared_lock lock(mutex_);
  const entry* e = find_entry(name);
  return e != nullptr ? e->instance : nullptr;
}

tool& tool_registry::at(std::string_view name) const {
  if (tool* t = find(name)) return *t;
  throw_unknown(name);
}

void tool_registry::throw_unknown(std::string_view name) const {
  throw agent_error(agent_errc::unknown_tool,
                    "unknown tool '" + std::string(name) + "'; registered: " + join(names()));
}

std::vector<tool_info> tool_registry::list() const {
  std::shared_lock lock(mutex_);
  std::vector<tool_info> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) {
    out.push_back({e.name, std::string(e.instance->description()), e.origin, e.instance->needs_approval(),
                   e.instance->idempotent()});
  }
  return out;
}

std::vector<std::string> tool_registry::names() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

std::vector<tool_definition> tool_registry::definitions(std::span<const std::string> names) const {
  std::vector<tool_definition> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back(to_definition(at(n)));
  return out;
}

tool_arguments tool_registry::validate_arguments(std::string_view name, std::string_view text) const {
  std::optional<protocol::compiled_schema> schema;
  {
    std::shared_lock lock(mutex_);
    if (const entry* e = find_entry(name)) schema = e->schema;
  }
  if (!schema) throw_unknown(name);
  tool_arguments out = parse_arguments(text);
  if (out.ok()) out.errors = schema->validate(out.value);
  return out;
}

}  // namespace switchboard::agents
