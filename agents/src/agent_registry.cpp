// agent_registry: unique names, origins, and framework-side validation of
// every envelope against the agent's declared schema.
#include <switchboard/agents/agent_registry.hpp>

#include <switchboard/protocol/envelope.hpp>

#include <boost/json/object.hpp>

#include <algorithm>
#include <mutex>
#include <stdexcept>

namespace switchboard::agents {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out.empty() ? std::string{"(none)"} : out;
}

}  // namespace

agent_registry::agent_registry(std::shared_ptr<protocol::schema_registry> schemas)
    : schemas_(std::move(schemas)) {
  if (!schemas_) throw std::invalid_argument("agent_registry: schema registry is null");
}

void agent_registry::add(std::shared_ptr<agent> a, std::string origin) {
  if (!a) throw std::invalid_argument("agent_registry::add: agent is null (origin " + origin + ")");
  const std::string name{a->name()};
  if (name.empty()) {
    throw std::invalid_argument("agent_registry::add: agent from " + origin + " has an empty name");
  }
  std::unique_lock lock(mutex_);
  const auto pos = std::ranges::lower_bound(entries_, name, {},
                                            [](const entry& e) { return e.instance->name(); });
  if (pos != entries_.end() && pos->instance->name() == name) {
    throw agent_error(agent_errc::duplicate_agent, "agent '" + name + "' is already registered (from " +
                                                       pos->origin + "); refused the one from " +
                                                       origin);
  }
  entries_.insert(pos, entry{std::move(a), std::move(origin)});
}

agent* agent_registry::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  const auto pos = std::ranges::lower_bound(entries_, name, {},
                                            [](const entry& e) { return e.instance->name(); });
  if (pos == entries_.end() || pos->instance->name() != name) return nullptr;
  return pos->instance.get();
}

agent& agent_registry::at(std::string_view name) const {
  if (agent* a = find(name)) return *a;
  throw agent_error(agent_errc::unknown_agent, "unknown agent '" + std::string(name) +
                                                   "'; registered: " + join(names()));
}

std::vector<agent_info> agent_registry::list() const {
  std::shared_lock lock(mutex_);
  std::vector<agent_info> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) {
    out.push_back({std::string(e.instance->name()), std::string(e.instance->description()),
                   e.instance->output_schema(), e.origin});
  }
  return out;
}

std::vector<std::string> agent_registry::names() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.emplace_back(e.instance->name());
  return out;
}

std::vector<protocol::validation_error> agent_registry::validate(
    const agent& a, const protocol::envelope& value) const {
  const std::string schema_id = a.output_schema();
  const auto schema = schemas_->find(schema_id);
  if (!schema) {
    throw agent_error(agent_errc::unknown_output_schema,
                      "agent '" + std::string(a.name()) + "' declares output schema '" + schema_id +
                          "', which is not in the schema registry");
  }
  if (value.failed()) {
    // Only the envelope itself: a failed agent's data is not an answer.
    static const auto any_data =
        protocol::compiled_schema::compile(boost::json::object{}, "any data (failed envelope)");
    return protocol::validate_envelope(value, any_data);
  }
  return protocol::validate_envelope(value, *schema);
}

}  // namespace switchboard::agents
