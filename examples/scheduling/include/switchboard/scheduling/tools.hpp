// The household's calendar as tools (agents/tool.hpp): what the sample's
// LLM-backed agents call instead of having the calendars pasted into their
// prompts, what the rule-based agents call offline, and the only way the
// booking step changes the calendar.
//
//   calendar.household  {"calendars": bool}  the household in the data files'
//                       form (sample_context): name, now, members, resources,
//                       rules; with calendars, every member's calendar and
//                       every resource's bookings too. Read only.
//   calendar.events     {"from": "YYYY-MM-DD", "to": "YYYY-MM-DD", "who": [names]}
//                       the dated occurrences (weekly entries expanded) of
//                       the named members and resources (everyone's when
//                       "who" is missing) over at most 31 days. Read only.
//   calendar.book       {"title", "start", "end", "participants", "resources",
//                       "moved_from": {"start", "end"} | null}
//                       writes the event (and its driver, when a vehicle
//                       needs one) into the calendar in one transaction,
//                       re-checking that everyone and everything is free;
//                       with moved_from, the event there is removed first.
//                       Answers {"action": "booked" | "moved" | "not_booked",
//                       "event": {..., "driver"}, "moved_from", "problems",
//                       "replayed"}.
//   calendar.cancel     {"title", "start", "end"} removes that event from
//                       every calendar and booking; {"action": "cancelled",
//                       ...} or the error not_found.
//
// calendar.book and calendar.cancel need the user's approval when
// `confirm_changes` is set (the sample's default: the plugin's config
// "confirm_bookings"). They are keyed on the run and the call (tool_context's
// workflow_id and call_id): a change made again with the same key changes
// nothing more and answers what the first call did ("replayed": true), so
// they are declared idempotent and a call cut off by a crash is safely made
// again. A refused change (not_booked, not_found) writes nothing, its key
// included: made again, it checks the calendar again. Outside a run (no
// workflow id) a change is made every time.
//
// The tools read and write the calendar's SQLite file synchronously, on the
// caller's thread (well under a millisecond when no other process holds
// the file's lock).
#pragma once

#include <switchboard/scheduling/calendar.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace switchboard::agents {
class tool;
class tool_registry;
}  // namespace switchboard::agents

namespace switchboard::scheduling {

inline constexpr const char* household_tool = "calendar.household";
inline constexpr const char* events_tool = "calendar.events";
inline constexpr const char* book_tool = "calendar.book";
inline constexpr const char* cancel_tool = "calendar.cancel";

struct calendar_tool_options {
  bool confirm_changes = true;  // book and cancel need the user's approval
  // calendar.book waits this long before its transaction (tests of racing processes).
  std::chrono::milliseconds booking_hold{0};
};

// The four tools over `cal`, in the order above.
std::vector<std::shared_ptr<agents::tool>> make_calendar_tools(std::shared_ptr<calendar> cal,
                                                               const calendar_tool_options& options = {});

// The same tools in a registry of their own (origin "builtin:scheduling"):
// what the sample's agents call them through.
std::shared_ptr<agents::tool_registry> make_calendar_tool_registry(std::shared_ptr<calendar> cal,
                                                                   const calendar_tool_options& options = {});

}  // namespace switchboard::scheduling
