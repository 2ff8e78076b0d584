// booking: the step that keeps the sample's word. It turns what the run
// decided (scheduling's event, resolution's plan, or the event a cancel
// names) into one call of calendar.book or calendar.cancel (tools.hpp),
// which re-check and write inside one transaction, and reports what the
// calendar says. The calls need the user's approval by default: the run
// pauses before the calendar changes, and a rejection ends the run as
// "declined" with nothing written. The call is journaled by the hub and
// keyed on the run, so a step run again after a crash writes nothing twice.
#include "detail.hpp"

#include <switchboard/agents/call_tool.hpp>
#include <switchboard/scheduling/agents.hpp>
#include <switchboard/scheduling/tools.hpp>

#include <boost/json/value_from.hpp>

#include <algorithm>
#include <stdexcept>

namespace switchboard::scheduling {
namespace {

using namespace detail;
namespace asio = boost::asio;

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
  plan p{text(event, "title"), *slot, string_list(event, "participants"), string_list(event, "resources"),
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
    p.participants = string_list(o, "participants");
    p.resources = string_list(o, "resources");
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


json::object result_data(std::string action, const plan& p, const std::string& driver,
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
  // int64: a size_t would make a uint64 value, which the validator (like
  // valijson) reads as neither integer nor number.
  data["next_event"] = current.index + 1 < current.count ? json::value(static_cast<std::int64_t>(current.index + 1))
                                                         : json::value(nullptr);
  data["replayed"] = false;
  return data;
}

// calendar.book's arguments for `p`.
json::value book_arguments(const plan& p) {
  json::object args = slot_json(p.slot);
  args["title"] = p.title;
  args["participants"] = json::value_from(p.participants);
  args["resources"] = json::value_from(p.resources);
  args["moved_from"] = p.moved_from ? json::value(slot_json(*p.moved_from)) : json::value(nullptr);
  return args;
}

// What the outcome says when the change had been made before this run of
// the step (the run was interrupted after it, or the step was retried).
constexpr const char* already_written =
    "note: this change was written by an earlier attempt of this step (the run was interrupted, or the step "
    "retried); nothing was written again";

// Whether the change was made before this run of the step: the call's
// result came from the step's journal, or the calendar had the change's
// key already (the call was cut off by a crash and made again).
bool replayed(const agents::agent_context& context, const json::object& result) {
  const auto flag = [](const json::object& o) {
    const auto* v = o.if_contains("replayed");
    return v && v->is_bool() && v->get_bool();
  };
  return flag(result) || (!context.tool_calls.empty() && context.tool_calls.back().is_object() &&
                          flag(context.tool_calls.back().get_object()));
}

// The tool's answer as an object with a string "action", or nullptr (it
// may come back from a stored journal, so it is checked like any input).
const json::object* answer_of(const agents::tool_result& result) {
  if (!result.ok() || !result.value().is_object()) return nullptr;
  const auto& o = result.value().get_object();
  const auto* action = o.if_contains("action");
  return action && action->is_string() ? &o : nullptr;
}

// Whether `o` (an answer's event, or a cancel's answer) is about `title`
// at `when`: a recorded answer replayed from the step's journal must be the
// answer to this change, not to another one.
bool same_event(const json::object& o, const std::string& title, const interval& when) {
  return text(o, "title") == title && text(o, "start") == format_datetime(when.start) &&
         text(o, "end") == format_datetime(when.end);
}

class booking_agent final : public calendar_agent {
 public:
  booking_agent(std::shared_ptr<calendar> cal, std::shared_ptr<const agents::tool_registry> tools)
      : calendar_agent("booking",
                       "Writes the confirmed or resolved event into the household's calendar (or removes a "
                       "cancelled one, or moves one) through calendar.book / calendar.cancel, which re-check "
                       "inside one transaction that the slot is still free.",
                       std::move(cal), std::move(tools)) {
    if (!this->tools() || !this->tools()->contains(book_tool) || !this->tools()->contains(cancel_tool) ||
        !this->tools()->contains(household_tool))
      throw std::invalid_argument("booking needs the calendar tools (make_calendar_tool_registry)");
  }

  asio::awaitable<protocol::envelope> run(agents::agent_context& context) override {
    if (!output_of(context, "nl_parser"))
      co_return make_failure("missing_input", "booking needs nl_parser's output and there is none");
    const current_event current = *event_in_progress(context);
    if (current.r.intent == "cancel") co_return co_await cancel(context, current.r);
    std::string problem;
    const auto p = plan_of(context, problem);
    if (!p) co_return make_failure("missing_input", problem);
    co_return co_await book(context, *p, current);
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
    return previous ? string_list(*previous, "booked") : std::vector<std::string>{};
  }

  asio::awaitable<protocol::envelope> book(agents::agent_context& context, plan p, current_event current) const {
    json::value arguments = book_arguments(p);
    // One booking per event of the request: the id keys the change.
    std::string call_id = "book-" + std::to_string(current.index);
    const std::string_view tool_name = book_tool;
    const agents::tool_result result =
        co_await agents::call_tool(context, name(), *tools(), tool_name, std::move(arguments), std::move(call_id));
    co_return booked(context, p, current, result);
  }

  static protocol::envelope booked(const agents::agent_context& context, const plan& p, const current_event& current,
                                   const agents::tool_result& result) {
    const std::vector<std::string> before = earlier_lines(context, current.index);
    if (!result.ok() && result.error().code == "rejected") return declined(p, current, before, result.error().message);
    if (!result.ok())
      return make_failure("calendar_error", "booking: " + std::string(book_tool) + ": " + result.error().message);
    const json::object* answer = answer_of(result);
    if (!answer) return make_failure("calendar_error", "booking: " + std::string(book_tool) + " gave no action");
    const std::string action = text(*answer, "action");
    const auto* event = answer->if_contains("event");
    if (!event || !event->is_object() || !same_event(event->get_object(), p.title, p.slot))
      return make_failure("calendar_error", "booking: " + std::string(book_tool) + " answered about another event");
    const std::string driver = text(event->get_object(), "driver");
    if (action == "not_booked") return not_booked(p, current, before, string_list(*answer, "problems"));
    if (action != "booked" && action != "moved")
      return make_failure("calendar_error", "booking: " + std::string(book_tool) + " answered '" + action + "'");
    std::string line = p.moved_from ? std::string(p.resolved ? "Moved (after resolution): " : "Moved: ")
                                    : std::string(p.resolved ? "Plan (after resolution): " : "Confirmed: ");
    if (p.moved_from)
      line += "\"" + p.title + "\" from " + describe(*p.moved_from) + " to " + describe(p.slot) +
              details(p.participants, p.resources, driver);
    else
      line += plan_line(p.title, p.slot, p.participants, p.resources, driver);
    if (!p.how.empty()) line += "\n  how: " + p.how;
    for (const auto& note : p.notes) line += "\n  note: preference not met: " + note;
    const bool again = replayed(context, *answer);
    if (again) line += std::string("\n  ") + already_written;
    std::vector<std::string> lines = before;
    lines.push_back(line);
    json::object data = result_data(action, p, driver, lines, current);
    data["replayed"] = again;
    return make_envelope(std::move(data), join(lines, "\n", "\n"), trust(context, p.resolved),
                         again ? "This event had already been written by this run (a step run again after a "
                                 "crash): the calendar was left as it was."
                               : "Wrote the event into the participants' calendars and the resources' bookings "
                                 "in one transaction, after checking again that all of them are free.");
  }

  static protocol::envelope not_booked(const plan& p, const current_event& current, std::vector<std::string> lines,
                                       const std::vector<std::string>& problems) {
    json::object data = result_data("not_booked", p, "", lines, current);
    data["problems"] = json::value_from(problems);
    data["next_event"] = nullptr;
    lines.push_back("Not booked: " + plan_line(p.title, p.slot, p.participants, p.resources, "") +
                    ": the calendar changed since it was checked (" + join(problems, "; ", "; ") + ")");
    return make_envelope(std::move(data), join(lines, "\n", "\n"), 0.95,
                         "Re-checked the slot inside the booking transaction: another booking took it "
                         "meanwhile, so nothing was written.");
  }

  // The user said no to the change: nothing was written, the run ends.
  static protocol::envelope declined(const plan& p, const current_event& current, std::vector<std::string> lines,
                                     const std::string& why) {
    json::object data = result_data("declined", p, "", lines, current);
    data["problems"] = json::array{json::value(why)};
    data["next_event"] = nullptr;
    lines.push_back("Not booked (declined): " + plan_line(p.title, p.slot, p.participants, p.resources, ""));
    return make_envelope(std::move(data), join(lines, "\n", "\n"), 0.95,
                         "The booking waited for approval and the user rejected it: " + why);
  }

  asio::awaitable<protocol::envelope> cancel(agents::agent_context& context, request r) const {
    // Read through the journaled tool: a step run again after the cancel
    // finds the event where the first run found it, so it asks for the
    // same change (which the calendar then knows) instead of failing.
    household_read h = co_await read_household(context);
    if (!h.value) co_return make_failure("calendar_error", h.problem);
    const minute_t now = reference_now(*h.value, context.input);
    const auto lookup = find_target(*h.value, r.title, r.participants, r.date, now);
    if (!lookup.found) co_return make_failure("event_not_found", "cannot cancel: " + lookup.problem);
    const target_event t = *lookup.found;
    json::object fields = slot_json(t.when);
    fields["title"] = t.title;
    json::value arguments = std::move(fields);
    std::string call_id = "cancel";
    const std::string_view tool_name = cancel_tool;
    const agents::tool_result result =
        co_await agents::call_tool(context, name(), *tools(), tool_name, std::move(arguments), std::move(call_id));
    co_return cancelled(context, t, r, result);
  }

  static protocol::envelope cancelled(const agents::agent_context& context, const target_event& t, const request& r,
                                      const agents::tool_result& result) {
    const plan p{t.title, t.when, t.participants, t.resources, std::nullopt, false, {}, {}};
    const current_event current{r, 0, 1};
    if (!result.ok() && result.error().code == "rejected") {
      json::object data = result_data("declined", p, t.driver, {}, current);
      data["problems"] = json::array{json::value(result.error().message)};
      return make_envelope(std::move(data),
                           "Not cancelled (declined): " + plan_line(t.title, t.when, t.participants, t.resources, ""),
                           0.95, "The cancellation waited for approval and the user rejected it.");
    }
    if (!result.ok() && result.error().code == "not_found")  // another run cancelled or moved it first
      return make_failure("event_not_found", "cannot cancel: " + result.error().message);
    if (!result.ok())
      return make_failure("calendar_error", "booking: " + std::string(cancel_tool) + ": " + result.error().message);
    const json::object* answer = answer_of(result);
    if (!answer || text(*answer, "action") != "cancelled" || !same_event(*answer, t.title, t.when))
      return make_failure("calendar_error", "booking: " + std::string(cancel_tool) + " gave no cancellation of " +
                                                "this event");
    const bool again = replayed(context, *answer);
    const std::vector<std::string> lines{"Cancelled: " + plan_line(t.title, t.when, t.participants, t.resources, "") +
                                         (t.driver.empty() ? "" : " (" + t.driver + " no longer drives)") +
                                         (again ? std::string("\n  ") + already_written : std::string())};
    json::object data = result_data("cancelled", p, t.driver, lines, current);
    data["replayed"] = again;
    return make_envelope(std::move(data), lines.front(), trust(context, false),
                         again ? "This cancellation had already been made by this run (a step run again after a "
                                 "crash): the calendar was left as it was."
                               : "Removed the event from every calendar and booking in one transaction.");
  }
};

}  // namespace

std::shared_ptr<agents::agent> make_booking(std::shared_ptr<calendar> cal,
                                            std::shared_ptr<const agents::tool_registry> tools) {
  return std::make_shared<booking_agent>(std::move(cal), std::move(tools));
}

}  // namespace switchboard::scheduling
