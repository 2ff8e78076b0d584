// Internals of the rule-based nl_parser: what one request (or one part of a
// compound request) states, and the phrase readers that find it. The
// readers blank what they consumed in a working copy of the lowered text so
// that later readers do not read it again.
//
// The phrase patterns run on std::regex, whose backtracking recurses per
// character: callers bound the text first (nl_parser refuses more than
// 2000 bytes). Thread-safety: pure functions over their arguments.
#pragma once

#include "detail.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchboard::scheduling::parser {

struct findings {
  std::string intent = "create";
  std::string query_kind = "free_time";
  std::string title;
  std::optional<day_t> date;
  std::string date_phrase;
  std::optional<std::pair<day_t, day_t>> date_range;
  std::string range_phrase;
  std::optional<day_t> original_date;  // modify: the day the event is on now
  std::optional<int> start;
  std::optional<int> end;
  std::optional<std::pair<int, int>> window;
  std::string window_phrase;
  std::optional<int> duration;
  bool duration_stated = false;
  std::vector<std::string> participants;
  bool participants_named = false;
  std::vector<std::string> unknown_people;  // named, not in the household
  std::vector<std::string> resources;
  std::vector<std::string> unresolved;
  std::string priority = "normal";
  bool vague = false;
  std::string vague_phrase;
  bool verb = false;  // a scheduling verb or a question word: the text asks for something
};

std::string lower(std::string_view text);
// Dashes of every kind become '-', so "2–4pm" reads like "2-4pm".
std::string normalize(std::string text);
bool has_word(const std::string& lowered, std::string_view phrase);
// Blanks a consumed span of the working text.
void blank(std::string& text, std::size_t pos, std::size_t length);

void find_intent(const std::string& lowered, findings& f);
void find_dates(std::string& work, day_t today, findings& f);
void find_times(std::string& work, findings& f);
void find_duration(std::string& work, findings& f);
void find_part_of_day(const std::string& work, findings& f);
void find_vague(const std::string& lowered, findings& f);
void find_people(const household& h, const std::string& original, const std::string& lowered, findings& f);
void find_resources(const household& h, std::string& work, findings& f);
std::string find_title(const household& h, const std::string& original, const std::string& intent);

// Everything one text states (no confidence yet).
findings read_request(const household& h, const std::string& text, day_t today);

}  // namespace switchboard::scheduling::parser
