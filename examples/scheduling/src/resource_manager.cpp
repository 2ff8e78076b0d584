// resource_manager: each requested resource checked for the recommended
// slot: capacity against what the event needs, and existing bookings.
#include "detail.hpp"

#include <switchboard/scheduling/agents.hpp>

namespace switchboard::scheduling {
namespace {

using namespace detail;

std::string describe_check(const resource_check& c, const interval& slot) {
  const resource& r = *c.res;
  const std::string need = std::to_string(c.needed) + " of " + std::to_string(r.capacity) +
                           (r.unit.empty() ? "" : " " + r.unit) + " needed";
  if (!c.capacity_ok) return "the " + r.name + " is too small (" + need + ")";
  if (!c.driver_ok())
    return "the " + r.name + " needs a driver and no adult who drives is free " + describe(slot);
  if (!c.overlapping.empty()) {
    const auto& b = c.overlapping.front();
    return "the " + r.name + " is booked " + describe(b.when) + " (" + b.title +
           (b.by.empty() ? "" : ", by " + b.by) + ")";
  }
  return "the " + r.name + " is free " + describe(slot) + " (" + need + ")" +
         (c.driver.empty() ? "" : ", driven by " + c.driver);
}

class resource_manager_agent final : public native_agent {
 public:
  explicit resource_manager_agent(std::shared_ptr<calendar> cal)
      : native_agent("resource_manager",
                     "Checks each requested resource (vehicles, rooms, devices) for the "
                     "recommended slot: capacity, existing bookings, and a free adult driver when "
                     "only passengers who do not drive ride.",
                     std::move(cal)) {}

 protected:
  protocol::envelope compute(const agents::agent_context& context, const household& seen) const override {
    const json::object* sched = output_of(context, "scheduling");
    const std::optional<interval> slot = recommended_slot(sched);
    if (!sched || !slot)
      return make_failure("missing_input",
                          "resource_manager needs scheduling's recommended_slot and there is none "
                          "(the workflow must run scheduling first)");
    const json::object empty;
    const auto* event_value = sched->if_contains("event");
    const json::object& event = event_value && event_value->is_object() ? event_value->get_object() : empty;
    request r = decode_request(event);
    const household h = view_for_event(seen, event);
    const people who = resolve_people(h, r.participants);

    json::array checks;
    std::vector<std::string> sentences;
    bool all_available = true;
    for (const auto& name : r.resources) {
      const resource* res = h.find_resource(name);
      if (!res)
        return make_failure("unknown_resource", "unknown resource '" + name +
                                                    "'; the household has " + h.resource_names());
      const resource_check c = check_resource(h, *res, who.members, *slot);
      json::array bookings;
      for (const auto& b : c.overlapping)
        bookings.push_back({{"title", b.title}, {"by", b.by}, {"start", format_datetime(b.when.start)},
                            {"end", format_datetime(b.when.end)}});
      checks.push_back({{"name", res->name}, {"kind", res->kind}, {"capacity", res->capacity},
                        {"needed", c.needed}, {"capacity_ok", c.capacity_ok},
                        {"needs_driver", c.needs_driver},
                        {"driver", c.driver.empty() ? json::value(nullptr) : json::value(c.driver)},
                        {"available", c.available()}, {"bookings_overlapping", std::move(bookings)}});
      all_available = all_available && c.available();
      sentences.push_back(describe_check(c, *slot));
    }
    json::object data;
    data["slot"] = slot_json(*slot);
    data["resources"] = std::move(checks);
    data["all_available"] = all_available;
    std::string explanation =
        sentences.empty() ? "No resources requested." : join(sentences, "; ") + ".";
    explanation[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(explanation[0])));
    return make_envelope(std::move(data), std::move(explanation), 0.95,
                         "Compared each resource's capacity with the participants (a vehicle needs a "
                         "free adult driver when none of its riders drives) and its bookings with " +
                             describe(*slot) + ".");
  }
};

}  // namespace

std::shared_ptr<agents::agent> make_resource_manager(std::shared_ptr<calendar> cal) {
  return std::make_shared<resource_manager_agent>(std::move(cal));
}

}  // namespace switchboard::scheduling
