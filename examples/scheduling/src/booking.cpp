// booking: the step that keeps the sample's word. It writes what the run
// decided into the household's calendar (participants' calendars, the
// driver's, the resources' bookings) in one transaction, or removes a
// cancelled event, or moves one. Inside the transaction it checks again
// that everyone and everything is still free: another process may have
// booked the slot since conflict_detection looked, and then nothing is
// written and the step says so. Each change is keyed on the run's id and
// the event's index, so a step the hub runs again after a crash returns the
// first result and writes nothing.
#include "detail.hpp"

#include <switchboard/scheduling/agents.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

namespace switchboard::scheduling {
namespace {

using namespace detail;


std::vector<std::string> texts(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const auto* v = o.if_contains(key); v && v->is_array())
    for (const auto& item : v->get_array())
      if (item.is_string()) out.emplace_back(item.get_string());
  return out;
}

// SWITCHBOARD_FAULT_KILL_AFTER_BOOKING=1 (a testing hook for crash tests,
// like the CLI's SWITCHBOARD_FAULT_KILL_AFTER_WRITES): the process kills
// itself right after the calendar committed a booking, before the hub
// records the step, so a test can show that the re-run step books nothing.
void maybe_die_after_booking() {
  const char* value = std::getenv("SWITCHBOARD_FAULT_KILL_AFTER_BOOKING");
  if (value && std::string_view(value) == "1") std::raise(SIGKILL);
}

// What is to be written: the event, its slot, where it came from.
struct plan {
  std::string title;
  interval slot;
  std::vector<std::string> participants;
  std::vector<std::string> resources;
  std::optional<interval> moved_from;
  bool resolved = false;
  std::string how;                  // the resolution strategy applied
  std::vector<std::string> notes;   // unmet preferences
};

std::string details(const std::vector<std::string>& participants, const std::vector<std::string>& resources,
                    const std::string& driver) {
  std::string out;
  if (!participants.empty()) out += ", with " + join(participants);
  if (!resources.empty()) out += ", using the " + join(resources);
  if (!driver.empty()) out += ", driven by " + driver;
  return out;
}

std::string plan_line(const std::string& title, const interval& slot, const std::vector<std::string>& participants,
                      const std::vector<std::string>& resources, const std::string& driver) {
  return "\"" + title + "\", " + describe(slot) + details(participants, resources, driver);
}

bool has_conflicts(const json::object* conflicts) {
  const auto* v = conflicts ? conflicts->if_contains("has_conflicts") : nullptr;
  return v && v->is_bool() && v->get_bool();
}

std::optional<plan> plan_of(const agents::agent_context& context, std::string& problem) {
  const json::object* sched = output_of(context, "scheduling");
  const auto* event_value = sched ? sched->if_contains("event") : nullptr;
  const auto slot = recommended_slot(sched);
  if (!event_value || !event_value->is_object() || !slot) {
    problem = "booking needs scheduling's event and recommended_slot and there are none";
    return std::nullopt;
  }
  const auto& event = event_value->get_object();
  plan p{text(event, "title"), *slot, texts(event, "participants"), texts(event, "resources"),
         slot_from_json(event.if_contains("moved_from")), false, {}, {}};
  const json::object* conflicts = output_of(context, "conflict_detection");
  if (has_conflicts(conflicts)) {
    // The run went through resolution: its plan is what to book.
    const json::object* res = output_of(context, "resolution");
    const auto* chosen = res ? res->if_contains("plan") : nullptr;
    const auto planned = slot_from_json(chosen);
    if (!planned) {
      problem = "booking: the conflicts were not resolved (resolution has no plan)";
      return std::nullopt;
    }
    const auto& o = chosen->get_object();
    p.slot = *planned;
    p.participants = texts(o, "participants");
    p.resources = texts(o, "resources");
    if (!text(o, "title").empty()) p.title = text(o, "title");
    p.resolved = true;
    const auto* index = res->if_contains("recommended");
    const auto* list = res->if_contains("strategies");
    if (index && index->is_int64() && list && list->is_array() &&
        static_cast<std::size_t>(index->get_int64()) < list->get_array().size()) {
      const auto& s = list->get_array()[static_cast<std::size_t>(index->get_int64())];
      if (s.is_object()) p.how = text(s.get_object(), "description");
    }
  } else if (conflicts) {
    if (const auto* w = conflicts->if_contains("warnings"); w && w->is_array())
      for (const auto& item : w->get_array())
        if (item.is_object()) p.notes.push_back(text(item.get_object(), "description"));
  }
  if (p.title.empty()) p.title = "Event";
  return p;
}

// Whether the plan can still be written as the calendar is now: every
// participant free, every resource free and large enough, a driver when one
// is needed. Fills the entries to write.
std::vector<std::string> recheck(const household& h, const plan& p, std::vector<owned_entry>& add,
                                 std::string& driver) {
  std::vector<std::string> problems;
  const people who = resolve_people(h, p.participants);
  for (const auto& name : who.unknown) problems.push_back("unknown participant '" + name + "'");
  for (const member* m : who.members)
    for (const auto& e : m->calendar)
      for (const auto& o : occurrences(e, p.slot))
        problems.push_back(m->name + " is busy: " + o.title + ", " + describe(o.when));
  for (const auto& name : p.resources) {
    const resource* res = h.find_resource(name);
    if (!res) {
      problems.push_back("unknown resource '" + name + "'");
      continue;
    }
    const resource_check c = check_resource(h, *res, who.members, p.slot);
    for (const auto& o : c.overlapping)
      problems.push_back("the " + res->name + " is booked: " + o.title + (o.by.empty() ? "" : " by " + o.by) + ", " +
                         describe(o.when));
    if (!c.capacity_ok) problems.push_back("the " + res->name + " is too small");
    if (!c.driver_ok()) problems.push_back("the " + res->name + " needs a driver and no adult who drives is free");
    if (!c.driver.empty() && driver.empty()) driver = c.driver;
    add.push_back({res->name, true, {p.title, who.members.empty() ? "" : who.members.front()->name, p.slot, 0, 0, 0}});
  }
  for (const member* m : who.members) add.push_back({m->name, false, {p.title, "", p.slot, 0, 0, 0}});
  if (!driver.empty()) add.push_back({driver, false, {p.title, "driving", p.slot, 0, 0, 0}});
  return problems;
}

class booking_agent final : public native_agent {
 public:
  booking_agent(std::shared_ptr<calendar> cal, std::chrono::milliseconds hold)
      : native_agent("booking",
                     "Writes the confirmed or resolved event into the household's calendar (or removes a "
                     "cancelled one, or moves one), re-checking inside one transaction that the slot is "
                     "still free.",
                     std::move(cal)),
        hold_(hold) {}

