// The calendar tools (tools.hpp): two that read the household's calendar
// and two that change it, each a thin layer over calendar.hpp. The changes
// re-check the slot inside the calendar's transaction, so what an earlier
// step checked and another process booked since is refused, not doubled.
#include <switchboard/scheduling/tools.hpp>

#include "detail.hpp"

#include <switchboard/agents/tool.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/scheduling/agents.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <thread>

namespace switchboard::scheduling {
namespace {

using namespace detail;
namespace asio = boost::asio;

constexpr int max_event_days = 31;

// ---- schemas ------------------------------------------------------------

json::object date_schema() {
  return {{"type", "string"}, {"pattern", "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}, {"description", "YYYY-MM-DD"}};
}
json::object datetime_schema() {
  return {{"type", "string"},
          {"pattern", "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}$"},
          {"description", "YYYY-MM-DDTHH:MM, household-local time"}};
}
json::object names_schema(std::string_view what, int min_items = 0) {
  return {{"type", "array"},
          {"minItems", min_items},
          {"maxItems", 50},
          {"items", json::object{{"type", "string"}, {"minLength", 1}, {"maxLength", 100}}},
          {"description", what}};
}
json::object title_schema() { return {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}}; }
json::object object_schema(json::object properties, json::array required) {
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

// ---- the tools ----------------------------------------------------------

// A tool whose work is synchronous: a calendar read or one transaction.
class calendar_tool : public agents::tool {
 public:
  struct traits {
    std::string name;
    std::string description;
    json::object parameters;
    bool needs_approval = false;
    bool idempotent = true;
  };
  calendar_tool(traits t, std::shared_ptr<calendar> cal) : traits_(std::move(t)), calendar_(std::move(cal)) {}

  std::string_view name() const noexcept override { return traits_.name; }
  std::string_view description() const noexcept override { return traits_.description; }
  json::object parameters() const override { return traits_.parameters; }
  bool needs_approval() const noexcept override { return traits_.needs_approval; }
  bool idempotent() const noexcept override { return traits_.idempotent; }

  asio::awaitable<agents::tool_result> call(agents::tool_context& context, const json::value& arguments) override {
    try {
      co_return handle(context, arguments);
    } catch (const data_error& e) {
      co_return agents::tool_result::failure("calendar_error", e.what());
    }
  }

 protected:
  // `arguments`: an object, validated against parameters().
  virtual agents::tool_result handle(const agents::tool_context& context, const json::value& arguments) = 0;
  calendar& cal() const noexcept { return *calendar_; }

 private:
  traits traits_;
  std::shared_ptr<calendar> calendar_;
};

class household_reader final : public calendar_tool {
 public:
  explicit household_reader(std::shared_ptr<calendar> cal)
      : calendar_tool({household_tool,
                       "The household: its members (names, aliases, roles, who drives), shared resources "
                       "(vehicles, rooms, devices with capacity), rules (hard limits and soft preferences) and "
                       "the reference time 'now'. With calendars: true, also every member's calendar and every "
                       "resource's bookings (entries with 'every' repeat weekly).",
                       object_schema({{"calendars", {{"type", "boolean"}}}}, {}), false, true},
                      std::move(cal)) {}

 private:
  agents::tool_result handle(const agents::tool_context&, const json::value& arguments) override {
    const auto* calendars = arguments.as_object().if_contains("calendars");
    return json::value(sample_context(cal().snapshot(), calendars && calendars->as_bool()));
  }
};

class events_reader final : public calendar_tool {
 public:
  explicit events_reader(std::shared_ptr<calendar> cal)
      : calendar_tool({events_tool,
                       "What is on the calendars from one day to another (at most 31 days): each entry of the "
                       "named members and resources (everyone's and everything's without 'who'), weekly ones "
                       "expanded, with who, kind (member or resource), title, by and start and end.",
                       object_schema({{"from", date_schema()},
                                      {"to", date_schema()},
                                      {"who", names_schema("members or resources, by name or alias (leave it out "
                                                           "for everyone's)", 1)}},
                                     {"from"}),
                       false, true},
                      std::move(cal)) {}

 private:
  agents::tool_result handle(const agents::tool_context&, const json::value& value) override {
    const json::object& arguments = value.as_object();
    const auto first = parse_date(arguments.at("from").as_string());
    const auto* to = arguments.if_contains("to");
    const auto last = to ? parse_date(to->as_string()) : first;
    if (!first || !last) return agents::tool_result::failure("invalid_arguments", "from and to must be real dates");
    if (*last < *first || *last - *first >= max_event_days)
      return agents::tool_result::failure("invalid_arguments", "to must be on or after from, at most " +
                                                                   std::to_string(max_event_days - 1) + " days later");
    const household h = cal().snapshot();
    const interval range{start_of(*first), start_of(*last + 1)};
    // The canonical names asked for; none: everyone and everything.
    const auto* who = arguments.if_contains("who");
    std::vector<std::string> wanted;
    std::vector<std::string> unknown;
    if (who)
      for (const auto& w : who->as_array()) {
        if (const member* m = h.find_member(w.as_string()))
          wanted.push_back(m->name);
        else if (const resource* r = h.find_resource(w.as_string()))
          wanted.push_back(r->name);
        else
          unknown.emplace_back(w.as_string());
      }
    if (!unknown.empty())
      return agents::tool_result::failure("not_found", "unknown member or resource: " + join(unknown) +
                                                           " (members: " + h.member_names() +
                                                           "; resources: " + h.resource_names() + ")");
    const auto asked = [&](const std::string& name) {
      return !who || std::ranges::find(wanted, name) != wanted.end();
    };
    std::vector<json::object> events;
    auto add = [&](const std::string& owner, const char* kind, const std::vector<calendar_entry>& entries) {
      for (const auto& e : entries)
        for (const auto& o : occurrences(e, range)) {
          json::object event = slot_json(o.when);
          event["who"] = owner;
          event["kind"] = kind;
          event["title"] = o.title;
          if (!o.by.empty()) event["by"] = o.by;
          events.push_back(std::move(event));
        }
    };
    for (const auto& m : h.members)
      if (asked(m.name)) add(m.name, "member", m.calendar);
    for (const auto& r : h.resources)
      if (asked(r.name)) add(r.name, "resource", r.bookings);
    std::ranges::stable_sort(events, [](const json::object& a, const json::object& b) {
      return a.at("start").as_string() < b.at("start").as_string();
    });
    json::array out;
    for (auto& e : events) out.push_back(std::move(e));
    return json::value(
        json::object{{"from", format_date(*first)}, {"to", format_date(*last)}, {"events", std::move(out)}});
  }
};

// ---- changes ------------------------------------------------------------

// SWITCHBOARD_FAULT_KILL_AFTER_BOOKING=1 (a testing hook for crash tests,
// like the CLI's SWITCHBOARD_FAULT_KILL_AFTER_WRITES): the process kills
// itself right after the calendar committed a change, before the hub
// records the call's result, so a test can show that the call made again
// changes nothing.
void maybe_die_after_change() {
  const char* value = std::getenv("SWITCHBOARD_FAULT_KILL_AFTER_BOOKING");
  if (value && std::string_view(value) == "1") std::raise(SIGKILL);
}

// The key of a change: the run and the call, so that the same call made
// again (a step re-run after a crash) is recognised; "" outside a run.
std::string change_key(const agents::tool_context& context) {
  if (context.workflow_id.empty() || context.call_id.empty()) return {};
  return context.workflow_id + "/" + context.call_id;
}


// What calendar.book is asked to write.
struct booking_request {
  std::string title;
  interval slot;
  std::vector<std::string> participants;
  std::vector<std::string> resources;
  std::optional<interval> moved_from;
};

// Whether the request can still be written as the calendar is now: every
// participant free, every resource free and large enough, a driver when one
// is needed. Fills the entries to write.
std::vector<std::string> recheck(const household& h, const booking_request& b, std::vector<owned_entry>& add,
                                 std::string& driver) {
  std::vector<std::string> problems;
  const people who = resolve_people(h, b.participants);
  for (const auto& name : who.unknown) problems.push_back("unknown participant '" + name + "'");
  for (const member* m : who.members)
    for (const auto& e : m->calendar)
      for (const auto& o : occurrences(e, b.slot))
        problems.push_back(m->name + " is busy: " + o.title + ", " + describe(o.when));
  for (const auto& name : b.resources) {
    const resource* res = h.find_resource(name);
    if (!res) {
      problems.push_back("unknown resource '" + name + "'");
      continue;
    }
    const resource_check c = check_resource(h, *res, who.members, b.slot);
    for (const auto& o : c.overlapping)
      problems.push_back("the " + res->name + " is booked: " + o.title + (o.by.empty() ? "" : " by " + o.by) + ", " +
                         describe(o.when));
    if (!c.capacity_ok) problems.push_back("the " + res->name + " is too small");
    if (!c.driver_ok()) problems.push_back("the " + res->name + " needs a driver and no adult who drives is free");
    if (!c.driver.empty() && driver.empty()) driver = c.driver;
    add.push_back({res->name, true, {b.title, who.members.empty() ? "" : who.members.front()->name, b.slot, 0, 0, 0}});
  }
  for (const member* m : who.members) add.push_back({m->name, false, {b.title, "", b.slot, 0, 0, 0}});
  if (!driver.empty()) add.push_back({driver, false, {b.title, "driving", b.slot, 0, 0, 0}});
  return problems;
}

json::object booking_result(std::string action, const booking_request& b, const std::string& driver,
                            std::vector<std::string> problems) {
  json::object event = slot_json(b.slot);
  event["title"] = b.title;
  event["participants"] = json::value_from(b.participants);
  event["resources"] = json::value_from(b.resources);
  event["driver"] = driver.empty() ? json::value(nullptr) : json::value(driver);
  return {{"action", std::move(action)},
          {"event", std::move(event)},
          {"moved_from", b.moved_from ? json::value(slot_json(*b.moved_from)) : json::value(nullptr)},
          {"problems", json::value_from(problems)},
          {"replayed", false}};
}

// What the calendar stores under a change's key: the change asked for
// (tool and arguments) and the tool's answer.
std::string stored_change(std::string_view tool, const json::value& arguments, const json::object& answer) {
  return json::serialize(json::object{{"tool", tool}, {"arguments", arguments}, {"answer", answer}});
}

// What a change tool answers: `if_refused`; the new change's answer; or,
// when the key was used before, the answer stored then, marked replayed,
// provided it was the same change. A different change under the same key
// (a call id used twice in a run) is refused, never answered with another
// change's result.
agents::tool_result answer(const agents::tool_context& context, std::string_view tool, const json::value& arguments,
                           const apply_result& applied, agents::tool_result if_refused) {
  if (applied.outcome == apply_result::status::refused) return if_refused;
  if (applied.outcome == apply_result::status::applied) maybe_die_after_change();
  boost::system::error_code ec;
  json::value stored = json::parse(applied.result, ec);
  auto* record = stored.if_object();
  auto* answer = record ? record->if_contains("answer") : nullptr;
  if (ec || !answer || !answer->is_object() || !record->contains("tool") || !record->contains("arguments"))
    return agents::tool_result::failure("calendar_error", "the calendar holds a malformed result for this change");
  if (applied.outcome == apply_result::status::applied) return std::move(*answer);
  if (record->at("tool") != json::value(tool) || record->at("arguments") != arguments)
    return agents::tool_result::failure(
        "key_conflict", "call id '" + context.call_id + "' was already used in this run for another change (" +
                            json::serialize(record->at("tool")) + " " + json::serialize(record->at("arguments")) +
                            "): nothing was changed; make this call with an id of its own");
  answer->as_object()["replayed"] = true;
  return std::move(*answer);
}

class booker final : public calendar_tool {
 public:
  booker(std::shared_ptr<calendar> cal, const calendar_tool_options& options)
      : calendar_tool(
            {book_tool,
             "Books an event into the household's calendar (participants, resources, and a free driver when "
             "a vehicle needs one), re-checking in one transaction that all are free; with moved_from, moves "
             "the event from there. Nothing is written when a check fails (action not_booked, with the problems).",
             object_schema(
                 {{"title", title_schema()},
                  {"start", datetime_schema()},
                  {"end", datetime_schema()},
                  {"participants", names_schema("members, by name or alias; empty: the household")},
                  {"resources", names_schema("resources, by name or alias")},
                  {"moved_from",
                   {{"anyOf", json::array{object_schema({{"start", datetime_schema()}, {"end", datetime_schema()}},
                                                        {"start", "end"}),
                                          json::object{{"type", "null"}}}}}}},
                 {"title", "start", "end", "participants", "resources"}),
             options.confirm_changes, true},
            std::move(cal)),
        hold_(options.booking_hold) {}

 private:
  agents::tool_result handle(const agents::tool_context& context, const json::value& value) override {
    const json::object& arguments = value.as_object();
    booking_request b{std::string(arguments.at("title").as_string()),
                      {},
                      string_list(arguments, "participants"),
                      string_list(arguments, "resources"),
                      std::nullopt};
    const auto slot = slot_from_json(&value);
    if (!slot)
      return agents::tool_result::failure("invalid_arguments", "start and end must be real times, end after start");
    b.slot = *slot;
    if (const auto* from = arguments.if_contains("moved_from"); from && !from->is_null()) {
      b.moved_from = slot_from_json(from);
      if (!b.moved_from)
        return agents::tool_result::failure("invalid_arguments", "moved_from must be real times, end after start");
    }
    // Tests of racing processes widen the window between the checks of the
    // earlier steps and this transaction (config "booking_hold_ms").
    if (hold_.count() > 0) std::this_thread::sleep_for(hold_);
    calendar_change change;
    change.run_id = change_key(context);
    if (b.moved_from) change.remove.push_back({"", false, {b.title, "", b.moved_from, 0, 0, 0}});
    change.decide = [&](const household& now) {
      calendar_decision d;
      std::string driver;
      d.problems = recheck(now, b, d.add, driver);
      if (d.problems.empty())
        d.result = stored_change(name(), value, booking_result(b.moved_from ? "moved" : "booked", b, driver, {}));
      return d;
    };
    const apply_result applied = cal().apply(change);
    return answer(context, name(), value, applied, json::value(booking_result("not_booked", b, "", applied.problems)));
  }

  std::chrono::milliseconds hold_;
};

class canceller final : public calendar_tool {
 public:
  canceller(std::shared_ptr<calendar> cal, const calendar_tool_options& options)
      : calendar_tool(
            {cancel_tool,
             "Cancels a dated event (its title, start and end): removed from every calendar and booking, "
             "the driver's entry included.",
             object_schema({{"title", title_schema()}, {"start", datetime_schema()}, {"end", datetime_schema()}},
                           {"title", "start", "end"}),
             options.confirm_changes, true},
            std::move(cal)) {}

 private:
  agents::tool_result handle(const agents::tool_context& context, const json::value& value) override {
    const json::object& arguments = value.as_object();
    const std::string title(arguments.at("title").as_string());
    const auto slot = slot_from_json(&value);
    if (!slot)
      return agents::tool_result::failure("invalid_arguments", "start and end must be real times, end after start");
    calendar_change change;
    change.run_id = change_key(context);
    change.remove.push_back({"", false, {title, "", slot, 0, 0, 0}});
    change.decide = [&](const household&) {
      calendar_decision d;
      json::object result = slot_json(*slot);
      result["action"] = "cancelled";
      result["title"] = title;
      result["replayed"] = false;
      d.result = stored_change(name(), value, result);
      return d;
    };
    const apply_result applied = cal().apply(change);
    return answer(context, name(), value, applied,
                  agents::tool_result::failure("not_found", join(applied.problems, "; ", "; ")));
  }
};

}  // namespace

std::vector<std::shared_ptr<agents::tool>> make_calendar_tools(std::shared_ptr<calendar> cal,
                                                               const calendar_tool_options& options) {
  return {std::make_shared<household_reader>(cal), std::make_shared<events_reader>(cal),
          std::make_shared<booker>(cal, options), std::make_shared<canceller>(cal, options)};
}

std::shared_ptr<agents::tool_registry> make_calendar_tool_registry(std::shared_ptr<calendar> cal,
                                                                   const calendar_tool_options& options) {
  auto registry = std::make_shared<agents::tool_registry>();
  for (auto& t : make_calendar_tools(std::move(cal), options)) registry->add(std::move(t), std::string(builtin_origin));
  return registry;
}

}  // namespace switchboard::scheduling
