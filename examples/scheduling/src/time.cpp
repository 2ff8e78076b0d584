// Civil-time helpers of the scheduling sample: household-local wall-clock
// minutes, no time zones (the sample's data has none).
#include <switchboard/scheduling/household.hpp>

#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>

namespace switchboard::scheduling {
namespace {

std::optional<int> parse_digits(std::string_view text) {
  int value = 0;
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

constexpr std::array<std::string_view, 7> weekday_names{
    "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};

}  // namespace

std::optional<day_t> parse_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  const auto y = parse_digits(text.substr(0, 4));
  const auto m = parse_digits(text.substr(5, 2));
  const auto d = parse_digits(text.substr(8, 2));
  if (!y || !m || !d) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year{*y},
                                        std::chrono::month{static_cast<unsigned>(*m)},
                                        std::chrono::day{static_cast<unsigned>(*d)}};
  if (!ymd.ok()) return std::nullopt;
  return std::chrono::sys_days{ymd}.time_since_epoch().count();
}

std::string format_date(day_t day) {
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{day}}};
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return buffer;
}

std::optional<int> parse_clock(std::string_view text) {
  if (text.size() != 5 || text[2] != ':') return std::nullopt;
  const auto h = parse_digits(text.substr(0, 2));
  const auto m = parse_digits(text.substr(3, 2));
  if (!h || !m || *m > 59 || *h > 24 || (*h == 24 && *m != 0)) return std::nullopt;
  return *h * 60 + *m;
}

std::string format_clock(int minutes_after_midnight) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%02d:%02d", minutes_after_midnight / 60,
                minutes_after_midnight % 60);
  return buffer;
}

std::optional<minute_t> parse_datetime(std::string_view text) {
  if (text.size() != 16 || text[10] != 'T') return std::nullopt;
  const auto day = parse_date(text.substr(0, 10));
  const auto clock = parse_clock(text.substr(11));
  if (!day || !clock || *clock == minutes_per_day) return std::nullopt;
  return start_of(*day) + *clock;
}

std::string format_datetime(minute_t t) {
  const day_t day = day_of(t);
  return format_date(day) + "T" + format_clock(static_cast<int>(t - start_of(day)));
}

int weekday(day_t day) noexcept {
  // 1970-01-01 was a Thursday (4).
  const auto w = (day % 7 + 7 + 4) % 7;
  return static_cast<int>(w);
}

std::string_view weekday_name(int wd) noexcept {
  return weekday_names[static_cast<std::size_t>(((wd % 7) + 7) % 7)];
}

std::optional<int> parse_weekday(std::string_view text) noexcept {
  if (text.size() < 3) return std::nullopt;
  for (int i = 0; i < 7; ++i) {
    const std::string_view full = weekday_names[static_cast<std::size_t>(i)];
    if (text.size() > full.size()) continue;
    bool match = true;
    for (std::size_t k = 0; k < text.size(); ++k) {
      if (std::tolower(static_cast<unsigned char>(text[k])) !=
          std::tolower(static_cast<unsigned char>(full[k]))) {
        match = false;
        break;
      }
    }
    // Either the three-letter abbreviation or the full name.
    if (match && (text.size() == 3 || text.size() == full.size())) return i;
  }
  return std::nullopt;
}

std::string describe(const interval& slot) {
  const day_t first = day_of(slot.start);
  std::string out{weekday_name(weekday(first)).substr(0, 3)};
  out += ' ' + format_date(first) + ' ' + format_clock(static_cast<int>(slot.start - start_of(first)));
  out += "\u2013";
  const minute_t end_in_first_day = slot.end - start_of(first);
  if (end_in_first_day <= minutes_per_day) {
    out += format_clock(static_cast<int>(end_in_first_day));  // 24:00 for midnight
  } else {
    const day_t last = day_of(slot.end);
    out += format_date(last) + ' ' + format_clock(static_cast<int>(slot.end - start_of(last)));
  }
  return out;
}

std::vector<occurrence> occurrences(const calendar_entry& entry, const interval& range) {
  std::vector<occurrence> out;
  if (entry.once) {
    if (entry.once->overlaps(range)) out.push_back({entry.title, entry.by, *entry.once});
    return out;
  }
  for (day_t day = day_of(range.start) - 1; day <= day_of(range.end); ++day) {
    if ((entry.weekdays & (1u << weekday(day))) == 0) continue;
    const interval when{start_of(day) + entry.from, start_of(day) + entry.to};
    if (when.overlaps(range)) out.push_back({entry.title, entry.by, when});
  }
  return out;
}

}  // namespace switchboard::scheduling
