// The final plan of a sample run, in words.
#include "detail.hpp"

#include <switchboard/scheduling/agents.hpp>

namespace switchboard::scheduling {
namespace {

using namespace detail;

std::string text(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string{};
}

std::vector<std::string> texts(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const auto* v = o.if_contains(key); v && v->is_array())
    for (const auto& item : v->get_array())
      if (item.is_string()) out.emplace_back(item.get_string());
  return out;
}

std::string plan_line(const std::string& title, const interval& slot,
                      const std::vector<std::string>& participants,
                      const std::vector<std::string>& resources) {
  std::string out = "\"" + title + "\", " + describe(slot);
  if (!participants.empty()) out += ", with " + join(participants);
  if (!resources.empty()) out += ", using the " + join(resources);
  return out;
}

}  // namespace

std::string describe_outcome(const agents::agent_outputs& outputs) {
  auto data_of = [&](std::string_view agent) -> const json::object* {
    const protocol::envelope* e = outputs.latest(agent);
    return e && !e->failed() ? &e->data : nullptr;
  };
  if (const auto* q = data_of("query")) return "Answer: " + text(*q, "answer");

  if (const auto* res = data_of("resolution")) {
    const auto* plan = res->if_contains("plan");
    const auto slot = slot_from_json(plan);
    if (!slot) return "No plan: no strategy resolves the conflicts.";
    const auto& p = plan->get_object();
    std::string out = "Plan (after resolution): " +
                      plan_line(text(p, "title"), *slot, texts(p, "participants"), texts(p, "resources"));
    const auto* index = res->if_contains("recommended");
    const auto* list = res->if_contains("strategies");
    if (index && index->is_int64() && list && list->is_array() &&
        static_cast<std::size_t>(index->get_int64()) < list->get_array().size()) {
      const auto& chosen = list->get_array()[static_cast<std::size_t>(index->get_int64())];
      if (chosen.is_object()) out += "\n  how: " + text(chosen.get_object(), "description");
    }
    return out;
  }

  const auto* sched = data_of("scheduling");
  const auto* conflicts = data_of("conflict_detection");
  if (!sched || !conflicts) return {};
  const auto slot = recommended_slot(sched);
  const auto* event = sched->if_contains("event");
  if (!slot || !event || !event->is_object()) return {};
  const auto& e = event->get_object();
  std::string out = "Confirmed: " + plan_line(text(e, "title"), *slot, texts(e, "participants"),
                                              texts(e, "resources"));
  if (const auto* warnings = conflicts->if_contains("warnings"); warnings && warnings->is_array())
    for (const auto& w : warnings->get_array())
      if (w.is_object()) out += "\n  note: preference not met: " + text(w.get_object(), "description");
  return out;
}

boost::json::object sample_context(const std::filesystem::path& data_dir) {
  json::object out;
  auto member_of = [](const json::value& doc, std::string_view key) {
    const auto* o = doc.if_object();
    const auto* v = o ? o->if_contains(key) : nullptr;
    return v ? *v : json::value(nullptr);
  };
  out["members"] = member_of(parse_json_file(data_dir / "household.json"), "members");
  out["resources"] = member_of(parse_json_file(data_dir / "resources.json"), "resources");
  out["rules"] = parse_json_file(data_dir / "rules.json");
  return out;
}

}  // namespace switchboard::scheduling
