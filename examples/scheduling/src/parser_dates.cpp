// The rule-based parser's phrase readers for days, times, durations and
// parts of the day, and the text helpers they share.
#include "parser_rules.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <regex>

namespace switchboard::scheduling::parser {
namespace {

int to_24h(int hour, const std::string& ampm) {
  if (ampm == "pm" && hour < 12) return hour + 12;
  if (ampm == "am" && hour == 12) return 0;
  return hour;
}

bool valid_clock(int hour, int minute) { return hour >= 0 && hour <= 24 && minute >= 0 && minute < 60; }

constexpr std::array<std::string_view, 9> vague_phrases{
    "sometime", "some time", "whenever", "at some point", "soon", "one of these days",
    "later",    "some day",  "someday"};

}  // namespace

// Blanks a matched span so later patterns do not read it again; '#' rather
// than spaces, so that "needs the <blank>" does not read the next word.
void blank(std::string& text, std::size_t pos, std::size_t length) {
  std::fill_n(text.begin() + static_cast<std::ptrdiff_t>(pos), length, '#');
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Dashes of every kind become '-', so "2–4pm" reads like "2-4pm".
std::string normalize(std::string text) {
  for (const std::string_view dash : {"\u2013", "\u2014", "\u2212"}) {
    for (auto pos = text.find(dash); pos != std::string::npos; pos = text.find(dash, pos))
      text.replace(pos, dash.size(), "-");
  }
  return text;
}

bool has_word(const std::string& lowered, std::string_view phrase) {
  for (auto pos = lowered.find(phrase); pos != std::string::npos;
       pos = lowered.find(phrase, pos + 1)) {
    const bool start_ok = pos == 0 || !std::isalnum(static_cast<unsigned char>(lowered[pos - 1]));
    const auto end = pos + phrase.size();
    const bool end_ok = end >= lowered.size() ||
                        !std::isalnum(static_cast<unsigned char>(lowered[end]));
    if (start_ok && end_ok) return true;
  }
  return false;
}

void find_dates(std::string& work, day_t today, findings& f) {
  const day_t this_monday = today - (weekday(today) + 6) % 7;
  const day_t next_monday = this_monday + 7;
  static const std::regex iso{R"(\b(\d{4}-\d{2}-\d{2})\b)"};
  std::smatch m;
  if (std::regex_search(work, m, iso)) {
    if (const auto d = parse_date(m[1].str())) {
      f.date = *d;
      f.date_phrase = m[1].str();
    } else {
      f.unresolved.push_back("date \"" + m[1].str() + "\"");
    }
    blank(work, static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)));
  }
  static const std::array<std::string_view, 12> months{
      "january", "february", "march", "april", "may", "june", "july",
      "august", "september", "october", "november", "december"};
  static const std::regex month_day{
      R"(\b(january|february|march|april|may|june|july|august|september|october|november|december)\s+(\d{1,2})(st|nd|rd|th)?\b)"};
  if (!f.date && std::regex_search(work, m, month_day)) {
    const auto month_index = std::ranges::find(months, m[1].str()) - months.begin() + 1;
    const std::string today_text = format_date(today);
    const int year = std::stoi(today_text.substr(0, 4));
    char text[48];
    std::snprintf(text, sizeof text, "%04d-%02d-%02d", year, static_cast<int>(month_index),
                  std::stoi(m[2].str()));
    auto d = parse_date(text);
    if (d && *d < today) {
      std::snprintf(text, sizeof text, "%04d-%02d-%02d", year + 1, static_cast<int>(month_index),
                    std::stoi(m[2].str()));
      d = parse_date(text);
    }
    if (d) {
      f.date = *d;
      f.date_phrase = m[0].str();
    } else {
      f.unresolved.push_back("date \"" + m[0].str() + "\"");
    }
    blank(work, static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)));
  }
  const bool next_week = has_word(work, "next week");
  static const std::regex weekday_re{
      R"(\b(next\s+|this\s+|on\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b)"};
  if (!f.date && std::regex_search(work, m, weekday_re)) {
    const int wd = *parse_weekday(m[2].str());
    const bool in_next_week = next_week || m[1].str().starts_with("next");
    f.date = in_next_week ? next_monday + (wd + 6) % 7 : today + (wd - weekday(today) + 7) % 7;
    f.date_phrase = m[0].str();
  }
  if (!f.date) {
    if (has_word(work, "day after tomorrow")) {
      f.date = today + 2;
      f.date_phrase = "the day after tomorrow";
    } else if (has_word(work, "tomorrow")) {
      f.date = today + 1;
      f.date_phrase = "tomorrow";
    } else if (has_word(work, "today") || has_word(work, "tonight")) {
      f.date = today;
      f.date_phrase = has_word(work, "today") ? "today" : "tonight";
    }
  }
  if (f.date) return;
  const day_t saturday = this_monday + 5;
  if (has_word(work, "next weekend")) {
    f.date_range = std::pair{saturday + 7, saturday + 8};
    f.range_phrase = "next weekend";
  } else if (has_word(work, "weekend")) {
    f.date_range = std::pair{std::max(today, saturday), saturday + 1};
    f.range_phrase = "this weekend";
  } else if (next_week) {
    f.date_range = std::pair{next_monday, next_monday + 6};
    f.range_phrase = "next week";
  } else if (has_word(work, "this week")) {
    f.date_range = std::pair{today, this_monday + 6};
    f.range_phrase = "this week";
  }
}