 protected:
  protocol::envelope compute(const agents::agent_context& context, const household& h) const override {
    const json::object* parsed = output_of(context, "nl_parser");
    if (!parsed) return make_failure("missing_input", "booking needs nl_parser's output and there is none");
    // Tests of racing processes widen the window between the checks of the
    // earlier steps and this transaction (config "booking_hold_ms").
    if (hold_.count() > 0) std::this_thread::sleep_for(hold_);
    const auto current = event_in_progress(context);
    if (current->r.intent == "cancel") return cancel(context, h, current->r);
    std::string problem;
    const auto p = plan_of(context, problem);
    if (!p) return make_failure("missing_input", problem);
    return book(context, *p, *current);
  }

 private:
  static double trust(const agents::agent_context& context, bool resolved) {
    double c = 0.95;
    if (const auto* parsed = context.outputs.latest("nl_parser")) c = std::min(c, parsed->confidence);
    if (resolved)
      if (const auto* res = context.outputs.latest("resolution")) c = std::min(c, res->confidence);
    return c;
  }

  // The outcome lines of the events booked earlier in this run (compound).
  static std::vector<std::string> earlier_lines(const agents::agent_context& context, std::size_t index) {
    if (index == 0) return {};
    const json::object* previous = output_of(context, "booking");
    return previous ? texts(*previous, "booked") : std::vector<std::string>{};
  }

  protocol::envelope book(const agents::agent_context& context, const plan& p, const current_event& current) const {
    calendar_change change;
    change.run_id = context.workflow_id;
    change.item = static_cast<int>(current.index);
    if (p.moved_from) change.remove.push_back({"", false, {p.title, "", p.moved_from, 0, 0, 0}});
    const double confidence = trust(context, p.resolved);
    const std::vector<std::string> before = earlier_lines(context, current.index);
    change.decide = [&](const household& now) {
      calendar_decision d;
      std::string driver;
      d.problems = recheck(now, p, d.add, driver);
      if (!d.problems.empty()) return d;
      std::string line = p.moved_from ? std::string(p.resolved ? "Moved (after resolution): " : "Moved: ")
                                      : std::string(p.resolved ? "Plan (after resolution): " : "Confirmed: ");
      if (p.moved_from)
        line += "\"" + p.title + "\" from " + describe(*p.moved_from) + " to " + describe(p.slot) +
                details(p.participants, p.resources, driver);
      else
        line += plan_line(p.title, p.slot, p.participants, p.resources, driver);
      if (!p.how.empty()) line += "\n  how: " + p.how;
      for (const auto& note : p.notes) line += "\n  note: preference not met: " + note;
      std::vector<std::string> lines = before;
      lines.push_back(line);
      json::object data = result_data(p.moved_from ? "moved" : "booked", p, driver, lines, current);
      d.result = json::serialize(json::object{{"data", std::move(data)}, {"explanation", join(lines, "\n", "\n")}});
      return d;
    };
    const apply_result applied = cal().apply(change);
    if (applied.outcome == apply_result::status::applied) maybe_die_after_booking();
    return finish(applied, confidence, p, current, before);
  }

