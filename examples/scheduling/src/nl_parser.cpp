// nl_parser, rule-based: the offline stand-in for the LLM-backed parser.
// It reads create, cancel, move (modify) and query requests, splits a
// compound request into its events, and says honestly what it could not
// read: a vague, nonsensical or unknown-person request gets a low confidence
// and a clarification question, never a confident guess. The phrase readers
// are in parser_dates.cpp and parser_people.cpp.
#include "parser_rules.hpp"

#include <switchboard/scheduling/agents.hpp>

#include <algorithm>

namespace switchboard::scheduling {
namespace {

using namespace detail;
using parser::findings;
using parser::has_word;
using parser::lower;

constexpr std::size_t max_request_bytes = 2000;
constexpr std::size_t max_events = 4;
constexpr double unknown_person_cap = 0.4;
constexpr double nonsense_confidence = 0.1;

// Does the text ask for anything the parser can read?
bool has_signal(const findings& f) {
  return f.date || f.date_range || f.start || f.window || f.duration_stated || !f.participants.empty() ||
         !f.unknown_people.empty() || !f.resources.empty() || f.verb;
}

bool states_when(const findings& f) { return f.date || f.start; }

// The second part of "soccer on Saturday at 2pm, and piano for Leo sometime
// next week" is an event too, if a vague one: never dropped silently.
bool looks_like_event(const household& h, const findings& f) {
  if (states_when(f)) return true;
  const bool some_when = f.date_range || f.window || f.vague;
  return some_when && f.title != "Event" && !h.find_member(f.title);
}

// "soccer for Maya Saturday 2-4pm, and piano for Leo Monday at 5pm": split
// where both sides state a day or a time; "for Maya and Leo" stays whole.
std::vector<std::string> split_compound(const household& h, const std::string& text, day_t today) {
  static const std::array<std::string_view, 7> separators{"; ", ", and then ", ", and ", " and then ",
                                                          " and also ", ", also ", " and "};
  const std::string l = lower(text);
  std::vector<std::size_t> cuts;
  for (const auto sep : separators)
    for (auto pos = l.find(sep); pos != std::string::npos && cuts.size() < 16; pos = l.find(sep, pos + 1))
      cuts.push_back(pos);
  std::ranges::sort(cuts);
  for (const auto pos : cuts) {
    std::size_t skip = 0;
    for (const auto sep : separators)
      if (l.compare(pos, sep.size(), sep) == 0) {
        skip = sep.size();
        break;
      }
    const std::string left = text.substr(0, pos);
    const std::string right = text.substr(pos + skip);
    if (!states_when(parser::read_request(h, left, today)) || !looks_like_event(h, parser::read_request(h, right, today)))
      continue;
    std::vector<std::string> out{left};
    for (auto& rest : split_compound(h, right, today)) out.push_back(std::move(rest));
    return out;
  }
  return {text};
}

struct assessment {
  double confidence = 0.3;
  std::vector<std::string> why{"base 0.30"};
  std::optional<std::string> question;
  bool nonsense = false;

