// scheduling: interval arithmetic over the household's calendars. Hard rules
// filter slots, soft preferences score them; a requested time is always
// evaluated (and recommended, so that conflict_detection and resolution can
// deal with its problems), a flexible request gets the best feasible slot.
#include "detail.hpp"

#include <switchboard/scheduling/agents.hpp>

#include <algorithm>

namespace switchboard::scheduling {
namespace {

using namespace detail;

constexpr std::size_t max_alternatives = 4;
constexpr int default_duration = 60;

json::array violations_json(const slot_check& c, minute_t now) {
  json::array out;
  if (c.in_past)
    out.push_back({{"id", "in_the_past"}, {"kind", "hard"},
                   {"description", "The slot starts before now (" + format_datetime(now) + ")"}});
  for (const auto* rule : c.hard_violated)
    out.push_back({{"id", rule->id}, {"kind", "hard"}, {"description", rule->description}});
  for (const auto* rule : c.soft_violated)
    out.push_back({{"id", rule->id}, {"kind", "soft"}, {"description", rule->description}});
  return out;
}

json::object candidate_json(const slot_check& c, bool requested) {
  json::object o = slot_json(c.slot);
  o["score"] = c.score;
  o["requested"] = requested;
  o["participants_available"] = json::value_from(c.available);
  json::array violated;
  if (c.in_past) violated.push_back("in_the_past");
  for (const auto& b : c.busy) violated.push_back(json::value("busy:" + b.name));
  for (const auto* rule : c.hard_violated) violated.push_back(json::value(rule->id));
  for (const auto* rule : c.soft_violated) violated.push_back(json::value(rule->id));
  o["constraints_violated"] = std::move(violated);
  return o;
}

std::string problems(const slot_check& c) {
  std::vector<std::string> out;
  if (c.in_past) out.push_back("it starts before now");
  for (const auto& b : c.busy)
    out.push_back(b.name + " is busy (" + b.entry.title + ", " + describe(b.entry.when) + ")");
  for (const auto* rule : c.hard_violated) out.push_back("\"" + rule->description + "\"");
  return join(out);
}

class scheduling_agent final : public native_agent {
 public:
  explicit scheduling_agent(std::shared_ptr<calendar> cal)
      : native_agent("scheduling",
                     "Finds and scores candidate time slots over the family calendars: hard "
                     "household rules filter, soft preferences score; recommends a slot. For a move, "
                     "the event keeps its participants, resources and duration.",
                     std::move(cal)) {}

 protected:
  protocol::envelope compute(const agents::agent_context& context, const household& h) const override {
    const auto current = event_in_progress(context);
    if (!current)
      return make_failure("missing_input",
                          "scheduling needs nl_parser's output and there is none (the workflow "
                          "must run nl_parser before scheduling)");
    request r = current->r;
    if (r.intent == "query")
      return make_failure("invalid_input",
                          "scheduling: the request is a question (intent \"query\"); the query "
                          "agent answers questions");
    if (r.intent == "cancel")
      return make_failure("invalid_input",
                          "scheduling: a cancellation needs no slot; the booking agent removes the event");
    const minute_t now = reference_now(h, context.input);
    std::optional<target_event> moving;
    if (r.intent == "modify") {
      auto lookup = find_target(h, r.title, r.participants, r.original_date, now);
      if (!lookup.found) return make_failure("event_not_found", "scheduling: cannot move: " + lookup.problem);
      moving = std::move(lookup.found);
      r.title = moving->title;
      r.participants = moving->participants;
      if (r.resources.empty()) r.resources = moving->resources;
      if (!r.date) r.date = day_of(moving->when.start);
      if (!r.start_time && !r.time_window)
        r.start_time = static_cast<int>(moving->when.start - start_of(day_of(moving->when.start)));
      if (!r.duration_minutes && !(r.start_time && r.end_time)) {
        r.duration_minutes = static_cast<int>(moving->when.length());
        r.end_time.reset();
      }
    }
    const household view = moving ? without(h, *moving) : h;
    const people who = resolve_people(view, r.participants);
    if (!who.unknown.empty())
      return make_failure("unknown_participant",
                          "unknown participant" + std::string(who.unknown.size() > 1 ? "s " : " ") +
                              quoted(who.unknown) + " in the request \"" + r.title +
                              "\"; the household knows " + view.member_names());
    std::vector<const resource*> resources;
    std::vector<std::string> unknown_resources;
    for (const auto& name : r.resources) {
      if (const resource* res = view.find_resource(name)) resources.push_back(res);
      else unknown_resources.push_back(name);
    }
    if (!unknown_resources.empty())
      return make_failure("unknown_resource",
                          "unknown resource" + std::string(unknown_resources.size() > 1 ? "s " : " ") +
                              quoted(unknown_resources) + " in the request \"" + r.title +
                              "\"; the household has " + view.resource_names());
    auto out = schedule(view, context, r, who, resources);
    if (moving && !out.failed()) {
      out.data["event"].as_object()["moved_from"] = slot_json(moving->when);
      out.explanation = "Moving \"" + moving->title + "\" from " + describe(moving->when) + ". " + out.explanation;
    }
    return out;
  }

