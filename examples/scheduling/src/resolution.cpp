// resolution, rule-based: the offline stand-in for the LLM-backed agent.
// Proposes scored strategies that remove every detected conflict (take
// another resource of the same kind, move the event, shorten it) and applies
// the best one as the final plan. Each strategy is re-checked against the
// calendars, rules and bookings, so a recommendation is never a guess.
#include "detail.hpp"

#include <switchboard/scheduling/agents.hpp>

#include <algorithm>
#include <cmath>

namespace switchboard::scheduling {
namespace {

using namespace detail;

constexpr int grid = 15;

struct strategy {
  std::string kind;
  std::string description;
  double score = 0;
  interval slot;
  std::vector<const resource*> resources;
};

double round2(double v) { return std::round(v * 100.0) / 100.0; }

std::vector<std::string> names(const std::vector<const resource*>& resources) {
  std::vector<std::string> out;
  for (const auto* r : resources) out.push_back(r->name);
  return out;
}

class resolution_agent final : public native_agent {
 public:
  resolution_agent(std::shared_ptr<calendar> cal, std::shared_ptr<const agents::tool_registry> tools)
      : native_agent("resolution",
                     "Proposes scored strategies to resolve scheduling conflicts (move the event, "
                     "change a resource, shorten it) and recommends one as the final plan.",
                     std::move(cal), std::move(tools)) {}

 protected:
  protocol::envelope compute(const agents::agent_context& context, const household& seen) const override {
    const json::object* sched = output_of(context, "scheduling");
    const std::optional<interval> slot = recommended_slot(sched);
    const auto* event_value = sched ? sched->if_contains("event") : nullptr;
    if (!slot || !event_value || !event_value->is_object())
      return make_failure("missing_input",
                          "resolution needs scheduling's event and recommended_slot and there are none");
    const request r = decode_request(event_value->get_object());
    const household h = view_for_event(seen, event_value->get_object());
    const people who = resolve_people(h, r.participants);
    std::vector<const resource*> resources;
    for (const auto& name : r.resources) {
      const resource* res = h.find_resource(name);
      if (!res)
        return make_failure("unknown_resource", "unknown resource '" + name +
                                                    "'; the household has " + h.resource_names());
      resources.push_back(res);
    }
    const minute_t now = reference_now(h, context.input);

    std::vector<strategy> strategies;
    add_change_resource(h, who.members, resources, *slot, now, strategies);
    add_moves(h, who.members, resources, *slot, now, strategies);
    add_shorten(h, who.members, resources, *slot, now, strategies);
    std::ranges::stable_sort(strategies, [](const strategy& a, const strategy& b) { return a.score > b.score; });

    json::array list;
    for (const auto& s : strategies) {
      json::object o = slot_json(s.slot);
      o["strategy"] = s.kind;
      o["description"] = s.description;
      o["score"] = s.score;
      o["resources"] = json::value_from(names(s.resources));
      list.push_back(std::move(o));
    }
    json::object data;
    data["strategies"] = std::move(list);
    const std::string title = r.title.empty() ? "Event" : r.title;
    if (strategies.empty()) {
      data["recommended"] = nullptr;
      data["plan"] = nullptr;
      return make_envelope(
          std::move(data),
          "No strategy resolves every conflict of \"" + title + "\" at " + describe(*slot) +
              ": no other resource of the same kind is free, no conflict-free slot exists on that "
              "day or the following week, and shortening does not help.",
          0.3, "Rule-based resolution (offline): tried changing resources, moving and shortening.");
    }
    const strategy& best = strategies.front();
    data["recommended"] = 0;
    data["plan"] = {{"title", title},
                    {"start", format_datetime(best.slot.start)},
                    {"end", format_datetime(best.slot.end)},
                    {"participants", json::value_from(names_of(who.members))},
                    {"resources", json::value_from(names(best.resources))}};
    std::vector<std::string> considered;
    for (const auto& s : strategies) considered.push_back(s.kind + " " + format_score(s.score));
    return make_envelope(std::move(data), "Recommended: " + best.description + ".", 0.85,
                         "Rule-based resolution (offline): every strategy was re-checked against "
                         "the calendars, the household rules and the bookings; keeping the time "
                         "scores highest, then the nearest move, then shortening (" +
                             join(considered, ", ") + ").");
  }