  void add(double delta, std::string reason) {
    confidence += delta;
    why.push_back(std::move(reason));
  }
};

std::string day_text(day_t day) { return std::string(weekday_name(weekday(day))) + " " + format_date(day); }

std::string quoted_list(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const auto& n : names) q.push_back("\"" + n + "\"");
  return join(q, " or ");
}

void assess_create(const findings& f, assessment& a) {
  const bool query = f.intent == "query";
  if (f.date) a.add(0.35, "day \"" + f.date_phrase + "\" = " + format_date(*f.date) + " +0.35");
  else if (f.date_range) a.why.push_back("only a range of days (\"" + f.range_phrase + "\") +0");
  if (f.start) a.add(0.25, "start time " + format_clock(*f.start) + " +0.25");
  else if (f.window) a.add(0.1, "part of the day \"" + f.window_phrase + "\" +0.10");
  else if (query && f.date) a.add(0.25, "a question about a whole day needs no time +0.25");
  if (f.participants_named) a.add(0.1, "participants named +0.10");
  if (f.end || f.duration_stated) a.add(0.1, "end or duration stated +0.10");
  const bool day_missing = !f.date;
  const bool time_missing = !f.start && !f.window && !query;
  if (f.vague && (day_missing || time_missing)) a.add(-0.2, "vague reference \"" + f.vague_phrase + "\" -0.20");
  if (!f.unresolved.empty()) a.add(-0.15, "not understood: " + join(f.unresolved) + " -0.15");
  if (a.confidence < 0.7 || !f.unresolved.empty()) {
    const std::string what = "\"" + f.title + "\"";
    const std::string when = f.date_range ? " " + f.range_phrase : std::string{};
    if (query)
      a.question = "Which day should I check for? (for example \"Sunday\" or \"tomorrow\")";
    else if (day_missing && time_missing)
      a.question = "When" + when + " should " + what +
                   " take place? Please give a day and a time (for example \"Wednesday 5-6pm\").";
    else if (day_missing)
      a.question = "Which day" + when + " should " + what + " be on?";
    else if (time_missing)
      a.question = "At what time on " + std::string(weekday_name(weekday(*f.date))) + " should " + what +
                   " start (for example \"at 5pm for 1 hour\")?";
    else
      a.question = "I could not read all of the request (" + join(f.unresolved) +
                   "). Could you restate the day and time of " + what + "?";
  }
}

void assess_cancel(const findings& f, assessment& a) {
  const bool titled = f.title != "Event";
  if (titled) a.add(0.45, "event named \"" + f.title + "\" +0.45");
  if (f.participants_named || f.date) a.add(0.1, "whose or which day stated +0.10");
  if (f.date) a.add(0.1, "day " + format_date(*f.date) + " +0.10");
  if (!titled) a.question = "Which event should I cancel? Please name it (for example \"Leo's dentist appointment\").";
}

void assess_move(const findings& f, assessment& a) {
  const bool titled = f.title != "Event";
  if (titled) a.add(0.3, "event named \"" + f.title + "\" +0.30");
  if (f.date && f.start) a.add(0.3, "new day and time +0.30");
  else if (f.date || f.start) a.add(0.25, "new day or time +0.25");
  if (f.participants_named) a.add(0.1, "whose stated +0.10");
  if (!titled) {
    a.question = "Which event should I move? Please name it (for example \"Maya's swim meet\").";
  } else if (!f.date && !f.start) {
    // Without a new day or time there is nothing to move it to.
    a.confidence = std::min(a.confidence, 0.5);
    a.why.push_back("no new day or time: at most 0.50");
    a.question = "When should \"" + f.title + "\" move to? (for example \"Sunday at 3pm\")";
  }
}

assessment assess(const household& h, const findings& f) {
  assessment a;
  if (!has_signal(f)) {
    a.nonsense = true;
    a.confidence = nonsense_confidence;
    a.why = {"no day, time, person, resource, scheduling verb or question word found: " +
             format_score(nonsense_confidence)};
    a.question = "I could not find an event or a question in this request. What should I schedule (what, for whom, "
                 "which day and time), or what would you like to know?";
    return a;
  }
  if (f.intent == "cancel") assess_cancel(f, a);
  else if (f.intent == "modify") assess_move(f, a);
  else assess_create(f, a);
  a.confidence = std::clamp(a.confidence, 0.05, 0.95);
  if (!f.unknown_people.empty()) {
    a.confidence = std::min(a.confidence, unknown_person_cap);
    a.why.push_back("unknown person " + quoted_list(f.unknown_people) + ": at most " + format_score(unknown_person_cap));
    a.question = "Who is " + join(f.unknown_people, " and ") + "? The household is " + h.member_names() +
                 ". Answer with a member's name, or \"without " + f.unknown_people.front() + "\".";
  }
  return a;
}

// An answer that names a member or says to leave the stranger out settles
// the question about unknown people.
bool settles_unknown_people(const household& h, std::span<const std::string> answers) {
  for (const auto& answer : answers) {
    const std::string l = lower(answer);
    for (const auto* word : {"without", "leave", "skip", "nobody", "no one", "just", "only", "drop", "ignore"})
      if (has_word(l, word)) return true;
    for (const auto& m : h.members) {
      if (has_word(l, lower(m.name))) return true;
      for (const auto& alias : m.aliases)
        if (has_word(l, lower(alias))) return true;
    }
  }
  return false;
}

json::value date_or_null(const std::optional<day_t>& d) { return d ? json::value(format_date(*d)) : json::value(nullptr); }
json::value clock_or_null(const std::optional<int>& c) { return c ? json::value(format_clock(*c)) : json::value(nullptr); }

json::object event_json(const findings& f) {
  json::object data;
  data["title"] = f.title;
  data["date"] = date_or_null(f.date);
  data["date_range"] = f.date_range ? json::value(json::object{{"from", format_date(f.date_range->first)},
                                                               {"to", format_date(f.date_range->second)}})
                                    : json::value(nullptr);
  data["start_time"] = clock_or_null(f.start);
  data["end_time"] = clock_or_null(f.end);
  data["time_window"] = f.window ? json::value(json::object{{"from", format_clock(f.window->first)},
                                                           {"to", format_clock(f.window->second)}})
                                 : json::value(nullptr);
  data["duration_minutes"] = f.duration ? json::value(*f.duration) : json::value(nullptr);
  data["participants"] = json::value_from(f.participants);
  data["resources"] = json::value_from(f.resources);
  return data;
}

std::string explain(const findings& f) {
  if (f.intent == "query") {
    std::string out = f.query_kind == "resource" ? "A question about the " + join(f.resources)
                      : f.query_kind == "events" ? "A question about what is on the calendar"
                                                 : "A question about availability";
    if (f.date) out += " on " + day_text(*f.date);
    else if (f.date_range) out += " " + f.range_phrase;
    else out += " (no day given)";
    if (!f.participants.empty() && f.query_kind != "resource") out += " for " + join(f.participants);
    return out + ".";
  }
  const std::string verb = f.intent == "cancel" ? "cancel" : f.intent == "modify" ? "move" : "create";
  std::string out = "A " + verb + " request: \"" + f.title + "\"";
  if (f.intent == "modify") out += " to";
  if (f.date) {
    out += " on " + day_text(*f.date);
    if (f.start) out += " at " + format_clock(*f.start);
    if (f.end && f.intent == "create") out += "\u2013" + format_clock(*f.end);
    else if (f.window) out += " in the " + f.window_phrase;
  } else if (f.start) {
    out += " at " + format_clock(*f.start);
  } else if (f.date_range) {
    out += ", " + f.range_phrase + " (no day or time given)";
  } else if (f.intent != "cancel") {
    out += " (no day given)";
  }
  if (!f.participants.empty()) out += " for " + join(f.participants);
  if (!f.resources.empty()) out += ", needing the " + join(f.resources);
  return out + ".";
}

class nl_parser_agent final : public native_agent {
 public:
  nl_parser_agent(std::shared_ptr<calendar> cal, std::shared_ptr<const agents::tool_registry> tools)
      : native_agent("nl_parser",
                     "Parses a household request in plain language: an event to create (one or several), "
                     "an event to cancel or move, or a question about the calendars.",
                     std::move(cal), std::move(tools)) {}

