// output_map and model_set: the plain implementations agent_context uses
// outside a workflow (tests, running one agent on its own).
#include <switchboard/agents/agent_context.hpp>

#include <algorithm>

namespace switchboard::agents {

void output_map::set(std::string agent, protocol::envelope value) {
  // Keep first-run order: a second output of the same agent replaces the
  // value in place.
  const auto it = std::ranges::find(outputs_, agent, &decltype(outputs_)::value_type::first);
  if (it != outputs_.end()) {
    it->second = std::move(value);
    return;
  }
  outputs_.emplace_back(std::move(agent), std::move(value));
}

const protocol::envelope* output_map::latest(std::string_view agent) const {
  const auto it = std::ranges::find_if(outputs_, [&](const auto& e) { return e.first == agent; });
  return it == outputs_.end() ? nullptr : &it->second;
}

std::vector<std::string> output_map::agent_names() const {
  std::vector<std::string> names;
  names.reserve(outputs_.size());
  for (const auto& [name, value] : outputs_) names.push_back(name);
  return names;
}

void model_set::add(std::string role, std::shared_ptr<chat_model> model) {
  models_.insert_or_assign(std::move(role), std::move(model));
}

chat_model* model_set::find(std::string_view role) const {
  if (auto it = models_.find(role); it != models_.end()) return it->second.get();
  if (auto it = models_.find(std::string_view{"default"}); it != models_.end()) {
    return it->second.get();
  }
  return nullptr;
}

}  // namespace switchboard::agents
