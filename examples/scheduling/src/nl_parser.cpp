// nl_parser, rule-based: the offline stand-in for the LLM-backed parser.
// It understands the sample requests and their close variations (weekdays,
// "next week", ISO dates, "2-4pm", "at 7pm for 1 hour", parts of the day,
// family members and resources by name or alias) and says honestly when a
// request is vague: confidence falls and a clarification question is added.
#include "detail.hpp"

#include <switchboard/scheduling/agents.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <regex>

namespace switchboard::scheduling {
namespace {

constexpr std::size_t max_request_bytes = 2000;

using namespace detail;

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

// Blanks a matched span so later patterns do not read it again; '#' rather
// than spaces, so that "needs the <blank>" does not read the next word.
void blank(std::string& text, std::size_t pos, std::size_t length) {
  std::fill_n(text.begin() + static_cast<std::ptrdiff_t>(pos), length, '#');
}

int to_24h(int hour, const std::string& ampm) {
  if (ampm == "pm" && hour < 12) return hour + 12;
  if (ampm == "am" && hour == 12) return 0;
  return hour;
}

struct findings {
  std::string intent = "create";
  std::string title;
  std::optional<day_t> date;
  std::string date_phrase;
  std::optional<std::pair<day_t, day_t>> date_range;
  std::string range_phrase;
  std::optional<int> start;
  std::optional<int> end;
  std::optional<std::pair<int, int>> window;
  std::string window_phrase;
  std::optional<int> duration;
  bool duration_stated = false;
  std::vector<std::string> participants;
  bool participants_named = false;
  std::vector<std::string> resources;
  std::vector<std::string> unresolved;
  std::string priority = "normal";
  bool vague = false;
  std::string vague_phrase;
};

void find_intent(const std::string& l, findings& f) {
  static const std::regex question{
      R"(^\s*(when|who|what|which|is|are|does|do|how)\b)"};
  const bool asks = std::regex_search(l, question) || (!l.empty() && l.find('?') != std::string::npos);
  const bool books = has_word(l, "schedule") || has_word(l, "book") || has_word(l, "add") ||
                     has_word(l, "plan");
  if (has_word(l, "cancel") || has_word(l, "call off")) {
    f.intent = "cancel";
  } else if (has_word(l, "reschedule") || has_word(l, "move") || has_word(l, "postpone") ||
             has_word(l, "push back")) {
    f.intent = "modify";
  } else if (asks && !books) {
    f.intent = "query";
  }
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

bool valid_clock(int hour, int minute) { return hour >= 0 && hour <= 24 && minute >= 0 && minute < 60; }

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

const std::array<std::string_view, 9> vague_phrases{
    "sometime", "some time", "whenever", "at some point", "soon", "one of these days",
    "later",    "some day",  "someday"};

void find_people(const household& h, const std::string& original, const std::string& l,
                 findings& f) {
  auto add = [&](const std::string& name) {
    if (std::ranges::find(f.participants, name) == f.participants.end()) f.participants.push_back(name);
  };
  for (const auto& m : h.members) {
    bool named = has_word(l, lower(m.name));
    for (const auto& alias : m.aliases) named = named || has_word(l, lower(alias));
    if (named) add(m.name);
  }
  const bool everyone = has_word(l, "everyone") || has_word(l, "everybody") ||
                        has_word(l, "family") || has_word(l, "all of us") || has_word(l, "we");
  if (has_word(l, "kids") || has_word(l, "children")) {
    for (const auto& m : h.members)
      if (is_child(m)) add(m.name);
  }
  if (has_word(l, "parents")) {
    for (const auto& m : h.members)
      if (m.role == "parent") add(m.name);
  }
  // Capitalised names after "for"/"with" that the household does not know:
  // kept as participants so the scheduler can name them in its error.
  static const std::regex named_after{R"(\b(?:for|with)\s+([A-Z][a-z]+(?:'s)?(?:\s*(?:,|and|&)\s*[A-Z][a-z]+(?:'s)?)*))"};
  static const std::regex one_name{R"([A-Z][a-z]+)"};
  static const std::regex month_name{
      "january|february|march|april|may|june|july|august|september|october|november|december"};
  static const std::array<std::string_view, 12> not_names{
      "The", "A", "An", "Our", "My", "Me", "Us", "Everyone", "Everybody", "Family", "All", "I"};
  for (auto it = std::sregex_iterator(original.begin(), original.end(), named_after);
       it != std::sregex_iterator(); ++it) {
    const std::string group = (*it)[1].str();
    for (auto n = std::sregex_iterator(group.begin(), group.end(), one_name);
         n != std::sregex_iterator(); ++n) {
      const std::string name = n->str();
      const bool known_word = std::ranges::find(not_names, name) != not_names.end() ||
                              parse_weekday(name).has_value() || h.find_resource(name) ||
                              std::regex_match(lower(name), month_name);
      if (known_word) continue;
      if (const member* m = h.find_member(name)) add(m->name);
      else add(name);
    }
  }
  f.participants_named = !f.participants.empty();
  // A visit by a relative involves the household, unless household members
  // are named explicitly.
  const bool only_relatives =
      !f.participants.empty() && std::ranges::all_of(f.participants, [&](const std::string& n) {
        const member* m = h.find_member(n);
        return m && !m->in_household;
      });
  if (everyone || only_relatives) {
    for (const auto& m : h.members)
      if (m.in_household) add(m.name);
    f.participants_named = true;
  }
}

void find_resources(const household& h, std::string& work, findings& f) {
  for (const auto& r : h.resources) {
    std::vector<std::string> words{lower(r.name)};
    for (const auto& alias : r.aliases) words.push_back(lower(alias));
    for (const auto& w : words) {
      if (!has_word(work, w)) continue;
      if (std::ranges::find(f.resources, r.name) == f.resources.end()) f.resources.push_back(r.name);
      for (auto pos = work.find(w); pos != std::string::npos; pos = work.find(w, pos + 1))
        blank(work, pos, w.size());
    }
  }
  // "needs the boat": a resource the household does not have, kept so the
  // scheduler can name it in its error.
  static const std::regex wants{
      R"(\b(?:needs?|use|using|borrow|borrows|take|takes|taking|bring|brings|reserve|book)\s+(?:the|a|an|our|my|his|her|their)\s+([a-z]+))"};
  static const std::array<std::string_view, 10> not_resources{
      "family", "kids", "children", "morning", "afternoon", "evening", "day", "time", "week", "weekend"};
  for (auto it = std::sregex_iterator(work.begin(), work.end(), wants); it != std::sregex_iterator();
       ++it) {
    const std::string word = (*it)[1].str();
    if (std::ranges::find(not_resources, word) != not_resources.end()) continue;
    if (std::ranges::find(f.resources, word) == f.resources.end()) f.resources.push_back(word);
  }
}

std::string find_title(const std::string& original, const std::string& intent) {
  if (intent == "query") return "Availability question";
  std::string text = original;
  const std::string l0 = lower(text);
  static const std::regex lead{
      R"(^\s*(please\s+)?(can you\s+|could you\s+)?((?:schedule|book|add|plan|set up|organi[sz]e|cancel|move|reschedule|postpone)\b)?\s*(an?\s+|the\s+)?)",
      std::regex::icase};
  text = std::regex_replace(text, lead, "", std::regex_constants::format_first_only);
  static const std::regex cut{
      R"(\s+(for|with|on|at|in|next|this|sometime|some time|tomorrow|today|tonight|from|between|every|to|by|around)\b|,|\.|\?|\s+\d|\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b)",
      std::regex::icase};
  std::smatch m;
  if (std::regex_search(text, m, cut)) text = text.substr(0, static_cast<std::size_t>(m.position(0)));
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.empty()) return "Event";
  text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

class nl_parser_agent final : public native_agent {
 public:
  explicit nl_parser_agent(std::shared_ptr<const household> data)
      : native_agent("nl_parser",
                     "Parses a household request in plain language into an event or an "
                     "availability question: intent, title, day and time, participants, resources.",
                     std::move(data)) {}

 protected:
  protocol::envelope compute(const agents::agent_context& context) const override {
    std::string text = request_text(context.input);
    if (text.empty())
      return make_failure("invalid_input",
                          "nl_parser: the workflow input has no request text (expected a string or "
                          "{\"request\": \"...\"})");
    // Clarification answers complete the original request.
    for (const auto& answer : context.clarification_answers) text += ". " + answer;
    // The phrase patterns below run on std::regex, whose backtracking
    // recurses per character: a household request is a sentence or two, and
    // a text far longer is refused rather than risking the stack.
    if (text.size() > max_request_bytes)
      return make_failure("invalid_input", "nl_parser: the request is " + std::to_string(text.size()) +
                                               " bytes long; a scheduling request may have at most " +
                                               std::to_string(max_request_bytes));
    text = normalize(std::move(text));
    const std::string l = lower(text);
    const day_t today = day_of(reference_now(data(), context.input));

    findings f;
    find_intent(l, f);
    std::string work = l;
    find_dates(work, today, f);
    find_resources(data(), work, f);
    find_times(work, f);
    find_duration(work, f);
    if (!f.start) find_part_of_day(work, f);
    find_people(data(), text, l, f);
    f.title = find_title(text, f.intent);
    for (const auto phrase : vague_phrases) {
      if (has_word(l, phrase)) {
        f.vague = true;
        f.vague_phrase = std::string(phrase);
        break;
      }
    }
    if (has_word(l, "urgent") || has_word(l, "important") || has_word(l, "asap"))
      f.priority = "high";
    else if (has_word(l, "if possible") || has_word(l, "optional") || has_word(l, "maybe"))
      f.priority = "low";
    return finish(f, text);
  }

 private:
  protocol::envelope finish(findings& f, const std::string& text) const {
    if (f.start && f.end) {
      f.duration = *f.end - *f.start;
    } else if (f.start && f.duration) {
      if (*f.start + *f.duration <= minutes_per_day) f.end = *f.start + *f.duration;
    }
    std::vector<std::string> why;
    double confidence = 0.3;
    why.push_back("base 0.30");
    const bool query = f.intent == "query";
    if (f.date) {
      confidence += 0.35;
      why.push_back("day \"" + f.date_phrase + "\" = " + format_date(*f.date) + " +0.35");
    } else if (f.date_range) {
      why.push_back("only a range of days (\"" + f.range_phrase + "\") +0");
    }
    if (f.start) {
      confidence += 0.25;
      why.push_back("start time " + format_clock(*f.start) + " +0.25");
    } else if (f.window) {
      confidence += 0.1;
      why.push_back("part of the day \"" + f.window_phrase + "\" +0.10");
    } else if (query && f.date) {
      confidence += 0.25;
      why.push_back("a question about a whole day needs no time +0.25");
    }
    if (f.participants_named) {
      confidence += 0.1;
      why.push_back("participants named +0.10");
    }
    if (f.end || f.duration_stated) {
      confidence += 0.1;
      why.push_back("end or duration stated +0.10");
    }
    const bool day_missing = !f.date;
    const bool time_missing = !f.start && !f.window && !query;
    if (f.vague && (day_missing || time_missing)) {
      confidence -= 0.2;
      why.push_back("vague reference \"" + f.vague_phrase + "\" -0.20");
    }
    if (!f.unresolved.empty()) {
      confidence -= 0.15;
      why.push_back("not understood: " + join(f.unresolved) + " -0.15");
    }
    confidence = std::clamp(confidence, 0.05, 0.95);
    if (!f.duration && !query) {
      f.duration = 60;
      if (f.start && *f.start + 60 <= minutes_per_day) f.end = *f.start + 60;
      why.push_back("no duration given: 60 minutes assumed");
    }

    json::object data;
    data["intent"] = f.intent;
    data["title"] = f.title;
    data["date"] = f.date ? json::value(format_date(*f.date)) : json::value(nullptr);
    data["date_range"] = f.date_range ? json::value(json::object{{"from", format_date(f.date_range->first)},
                                                                 {"to", format_date(f.date_range->second)}})
                                      : json::value(nullptr);
    data["start_time"] = f.start ? json::value(format_clock(*f.start)) : json::value(nullptr);
    data["end_time"] = f.end ? json::value(format_clock(*f.end)) : json::value(nullptr);
    data["time_window"] = f.window ? json::value(json::object{{"from", format_clock(f.window->first)},
                                                             {"to", format_clock(f.window->second)}})
                                   : json::value(nullptr);
    data["duration_minutes"] = f.duration ? json::value(*f.duration) : json::value(nullptr);
    data["participants"] = json::value_from(f.participants);
    data["resources"] = json::value_from(f.resources);
    data["priority"] = f.priority;
    data["flexibility"] = f.start ? "fixed" : "flexible";
    data["unresolved"] = json::value_from(f.unresolved);
    if (confidence < 0.7) data["clarification_question"] = question(f, day_missing, time_missing);

    return make_envelope(std::move(data), explain(f), confidence,
                         "Rule-based parser (offline) on \"" + text + "\": " + join(why, "; ", "; ") +
                             " = " + format_score(confidence) + ".");
  }

  static std::string question(const findings& f, bool day_missing, bool time_missing) {
    if (f.intent == "query") {
      return "Which day should I check availability for? (for example \"Sunday\" or \"tomorrow\")";
    }
    const std::string what = "\"" + f.title + "\"";
    const std::string when = f.date_range ? " " + f.range_phrase : std::string{};
    if (day_missing && time_missing)
      return "When" + when + " should " + what +
             " take place? Please give a day and a time (for example \"Wednesday 5-6pm\").";
    if (day_missing) return "Which day" + when + " should " + what + " be on?";
    if (time_missing)
      return "At what time on " + std::string(weekday_name(weekday(*f.date))) + " should " + what +
             " start (for example \"at 5pm for 1 hour\")?";
    return "I could not read all of the request (" + join(f.unresolved) +
           "). Could you restate the day and time of " + what + "?";
  }

  static std::string explain(const findings& f) {
    if (f.intent == "query") {
      std::string out = "A question about availability";
      if (f.date) out += " on " + std::string(weekday_name(weekday(*f.date))) + " " + format_date(*f.date);
      else if (f.date_range) out += " " + f.range_phrase;
      else out += " (no day given)";
      if (!f.participants.empty()) out += " for " + join(f.participants);
      return out + ".";
    }
    std::string out = "A " + f.intent + " request: \"" + f.title + "\"";
    if (f.date) {
      out += " on " + std::string(weekday_name(weekday(*f.date))) + " " + format_date(*f.date);
      if (f.start) out += " at " + format_clock(*f.start);
      if (f.end) out += "\u2013" + format_clock(*f.end);
      else if (f.window) out += " in the " + f.window_phrase;
    } else if (f.date_range) {
      out += ", " + f.range_phrase + " (no day or time given)";
    } else {
      out += " (no day given)";
    }
    if (!f.participants.empty()) out += " for " + join(f.participants);
    if (!f.resources.empty()) out += ", needing the " + join(f.resources);
    return out + ".";
  }
};

}  // namespace

std::shared_ptr<agents::agent> make_nl_parser(std::shared_ptr<const household> data) {
  return std::make_shared<nl_parser_agent>(std::move(data));
}

}  // namespace switchboard::scheduling