 protected:
  protocol::envelope compute(const agents::agent_context& context, const household& h) const override {
    std::string request = request_text(context.input);
    if (request.empty())
      return make_failure("invalid_input",
                          "nl_parser: the workflow input has no request text (expected a string or "
                          "{\"request\": \"...\"})");
    std::size_t total = request.size();
    for (const auto& answer : context.clarification_answers) total += answer.size() + 2;
    // The phrase patterns run on std::regex, whose backtracking recurses
    // per character: a household request is a sentence or two, and a text
    // far longer is refused rather than risking the stack.
    if (total > max_request_bytes)
      return make_failure("invalid_input", "nl_parser: the request is " + std::to_string(total) +
                                               " bytes long; a scheduling request may have at most " +
                                               std::to_string(max_request_bytes));
    request = parser::normalize(std::move(request));
    const day_t today = day_of(reference_now(h, context.input));
    const auto answers = context.clarification_answers;
    std::string answer_text;
    for (const auto& answer : answers) answer_text += ". " + parser::normalize(answer);

    std::vector<std::string> notes;
    // A request with nothing to read is replaced by the answer to the
    // question about it, not completed by it.
    if (!answers.empty() && !has_signal(parser::read_request(h, request, today))) {
      request = answer_text.substr(2);
      answer_text.clear();
      notes.push_back("the request was unreadable: the answer replaces it");
    }
    std::vector<std::string> parts{request};
    if (parser::read_request(h, request, today).intent == "create") parts = split_compound(h, request, today);
    if (parts.size() > max_events) parts.resize(max_events);

