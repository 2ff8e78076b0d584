// Internals shared by the sample's native agents: the decoded request, slot
// and resource checks (drivers included), the event a cancel or move
// targets, envelope helpers.
#pragma once

#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/scheduling/calendar.hpp>
#include <switchboard/scheduling/household.hpp>

#include <boost/json/object.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::scheduling::detail {

namespace json = boost::json;

// nl_parser's data (nl_parser.output@1), decoded.
struct request {
  std::string intent = "create";
  std::string title;
  std::optional<day_t> date;
  std::optional<std::pair<day_t, day_t>> date_range;  // inclusive
  std::optional<int> start_time;  // minutes after midnight
  std::optional<int> end_time;
  std::optional<std::pair<int, int>> time_window;
  std::optional<int> duration_minutes;
  std::vector<std::string> participants;
  std::vector<std::string> resources;
  std::string flexibility = "flexible";
  std::string query_kind = "free_time";     // query: free_time, events, resource
  std::optional<day_t> original_date;       // modify: the day the event is on now
};
request decode_request(const json::object& data);
// The events of a request: data.events when it lists more than one
// (compound requests), else the request itself.
std::vector<request> decode_events(const json::object& data);

// The event the current steps work on: event `index` of nl_parser's
// request, where index is the latest booking step's next_event (0 before
// any). nullopt when nl_parser has not run.
struct current_event {
  request r;
  std::size_t index = 0;
  std::size_t count = 1;
};
std::optional<current_event> event_in_progress(const agents::agent_context& context);

// The participants as household members. Empty request participants mean
// the household members (in_household). Unknown names go to `unknown`.
struct people {
  std::vector<const member*> members;
  std::vector<std::string> unknown;
  bool defaulted = false;
};
people resolve_people(const household& h, const std::vector<std::string>& names);
std::vector<std::string> names_of(const std::vector<const member*>& members);

struct busy_person {
  std::string name;
  occurrence entry;
};

struct slot_check {
  interval slot;
  std::vector<std::string> available;
  std::vector<busy_person> busy;
  std::vector<const hard_rule*> hard_violated;
  std::vector<const soft_rule*> soft_violated;
  bool in_past = false;
  double score = 0;  // 1 minus the weights of unmet preferences; scaled down when infeasible
  bool feasible() const noexcept { return busy.empty() && hard_violated.empty() && !in_past; }
};
slot_check check_slot(const household& h, const std::vector<const member*>& who, interval slot,
                      minute_t now);

struct resource_check {
  const resource* res = nullptr;
  int needed = 1;
  bool capacity_ok = true;
  std::vector<occurrence> overlapping;
  bool needs_driver = false;   // a vehicle none of whose riders drives
  std::string driver;          // the free adult who drives, when one is needed and found
  bool driver_ok() const noexcept { return !needs_driver || !driver.empty(); }
  bool available() const noexcept { return capacity_ok && overlapping.empty() && driver_ok(); }
};
// How much of `res` the event needs: vehicles a seat per participant plus a
// driver when none of them drives (a member who drives, free for the whole
// slot, not one of the riders); rooms a place per participant; devices one.
resource_check check_resource(const household& h, const resource& res, const std::vector<const member*>& who,
                              interval slot);
bool is_child(const member& m);
// The first member who drives and is free during `slot`, or "".
std::string free_driver(const household& h, interval slot);

// Feasible slots of `duration` minutes on days [first, first + days), start
// times on a 30-minute grid within `window` (minutes after midnight), where
// every participant is free, every hard rule holds and every resource is
// available; best first: score, then closeness to `preferred_start`, then
// time. Overlapping slots are dropped after the first; at most `limit`.
std::vector<slot_check> find_slots(const household& h, const std::vector<const member*>& who,
                                   const std::vector<const resource*>& resources, day_t first,
                                   int days, int duration, std::pair<int, int> window,
                                   minute_t now, std::optional<minute_t> preferred_start,
                                   std::size_t limit);
bool resources_available(const household& h, const std::vector<const resource*>& resources,
                         const std::vector<const member*>& who, interval slot);

