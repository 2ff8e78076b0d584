// The rule-based parser's readers for the intent, people, resources and
// the title, and read_request, which runs every reader over one text.
#include "parser_rules.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

namespace switchboard::scheduling::parser {

using detail::is_child;

void find_intent(const std::string& l, findings& f) {
  static const std::regex question{
      R"(^\s*(when|who|what|what's|whats|which|is|are|does|do|how|has|have)\b)"};
  const bool asks_word = std::regex_search(l, question);
  const bool asks = asks_word || l.find('?') != std::string::npos;
  const bool books = has_word(l, "schedule") || has_word(l, "book") || has_word(l, "add") ||
                     has_word(l, "plan") || has_word(l, "set up") || has_word(l, "organize") ||
                     has_word(l, "arrange");
  if (has_word(l, "cancel") || has_word(l, "call off") || has_word(l, "delete") ||
      (has_word(l, "remove") && !asks)) {
    f.intent = "cancel";
  } else if (has_word(l, "reschedule") || has_word(l, "move") || has_word(l, "postpone") ||
             has_word(l, "push back") || has_word(l, "shift")) {
    f.intent = "modify";
  } else if (asks && !books) {
    f.intent = "query";
  }
  f.verb = books || asks_word || f.intent == "cancel" || f.intent == "modify";
}

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
  // "Family dinner for Maya and Leo" names its guests: "family" and "we"
  // mean everyone only when nobody is named.
  bool named_someone = false;
  for (const auto& m : h.members) {
    named_someone = named_someone || has_word(l, lower(m.name));
    for (const auto& alias : m.aliases) named_someone = named_someone || has_word(l, lower(alias));
  }
  const bool everyone = has_word(l, "everyone") || has_word(l, "everybody") || has_word(l, "all of us") ||
                        has_word(l, "whole family") ||
                        (!named_someone && (has_word(l, "family") || has_word(l, "we")));
  if (has_word(l, "kids") || has_word(l, "children")) {
    for (const auto& m : h.members)
      if (is_child(m)) add(m.name);
  }
  if (has_word(l, "parents")) {
    for (const auto& m : h.members)
      if (m.role == "parent") add(m.name);
  }
  // Capitalised names after "for"/"with" that the household does not know:
  // kept apart, so that the parser asks who they are.
  static const std::regex named_after{R"(\b(?:for|with)\s+([A-Z][a-z]+(?:'s)?(?:\s*(?:,|and|&)\s*[A-Z][a-z]+(?:'s)?)*))"};
  static const std::regex one_name{R"([A-Z][a-z]+)"};
  static const std::regex month_name{
      "january|february|march|april|may|june|july|august|september|october|november|december"};
  static const std::array<std::string_view, 17> not_names{
      "The", "A", "An", "Our", "My", "Me", "Us", "Everyone", "Everybody", "Family", "All", "I",
      "Him", "Her", "Them", "It", "Both"};
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
      else if (std::ranges::find(f.unknown_people, name) == f.unknown_people.end()) f.unknown_people.push_back(name);
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

// "book the living room for a movie night": the event is what the
// resource is for.
void drop_resource_lead(const household& h, std::string& text) {
  const std::string l = lower(text);
  for (const auto& r : h.resources) {
    std::vector<std::string> words{lower(r.name)};
    for (const auto& alias : r.aliases) words.push_back(lower(alias));
    for (const auto& w : words) {
      for (const auto* article : {" for a ", " for an ", " for the ", " for "}) {
        const std::string prefix = w + article;
        if (l.starts_with(prefix)) {
          text.erase(0, prefix.size());
          return;
        }
      }
    }
  }
}

std::string find_title(const household& h, const std::string& original, const std::string& intent) {
  if (intent == "query") return "Availability question";
  std::string text = original;
  static const std::regex lead{
      R"(^\s*(please\s+)?(can you\s+|could you\s+)?((?:schedule|book|add|plan|set up|organi[sz]e|arrange|cancel|call off|delete|remove|move|reschedule|postpone|shift)\b)?\s*(an?\s+|the\s+)?)",
      std::regex::icase};
  text = std::regex_replace(text, lead, "", std::regex_constants::format_first_only);
  drop_resource_lead(h, text);
  // "Leo's dentist appointment": the owner is a participant, not the title.
  static const std::regex owner{R"(^\s*[a-z]+(?:'s|s')\s+(the\s+)?)", std::regex::icase};
  text = std::regex_replace(text, owner, "", std::regex_constants::format_first_only);
  static const std::regex cut{
      R"((^|\s+)(for|with|on|at|in|next|this|sometime|some time|tomorrow|today|tonight|from|between|every|to|by|around|and)\b|,|;|\.|\?|(^|\s+)\d|(^|\s+)(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b)",
      std::regex::icase};
  std::smatch m;
  if (std::regex_search(text, m, cut)) text = text.substr(0, static_cast<std::size_t>(m.position(0)));
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  static const std::array<std::string_view, 5> pronouns{"it", "that", "this", "them", "everything"};
  if (text.empty() || std::ranges::find(pronouns, lower(text)) != pronouns.end()) return "Event";
  text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

namespace {

// A move names the event's day before "to" and the new day after it:
// "move the swim meet from Saturday to Sunday at 3pm".
void find_original_day(std::string& work, day_t today, findings& f) {
  const auto pos = work.find(" to ");
  if (pos == std::string::npos) return;
  std::string head = work.substr(0, pos);
  findings before;
  find_dates(head, today, before);
  f.original_date = before.date;
  work = head + work.substr(pos);
}

std::string query_kind(const std::string& l, const findings& f) {
  if (!f.resources.empty()) return "resource";
  if (has_word(l, "free") || has_word(l, "available")) return "free_time";
  for (const auto* phrase : {"have", "has", "what's on", "what is on", "events", "plans", "doing", "busy with",
                             "schedule", "calendar", "going on"})
    if (has_word(l, phrase)) return "events";
  return "free_time";
}

}  // namespace

findings read_request(const household& h, const std::string& text, day_t today) {
  const std::string l = lower(text);
  findings f;
  find_intent(l, f);
  std::string work = l;
  if (f.intent == "modify") find_original_day(work, today, f);
  find_dates(work, today, f);
  find_resources(h, work, f);
  find_times(work, f);
  find_duration(work, f);
  if (!f.start) find_part_of_day(work, f);
  find_people(h, text, l, f);
  f.title = find_title(h, text, f.intent);
  find_vague(l, f);
  if (f.intent == "query") f.query_kind = query_kind(l, f);
  if (has_word(l, "urgent") || has_word(l, "important") || has_word(l, "asap"))
    f.priority = "high";
  else if (has_word(l, "if possible") || has_word(l, "optional") || has_word(l, "maybe"))
    f.priority = "low";
  return f;
}

}  // namespace switchboard::scheduling::parser