    std::vector<findings> events;
    for (const auto& part : parts) {
      findings f = parser::read_request(h, part + answer_text, today);
      if (!events.empty()) inherit(events.back(), f);
      if (!f.unknown_people.empty() && !answers.empty() && settles_unknown_people(h, answers)) {
        notes.push_back("left out after the answer: " + join(f.unknown_people));
        f.unknown_people.clear();
      }
      finish(f);
      events.push_back(std::move(f));
    }
    return envelope(h, events, request + answer_text, notes);
  }

 private:
  // "…Saturday 2pm and Sunday at 3pm": a part without a title of its own
  // continues the previous event.
  static void inherit(const findings& previous, findings& f) {
    if (f.title != "Event") return;
    f.title = previous.title;
    if (f.participants.empty()) {
      f.participants = previous.participants;
      f.participants_named = previous.participants_named;
    }
    if (f.resources.empty()) f.resources = previous.resources;
  }

  static void finish(findings& f) {
    if (f.start && f.end) {
      f.duration = *f.end - *f.start;
    } else if (f.start && f.duration) {
      if (*f.start + *f.duration <= minutes_per_day) f.end = *f.start + *f.duration;
    }
  }

  protocol::envelope envelope(const household& h, std::vector<findings>& events, const std::string& text,
                              const std::vector<std::string>& notes) const {
    std::vector<assessment> assessed;
    for (auto& f : events) {
      assessed.push_back(assess(h, f));
      if (f.intent == "create" && !f.duration && !assessed.back().nonsense) {
        f.duration = 60;
        if (f.start && *f.start + 60 <= minutes_per_day) f.end = *f.start + 60;
        assessed.back().why.push_back("no duration given: 60 minutes assumed");
      }
    }
    const findings& first = events.front();
    json::object data = event_json(first);
    data["intent"] = first.intent;
    data["priority"] = first.priority;
    data["flexibility"] = first.start ? "fixed" : "flexible";
    std::vector<std::string> unresolved = first.unresolved;
    for (const auto& name : first.unknown_people) unresolved.push_back("person \"" + name + "\"");
    data["unresolved"] = json::value_from(unresolved);
    if (first.intent == "query") data["query_kind"] = first.query_kind;
    if (first.intent == "modify" && first.original_date) data["original_date"] = format_date(*first.original_date);

    double confidence = 1.0;
    std::size_t weakest = 0;
    for (std::size_t i = 0; i < assessed.size(); ++i)
      if (assessed[i].confidence < confidence) {
        confidence = assessed[i].confidence;
        weakest = i;
      }
    std::string reasoning = "Rule-based parser (offline) on \"" + text + "\": ";
    std::string explanation;
    if (events.size() > 1) {
      json::array list;
      std::vector<std::string> each;
      for (std::size_t i = 0; i < events.size(); ++i) {
        list.push_back(event_json(events[i]));
        each.push_back(explain(events[i]));
        reasoning += "event " + std::to_string(i + 1) + ": " + join(assessed[i].why, "; ", "; ") + " = " +
                     format_score(assessed[i].confidence) + ". ";
      }
      data["events"] = std::move(list);
      explanation = "A compound request with " + std::to_string(events.size()) + " events: " + join(each, " ", " ");
    } else {
      reasoning += join(assessed[0].why, "; ", "; ") + " = " + format_score(confidence) + ".";
      explanation = assessed[0].nonsense ? "No event and no question found in the request." : explain(first);
    }
    if (!notes.empty()) reasoning += " Notes: " + join(notes, "; ", "; ") + ".";
    if (confidence < 0.7 || assessed[weakest].nonsense) {
      std::string q = assessed[weakest].question.value_or("Could you restate the request with a day and a time?");
      if (events.size() > 1)
        q = "Your request holds " + std::to_string(events.size()) + " events; about event " +
            std::to_string(weakest + 1) + " (\"" + events[weakest].title + "\"): " + q;
      data["clarification_question"] = std::move(q);
    }
    return make_envelope(std::move(data), std::move(explanation), confidence, std::move(reasoning));
  }
};

}  // namespace

std::shared_ptr<agents::agent> make_nl_parser(std::shared_ptr<calendar> cal,
                                              std::shared_ptr<const agents::tool_registry> tools) {
  return std::make_shared<nl_parser_agent>(std::move(cal), std::move(tools));
}

}  // namespace switchboard::scheduling