 private:
  // Same time, another resource of the same kind for each unavailable one.
  static void add_change_resource(const household& h, const std::vector<const member*>& who,
                           const std::vector<const resource*>& resources, interval slot,
                           minute_t now, std::vector<strategy>& out) {
    if (!check_slot(h, who, slot, now).feasible()) return;  // people/rules conflicts remain
    std::vector<const resource*> chosen = resources;
    std::vector<std::string> swaps;
    for (auto& res : chosen) {
      if (check_resource(h, *res, who, slot).available()) continue;
      const resource* replacement = nullptr;
      for (const auto& other : h.resources) {
        if (&other == res || other.kind != res->kind) continue;
        if (std::ranges::find(chosen, &other) != chosen.end()) continue;
        if (check_resource(h, other, who, slot).available()) {
          replacement = &other;
          break;
        }
      }
      if (!replacement) return;
      const auto c = check_resource(h, *replacement, who, slot);
      swaps.push_back("the " + replacement->name + " instead of the " + res->name + " (free then, " +
                      std::to_string(c.needed) + " of " + std::to_string(replacement->capacity) +
                      (replacement->unit.empty() ? "" : " " + replacement->unit) + " needed)");
      res = replacement;
    }
    if (swaps.empty()) return;
    out.push_back({"change_resource", "keep " + describe(slot) + " and take " + join(swaps), 0.9,
                   slot, chosen});
  }

  // The nearest conflict-free slots of the same length: same day first.
  static void add_moves(const household& h, const std::vector<const member*>& who,
                        const std::vector<const resource*>& resources, interval slot, minute_t now,
                        std::vector<strategy>& out) {
    const int duration = static_cast<int>(slot.length());
    const day_t day = day_of(slot.start);
    auto found = find_slots(h, who, resources, day, 1, duration, {0, minutes_per_day}, now,
                            slot.start, 3);
    std::erase_if(found, [&](const slot_check& c) { return c.slot == slot; });
    if (found.empty())
      found = find_slots(h, who, resources, day + 1, 7, duration, {0, minutes_per_day}, now,
                         slot.start, 2);
    for (std::size_t i = 0; i < found.size() && i < 2; ++i) {
      const auto& c = found[i];
      const double distance_hours = static_cast<double>(std::abs(c.slot.start - slot.start)) / 60.0;
      const double score = round2(std::clamp(0.85 * c.score - 0.02 * distance_hours, 0.05, 0.85));
      out.push_back({"move_event",
                     "move it to " + describe(c.slot) + ", when " + join(c.available) +
                         (c.available.size() == 1 ? " is" : " are") + " free" +
                         (resources.empty() ? "" : ", the " + join(names(resources)) + " available,") +
                         " and every household rule holds",
                     score, c.slot, resources});
    }
  }

  // End earlier, when the trouble is only in the slot's tail.
  static void add_shorten(const household& h, const std::vector<const member*>& who,
                          const std::vector<const resource*>& resources, interval slot, minute_t now,
                          std::vector<strategy>& out) {
    for (minute_t end = slot.end - grid; end - slot.start >= 30; end -= grid) {
      const interval shorter{slot.start, end};
      if (!check_slot(h, who, shorter, now).feasible() ||
          !resources_available(h, resources, who, shorter))
        continue;
      const double kept = static_cast<double>(shorter.length()) / static_cast<double>(slot.length());
      if (kept < 0.5) return;
      out.push_back({"shorten_event",
                     "shorten it to " + describe(shorter) + " (" + std::to_string(shorter.length()) +
                         " of " + std::to_string(slot.length()) + " minutes)",
                     round2(0.6 * kept), shorter, resources});
      return;
    }
  }
};

}  // namespace

std::shared_ptr<agents::agent> make_resolution(std::shared_ptr<calendar> cal,
                                               std::shared_ptr<const agents::tool_registry> tools) {
  return std::make_shared<resolution_agent>(std::move(cal), std::move(tools));
}

}  // namespace switchboard::scheduling
