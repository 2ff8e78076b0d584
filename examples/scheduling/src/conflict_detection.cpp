// conflict_detection: gathers what is wrong with the recommended slot from
// scheduling's and resource_manager's envelopes (busy participants, broken
// hard rules, booked or too small resources) and rates each one; unmet soft
// preferences are warnings, not conflicts.
#include "detail.hpp"

#include <switchboard/scheduling/agents.hpp>

#include <boost/json/serialize.hpp>

namespace switchboard::scheduling {
namespace {

using namespace detail;


const json::array& list(const json::object& o, std::string_view key) {
  static const json::array empty;
  const auto* v = o.if_contains(key);
  return v && v->is_array() ? v->get_array() : empty;
}

json::object item(std::string type, std::string subject, std::string description, std::string severity) {
  return {{"type", std::move(type)}, {"subject", std::move(subject)},
          {"description", std::move(description)}, {"severity", std::move(severity)}};
}

std::string span(const json::object& o) {
  const auto start = parse_datetime(text(o, "start"));
  const auto end = parse_datetime(text(o, "end"));
  if (start && end && *end > *start) return describe({*start, *end});
  return text(o, "start") + "\u2013" + text(o, "end");
}

class conflict_detection_agent final : public native_agent {
 public:
  explicit conflict_detection_agent(std::shared_ptr<calendar> cal)
      : native_agent("conflict_detection",
                     "Lists the overlaps and violated constraints of the recommended slot, each "
                     "with a severity.",
                     std::move(cal)) {}

 protected:
  protocol::envelope compute(const agents::agent_context& context, const household&) const override {
    const json::object* sched = output_of(context, "scheduling");
    const std::optional<interval> slot = recommended_slot(sched);
    if (!sched || !slot)
      return make_failure("missing_input",
                          "conflict_detection needs scheduling's recommended_slot and there is none");
    json::array conflicts;
    json::array warnings;
    for (const auto& v : list(*sched, "participants_busy")) {
      if (!v.is_object()) continue;
      const auto& b = v.get_object();
      conflicts.push_back(item("participant_busy", text(b, "name"),
                               text(b, "name") + " is busy: " + text(b, "title") + ", " + span(b), "high"));
    }
    for (const auto& v : list(*sched, "constraints_violated")) {
      if (!v.is_object()) continue;
      const auto& c = v.get_object();
      if (text(c, "kind") == "hard")
        conflicts.push_back(item("hard_constraint", text(c, "id"), text(c, "description"), "high"));
      else
        warnings.push_back(item("soft_preference", text(c, "id"), text(c, "description"), "low"));
    }
    if (const json::object* rm = output_of(context, "resource_manager")) {
      for (const auto& v : list(*rm, "resources")) {
        if (!v.is_object()) continue;
        const auto& r = v.get_object();
        const std::string name = text(r, "name");
        if (const auto* ok = r.if_contains("capacity_ok"); ok && ok->is_bool() && !ok->get_bool())
          conflicts.push_back(item("capacity_exceeded", name,
                                   "The " + name + " is too small: " + json::serialize(r.at("needed")) +
                                       " needed, capacity " + json::serialize(r.at("capacity")),
                                   "high"));
        const auto* needs = r.if_contains("needs_driver");
        const auto* driver = r.if_contains("driver");
        if (needs && needs->is_bool() && needs->get_bool() && (!driver || !driver->is_string()))
          conflicts.push_back(item("no_driver", name,
                                   "The " + name + " needs a driver: no adult who drives is free then", "high"));
        for (const auto& b : list(r, "bookings_overlapping")) {
          if (!b.is_object()) continue;
          const auto& booking = b.get_object();
          conflicts.push_back(item("resource_booked", name,
                                   "The " + name + " is booked: " + text(booking, "title") +
                                       (text(booking, "by").empty() ? "" : " by " + text(booking, "by")) +
                                       ", " + span(booking),
                                   "high"));
        }
      }
    }
    const bool has_conflicts = !conflicts.empty();
    std::string explanation;
    if (!has_conflicts) {
      explanation = "No conflicts for " + describe(*slot) +
                    (warnings.empty() ? "." : " (" + std::to_string(warnings.size()) +
                                                  " preference(s) not met).");
    } else {
      std::vector<std::string> parts;
      for (const auto& c : conflicts) parts.push_back(text(c.get_object(), "description"));
      explanation = std::to_string(conflicts.size()) + " conflict(s) for " + describe(*slot) + ": " +
                    join(parts, "; ") + ".";
    }
    json::object data;
    data["slot"] = slot_json(*slot);
    data["conflicts"] = std::move(conflicts);
    data["warnings"] = std::move(warnings);
    data["has_conflicts"] = has_conflicts;
    return make_envelope(std::move(data), std::move(explanation), 0.95,
                         "Busy participants, broken hard rules, booked or too small resources and "
                         "vehicles without a free driver are conflicts (high severity); unmet soft "
                         "preferences are warnings (low).");
  }
};

}  // namespace

std::shared_ptr<agents::agent> make_conflict_detection(std::shared_ptr<calendar> cal) {
  return std::make_shared<conflict_detection_agent>(std::move(cal));
}

}  // namespace switchboard::scheduling