// The dated event a cancel or move is about: found by title (ignoring case;
// one may contain the other), among the participants' calendars (anyone's
// when none are named), on `date` when given, else the next one from now.
struct target_event {
  std::string title;
  interval when;
  std::vector<std::string> participants;  // members whose calendars hold it
  std::vector<std::string> resources;     // resources booked for it
  std::string driver;                     // a member who is not a participant (drives)
};
struct target_lookup {
  std::optional<target_event> found;
  std::string problem;  // why nothing was found: names what the calendars hold
};
target_lookup find_target(const household& h, const std::string& title,
                          const std::vector<std::string>& participants, std::optional<day_t> date, minute_t now);
// `h` without the target's entries (a move re-checks the new slot so).
household without(household h, const target_event& target);
// The household as the planning steps see it: for a move, without the event
// being moved. `error` is set when the event to move is not found.
household planning_view(const household& h, const request& r, minute_t now, std::string* error);
// The household as the steps after scheduling see it: without the event
// scheduling's `event` is moved from (its "moved_from"), if any.
household view_for_event(const household& h, const json::object& event);

// The input's "now", if it has one. Throws std::invalid_argument naming
// the value when it is not a date and time "YYYY-MM-DDTHH:MM".
std::optional<minute_t> input_now(const json::object& input);
// The reference "now": the input's "now" when set, else the household's.
// Throws as input_now does.
minute_t reference_now(const household& h, const json::value& input);
// The request text: the input itself when a string, else input["request"].
std::string request_text(const json::value& input);

// data of the latest envelope of `agent`, or nullptr.
const json::object* output_of(const agents::agent_context& context, std::string_view agent);

protocol::envelope make_envelope(json::object data, std::string explanation, double confidence,
                                 std::string reasoning);
protocol::envelope make_failure(std::string type, std::string message);

json::object slot_json(const interval& slot);
std::optional<interval> slot_from_json(const json::value* value);
// The slot scheduling recommended (its /recommended_slot), if it gave one.
std::optional<interval> recommended_slot(const json::object* scheduling_data);
std::string join(const std::vector<std::string>& items, std::string_view last = " and ",
                 std::string_view separator = ", ");
std::string format_score(double value);
// The string member `key` of `o`, or "" when it is missing or not a string.
std::string text(const boost::json::object& o, std::string_view key);
// The strings of the array member `key` of `o` (other items skipped); empty
// when it is missing or not an array.
std::vector<std::string> string_list(const boost::json::object& o, std::string_view key);

// A native agent's name, description, output schema "<name>.output@1" and
// calendar. It reads the household as it is at the start of its call
// either directly (a snapshot of the SQLite file) or, when it was given the
// calendar tools (tools.hpp), through calendar.household: then the read is
// a tool call the hub journals, so a step run again after a crash sees what
// its first run saw. Either way it blocks its thread briefly, so the hub
// runs it on its pool.
class calendar_agent : public agents::agent {
 public:
  calendar_agent(std::string name, std::string description, std::shared_ptr<scheduling::calendar> cal,
                 std::shared_ptr<const agents::tool_registry> tools = nullptr)
      : name_(std::move(name)),
        description_(std::move(description)),
        calendar_(std::move(cal)),
        tools_(std::move(tools)) {}

  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return description_; }
  std::string output_schema() const override { return name_ + ".output@1"; }
  bool blocks_thread() const noexcept override { return true; }
  bool uses_tools() const noexcept override { return tools_ != nullptr; }

 protected:
  struct household_read {
    std::optional<household> value;
    std::string problem;  // why there is none: names the agent and the calendar or tool
  };
  boost::asio::awaitable<household_read> read_household(agents::agent_context& context) const;

  scheduling::calendar& cal() const noexcept { return *calendar_; }
  // The calendar tools; null when the agent reads the calendar directly.
  const agents::tool_registry* tools() const noexcept { return tools_.get(); }

 private:
  std::string name_;
  std::string description_;
  std::shared_ptr<scheduling::calendar> calendar_;
  std::shared_ptr<const agents::tool_registry> tools_;
};

// A calendar_agent that computes its answer synchronously from the household.
class native_agent : public calendar_agent {
 public:
  using calendar_agent::calendar_agent;
  boost::asio::awaitable<protocol::envelope> run(agents::agent_context& context) override;

 protected:
  // `h`: the household with the calendar as it is at the start of the call.
  virtual protocol::envelope compute(const agents::agent_context& context, const household& h) const = 0;
};

}  // namespace switchboard::scheduling::detail
