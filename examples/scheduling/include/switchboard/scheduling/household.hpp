// The family-scheduling sample's data: household members with their
// calendars, shared resources with their bookings, and the household rules
// (hard constraints filter slots, soft preferences score them), read from a
// data directory (household.json, resources.json, rules.json).
//
// Times are household-local wall-clock times without a time zone, counted in
// minutes since 1970-01-01 00:00 (so day and weekday arithmetic is exact).
// household.json fixes a reference "now" so every run is reproducible.
//
// Thread-safety: a loaded household is an immutable value; share it freely
// between threads (the sample's agents hold it by shared_ptr<const>).
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::scheduling {

using minute_t = std::int64_t;  // minutes since 1970-01-01 00:00, household-local
using day_t = std::int64_t;     // days since 1970-01-01

inline constexpr minute_t minutes_per_day = 24 * 60;

struct interval {
  minute_t start = 0;
  minute_t end = 0;  // exclusive
  minute_t length() const noexcept { return end - start; }
  bool overlaps(const interval& other) const noexcept {
    return start < other.end && other.start < end;
  }
  friend bool operator==(const interval&, const interval&) = default;
};

// A busy entry of a calendar or a resource booking: either one dated
// interval or a weekly recurrence (weekdays mask, bit 0 = Sunday).
struct calendar_entry {
  std::string title;
  std::string by;                 // bookings: who booked the resource
  std::optional<interval> once;   // dated entry
  unsigned weekdays = 0;          // recurring entry: the days it occurs
  int from = 0;                   // recurring entry: minutes after midnight
  int to = 0;
};

// A concrete occurrence of a calendar entry.
struct occurrence {
  std::string title;
  std::string by;
  interval when;
};

struct member {
  std::string name;
  std::string role;               // "parent", "child", "relative", ...
  std::vector<std::string> aliases;
  bool in_household = true;       // "everyone" means the household members
  bool drives = false;            // may drive a vehicle (default: role "parent")
  std::vector<calendar_entry> calendar;
};

struct resource {
  std::string name;
  std::string kind;               // "vehicle", "room", "device"
  int capacity = 1;
  std::string unit;               // "seats", "people", ...
  std::vector<std::string> aliases;
  std::vector<calendar_entry> bookings;
};

// A hard constraint: no event of an applicable participant starts before
// not_before or ends after not_after (minutes after midnight).
struct hard_rule {
  std::string id;
  std::string description;
  std::string applies_to_role;    // "" = everyone
  unsigned days = 0;              // 0 = every day
  std::optional<int> not_before;
  std::optional<int> not_after;
};

// A soft preference: an applicable slot should lie within
// [prefer_from, prefer_to]; a slot outside loses `weight` from its score.
struct soft_rule {
  std::string id;
  std::string description;
  std::string applies_to_role;
  unsigned days = 0;
  std::optional<int> prefer_from;
  std::optional<int> prefer_to;
  double weight = 0.1;
};

struct household {
  std::string name;
  minute_t now = 0;
  std::vector<member> members;
  std::vector<resource> resources;
  std::vector<hard_rule> hard_rules;
  std::vector<soft_rule> soft_rules;

  // By name or alias, case-insensitive; nullptr when unknown.
  const member* find_member(std::string_view name) const;
  const resource* find_resource(std::string_view name) const;
  // "Ana, Sam, Maya, Leo, Rosa (grandma, granny)" for error messages.
  std::string member_names() const;
  std::string resource_names() const;
};

// Malformed or inconsistent data. what() names the file and the line and
// column (syntax errors) or the JSON Pointer of the offending value.
class data_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads household.json, resources.json and rules.json from `data_dir`.
household load_household(const std::filesystem::path& data_dir);

// The household from one JSON object in the form sample_context() and the
// calendar.household tool give: household.json's fields (household, now,
// members), resources.json's (resources) and rules.json's under "rules".
// Throws data_error naming `source` and the JSON Pointer of what is wrong.
household household_from_json(const boost::json::value& doc, const std::string& source);

// Parses a JSON file; a syntax error becomes "FILE:LINE:COL: message".
boost::json::value parse_json_file(const std::filesystem::path& file);

// ---- time helpers -------------------------------------------------------

// "2026-03-07T14:00" ↔ minute_t; nullopt when malformed or out of range.
std::optional<minute_t> parse_datetime(std::string_view text);
std::string format_datetime(minute_t t);
// "2026-03-07" ↔ day_t.
std::optional<day_t> parse_date(std::string_view text);
std::string format_date(day_t day);
// "14:00" ↔ minutes after midnight (0..1440; "24:00" allowed).
std::optional<int> parse_clock(std::string_view text);
std::string format_clock(int minutes_after_midnight);

inline day_t day_of(minute_t t) noexcept {
  return t >= 0 ? t / minutes_per_day : (t - minutes_per_day + 1) / minutes_per_day;
}
inline minute_t start_of(day_t day) noexcept { return day * minutes_per_day; }
int weekday(day_t day) noexcept;                  // 0 = Sunday … 6 = Saturday
std::string_view weekday_name(int weekday) noexcept;  // "Sunday"
std::optional<int> parse_weekday(std::string_view text) noexcept;  // "sun", "sunday" (any case)

// "Sat 2026-03-07 14:00–16:00" (the end's date is shown when it differs).
std::string describe(const interval& slot);

// Occurrences of `entry` that overlap `range`.
std::vector<occurrence> occurrences(const calendar_entry& entry, const interval& range);

}  // namespace switchboard::scheduling