 private:
  static std::string quoted(const std::vector<std::string>& names) {
    std::vector<std::string> q;
    for (const auto& n : names) q.push_back("'" + n + "'");
    return join(q);
  }

  protocol::envelope schedule(const household& h, const agents::agent_context& context, const request& r,
                              const people& who, const std::vector<const resource*>& resources) const {
    const minute_t now = reference_now(h, context.input);
    const day_t today = day_of(now);
    int duration = r.duration_minutes.value_or(default_duration);
    if (!r.duration_minutes && r.start_time && r.end_time && *r.end_time > *r.start_time)
      duration = *r.end_time - *r.start_time;

    day_t first = today;
    int days = 7;
    if (r.date) {
      first = *r.date;
      days = 1;
    } else if (r.date_range) {
      first = std::max(today, r.date_range->first);
      days = static_cast<int>(std::min<day_t>(r.date_range->second - first + 1, 14));
    }
    std::optional<interval> requested;
    if (r.date && r.start_time)
      requested = interval{start_of(*r.date) + *r.start_time, start_of(*r.date) + *r.start_time + duration};

    std::pair<int, int> window{0, static_cast<int>(minutes_per_day)};
    if (r.time_window && !requested) window = *r.time_window;
    if (r.start_time && !requested) window = {*r.start_time, *r.start_time + duration};
    std::vector<slot_check> candidates;
    std::optional<slot_check> requested_check;
    if (requested) {
      requested_check = check_slot(h, who.members, *requested, now);
      // Alternatives: the same day first, then the following week.
      candidates = find_slots(h, who.members, resources, *r.date, 1, duration, window, now,
                              requested->start, max_alternatives);
      if (candidates.empty())
        candidates = find_slots(h, who.members, resources, *r.date + 1, 7, duration, window, now,
                                requested->start, max_alternatives);
      std::erase_if(candidates, [&](const slot_check& c) { return c.slot == *requested; });
    } else {
      candidates = find_slots(h, who.members, resources, first, days, duration, window, now,
                              std::nullopt, max_alternatives + 1);
    }
    if (!requested && candidates.empty())
      return make_failure("unschedulable", unschedulable(h, r, who, first, days, duration, window));

    const slot_check& chosen = requested ? *requested_check : candidates.front();
    json::array candidate_list;
    if (requested_check) candidate_list.push_back(candidate_json(*requested_check, true));
    for (const auto& c : candidates) candidate_list.push_back(candidate_json(c, false));

    json::array busy;
    for (const auto& b : chosen.busy)
      busy.push_back({{"name", b.name}, {"title", b.entry.title},
                      {"start", format_datetime(b.entry.when.start)},
                      {"end", format_datetime(b.entry.when.end)}});
    std::vector<std::string> resource_names;
    for (const auto* res : resources) resource_names.push_back(res->name);

    json::object out;
    out["event"] = {{"title", r.title.empty() ? std::string("Event") : r.title},
                     {"intent", r.intent},
                     {"participants", json::value_from(names_of(who.members))},
                     {"resources", json::value_from(resource_names)},
                     {"duration_minutes", duration}};
    out["requested_slot"] = requested ? json::value(slot_json(*requested)) : json::value(nullptr);
    out["candidate_slots"] = std::move(candidate_list);
    json::object recommended = slot_json(chosen.slot);
    recommended["score"] = chosen.score;
    out["recommended_slot"] = std::move(recommended);
    out["participants_available"] = json::value_from(chosen.available);
    out["participants_busy"] = std::move(busy);
    out["constraints_violated"] = violations_json(chosen, now);
    out["all_hard_constraints_hold"] = chosen.feasible();

    std::string reasoning = "Checked " + std::to_string(duration) + "-minute slots for " +
                            join(names_of(who.members)) +
                            (who.defaulted ? " (no participants named: the whole household)" : "") +
                            " against their calendars, " + std::to_string(h.hard_rules.size()) +
                            " hard rules and " + std::to_string(h.soft_rules.size()) +
                            " soft preferences";
    reasoning += requested ? "; the requested time is kept as the recommendation and " +
                                 std::to_string(candidates.size()) + " alternative(s) listed."
                           : "; the best of " + std::to_string(candidates.size()) +
                                 " non-overlapping feasible slot(s) is recommended.";
    if (!chosen.soft_violated.empty()) {
      std::vector<std::string> soft;
      for (const auto* rule : chosen.soft_violated) soft.push_back(rule->description);
      reasoning += " Unmet preferences: " + join(soft) + ".";
    }
    return make_envelope(std::move(out), explain(chosen, requested.has_value(), candidates),
                         chosen.feasible() ? 0.9 : 0.55, std::move(reasoning));
  }