void find_times(std::string& work, findings& f) {
  std::smatch m;
  static const std::regex range{
      R"(\b(?:from\s+|between\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\s*(?:-|to|until|till|and)\s*(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b)"};
  if (std::regex_search(work, m, range)) {
    const int h1 = std::stoi(m[1].str());
    const int m1 = m[2].matched ? std::stoi(m[2].str()) : 0;
    const int h2 = std::stoi(m[4].str());
    const int m2 = m[5].matched ? std::stoi(m[5].str()) : 0;
    std::string a1 = m[3].str();
    const std::string a2 = m[6].str();
    if (valid_clock(h1, m1) && valid_clock(h2, m2) && (m[3].matched || m[6].matched || m[2].matched ||
                                                        m[5].matched || h1 <= 12)) {
      int start = 0;
      int end = 0;
      if (a1.empty() && !a2.empty()) {
        start = to_24h(h1, a2) * 60 + m1;
        end = to_24h(h2, a2) * 60 + m2;
        if (start >= end) start = to_24h(h1, a2 == "pm" ? "am" : "pm") * 60 + m1;
      } else if (a1.empty() && a2.empty() && h1 < 7 && h2 <= 12) {
        start = (h1 + 12) * 60 + m1;  // "2-4" in a household means the afternoon
        end = (h2 < 12 ? h2 + 12 : h2) * 60 + m2;
      } else {
        start = to_24h(h1, a1) * 60 + m1;
        end = to_24h(h2, a2.empty() ? a1 : a2) * 60 + m2;
      }
      if (start < end && end <= minutes_per_day) {
        f.start = start;
        f.end = end;
        blank(work, static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)));
        return;
      }
      f.unresolved.push_back("time range \"" + m[0].str() + "\"");
      blank(work, static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)));
    }
  }
  static const std::regex with_ampm{R"(\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b)"};
  static const std::regex clock24{R"(\b(\d{1,2}):(\d{2})\b)"};
  static const std::regex at_hour{R"(\b(?:at|around|from)\s+(\d{1,2})\b)"};
  if (std::regex_search(work, m, with_ampm)) {
    const int h = std::stoi(m[1].str());
    const int mm = m[2].matched ? std::stoi(m[2].str()) : 0;
    if (h >= 1 && h <= 12 && valid_clock(h, mm)) f.start = to_24h(h, m[3].str()) * 60 + mm;
  } else if (std::regex_search(work, m, clock24)) {
    const int h = std::stoi(m[1].str());
    const int mm = std::stoi(m[2].str());
    if (h < 24 && valid_clock(h, mm)) f.start = h * 60 + mm;
  } else if (std::regex_search(work, m, at_hour)) {
    const int h = std::stoi(m[1].str());
    if (h >= 1 && h <= 7) f.start = (h + 12) * 60;  // "at 5": the afternoon, not 5 am
    else if (h < 24) f.start = h * 60;
  } else if (has_word(work, "noon")) {
    f.start = 12 * 60;
    return;
  } else {
    return;
  }
  if (!f.start) f.unresolved.push_back("time \"" + m[0].str() + "\"");
  blank(work, static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)));
}

void find_duration(std::string& work, findings& f) {
  static const std::regex span{
      R"(\b(?:for\s+)?(an?|one|two|three|four|five|half an?|\d+(?:\.\d+)?)[\s-]*(hours?|hrs?|h|minutes?|mins?)\b(\s+and\s+a\s+half)?)"};
  std::smatch m;
  if (!std::regex_search(work, m, span)) return;
  const std::string amount = m[1].str();
  double value = 0;
  if (amount == "a" || amount == "an" || amount == "one") value = 1;
  else if (amount == "two") value = 2;
  else if (amount == "three") value = 3;
  else if (amount == "four") value = 4;
  else if (amount == "five") value = 5;
  else if (amount.starts_with("half")) value = 0.5;
  else value = std::stod(amount);
  const bool hours = m[2].str().starts_with("h");
  double minutes = hours ? value * 60 : value;
  if (m[3].matched) minutes += hours ? 30 : 0;
  if (minutes >= 5 && minutes <= minutes_per_day) {
    f.duration = static_cast<int>(minutes);
    f.duration_stated = true;
  } else {
    f.unresolved.push_back("duration \"" + m[0].str() + "\"");
  }
  blank(work, static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)));
}

void find_part_of_day(const std::string& work, findings& f) {
  struct part {
    std::string_view word;
    int from;
    int to;
  };
  static constexpr std::array<part, 6> parts{{{"after school", 15 * 60, 19 * 60},
                                              {"morning", 8 * 60, 12 * 60},
                                              {"lunchtime", 12 * 60, 13 * 60 + 30},
                                              {"afternoon", 12 * 60, 17 * 60},
                                              {"evening", 17 * 60, 21 * 60},
                                              {"tonight", 17 * 60, 21 * 60}}};
  for (const auto& p : parts) {
    if (has_word(work, p.word)) {
      f.window = std::pair{p.from, p.to};
      f.window_phrase = p.word;
      return;
    }
  }
}


void find_vague(const std::string& lowered, findings& f) {
  for (const auto phrase : vague_phrases) {
    if (has_word(lowered, phrase)) {
      f.vague = true;
      f.vague_phrase = std::string(phrase);
      return;
    }
  }
}

}  // namespace switchboard::scheduling::parser