  static json::object result_data(std::string action, const plan& p, const std::string& driver,
                                  const std::vector<std::string>& lines, const current_event& current) {
    json::object event = slot_json(p.slot);
    event["title"] = p.title;
    event["participants"] = json::value_from(p.participants);
    event["resources"] = json::value_from(p.resources);
    event["driver"] = driver.empty() ? json::value(nullptr) : json::value(driver);
    json::object data;
    data["action"] = std::move(action);
    data["event"] = std::move(event);
    data["moved_from"] = p.moved_from ? json::value(slot_json(*p.moved_from)) : json::value(nullptr);
    data["problems"] = json::array{};
    data["booked"] = json::value_from(lines);
    data["next_event"] = current.index + 1 < current.count ? json::value(current.index + 1) : json::value(nullptr);
    data["replayed"] = false;
    return data;
  }

  static protocol::envelope finish(const apply_result& r, double confidence, const plan& p,
                                   const current_event& current, const std::vector<std::string>& before) {
    if (r.outcome == apply_result::status::refused) {
      json::object data = result_data("not_booked", p, "", before, current);
      data["problems"] = json::value_from(r.problems);
      data["next_event"] = nullptr;
      std::string line = "Not booked: " + plan_line(p.title, p.slot, p.participants, p.resources, "") +
                         ": the calendar changed since it was checked (" + join(r.problems, "; ", "; ") + ")";
      std::vector<std::string> lines = before;
      lines.push_back(line);
      return make_envelope(std::move(data), join(lines, "\n", "\n"), 0.95,
                           "Re-checked the slot inside the booking transaction: another booking took it "
                           "meanwhile, so nothing was written.");
    }
    return stored_envelope(r, confidence);
  }

  // The result as the calendar stored it (the first time, or a replay).
  static protocol::envelope stored_envelope(const apply_result& r, double confidence) {
    boost::system::error_code ec;
    json::value stored = json::parse(r.result, ec);
    if (ec || !stored.is_object() || !stored.as_object().contains("data") ||
        !stored.as_object()["data"].is_object())
      return make_failure("calendar_error", "booking: the calendar holds a malformed result for this step");
    json::object data = stored.as_object()["data"].as_object();
    const bool replayed = r.outcome == apply_result::status::replayed;
    data["replayed"] = replayed;
    const auto* explanation = stored.as_object().if_contains("explanation");
    return make_envelope(std::move(data), explanation && explanation->is_string() ? std::string(explanation->get_string()) : "",
                         confidence,
                         replayed ? "This step had already been applied by this run (a re-run after a crash): "
                                    "the calendar was left as it was."
                                  : "Wrote the event into the participants' calendars and the resources' bookings "
                                    "in one transaction, after checking again that all of them are free.");
  }

  protocol::envelope cancel(const agents::agent_context& context, const household& h, const request& r) const {
    const minute_t now = reference_now(h, context.input);
    const auto lookup = find_target(h, r.title, r.participants, r.date, now);
    if (!lookup.found) return make_failure("event_not_found", "cannot cancel: " + lookup.problem);
    const target_event& t = *lookup.found;
    calendar_change change;
    change.run_id = context.workflow_id;
    change.remove.push_back({"", false, {t.title, "", t.when, 0, 0, 0}});
    change.decide = [&](const household&) {
      calendar_decision d;
      plan p{t.title, t.when, t.participants, t.resources, std::nullopt, false, {}, {}};
      const std::vector<std::string> lines{"Cancelled: " + plan_line(t.title, t.when, t.participants, t.resources, "") +
                                           (t.driver.empty() ? "" : " (" + t.driver + " no longer drives)")};
      json::object data = result_data("cancelled", p, t.driver, lines, current_event{r, 0, 1});
      d.result = json::serialize(json::object{{"data", std::move(data)}, {"explanation", lines.front()}});
      return d;
    };
    const apply_result applied = cal().apply(change);
    if (applied.outcome == apply_result::status::refused)  // another run cancelled or moved it first
      return make_failure("event_not_found", "cannot cancel: " + join(applied.problems, "; ", "; "));
    if (applied.outcome == apply_result::status::applied) maybe_die_after_booking();
    return stored_envelope(applied, trust(context, false));
  }

  std::chrono::milliseconds hold_;
};

}  // namespace

std::shared_ptr<agents::agent> make_booking(std::shared_ptr<calendar> cal, std::chrono::milliseconds hold) {
  return std::make_shared<booking_agent>(std::move(cal), hold);
}

}  // namespace switchboard::scheduling