  static std::string explain(const slot_check& chosen, bool requested,
                             const std::vector<slot_check>& alternatives) {
    if (chosen.feasible()) {
      std::string out = describe(chosen.slot) + " works: " + join(chosen.available) +
                        (chosen.available.size() == 1 ? " is" : " are") +
                        " free and every household rule holds";
      if (!chosen.soft_violated.empty()) out += " (one preference is not met)";
      return out + ".";
    }
    std::string out = "The " + std::string(requested ? "requested" : "best") + " slot " +
                      describe(chosen.slot) + " has problems: " + problems(chosen) + ".";
    if (!alternatives.empty())
      out += " Best alternative: " + describe(alternatives.front().slot) + ".";
    return out;
  }

  static std::string unschedulable(const household& h, const request& r, const people& who, day_t first, int days,
                                   int duration, std::pair<int, int> window) {
    std::string when = days == 1 ? describe_day(first)
                                 : "between " + describe_day(first) + " and " +
                                       describe_day(first + days - 1);
    std::vector<std::string> rules;
    for (const auto& rule : h.hard_rules) {
      const bool applies = rule.applies_to_role.empty() ||
                           std::ranges::any_of(who.members, [&](const member* m) { return m->role == rule.applies_to_role; });
      if (applies) rules.push_back("\"" + rule.description + "\"");
    }
    std::string out = "cannot schedule \"" + r.title + "\": no " + std::to_string(duration) +
                      "-minute slot " + when;
    if (window.first != 0 || window.second != minutes_per_day)
      out += " within " + format_clock(window.first) + "\u2013" + format_clock(window.second);
    out += " where " + join(names_of(who.members)) + (who.members.size() == 1 ? " is" : " are") + " free";
    if (!r.resources.empty()) out += ", the " + join(r.resources) + " available";
    out += " and the household rules hold (" + join(rules) + ")";
    return out;
  }

  static std::string describe_day(day_t day) {
    return std::string(weekday_name(weekday(day)).substr(0, 3)) + " " + format_date(day);
  }
};

}  // namespace

std::shared_ptr<agents::agent> make_scheduling(std::shared_ptr<calendar> cal) {
  return std::make_shared<scheduling_agent>(std::move(cal));
}

}  // namespace switchboard::scheduling
