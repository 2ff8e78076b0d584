// query, rule-based: the offline stand-in for the LLM-backed agent. Answers
// three kinds of question from the calendar: the free slots every participant
// shares within the household's hard rules, what someone has on a day, and
// whether a resource is free.
#include "detail.hpp"

#include <switchboard/scheduling/agents.hpp>

#include <algorithm>

namespace switchboard::scheduling {
namespace {

using namespace detail;

constexpr minute_t min_free = 30;

class query_agent final : public native_agent {
 public:
  query_agent(std::shared_ptr<calendar> cal, std::shared_ptr<const agents::tool_registry> tools)
      : native_agent("query",
                     "Answers questions about the calendars: when people are free (\"When is everyone free "
                     "on Sunday?\"), what someone has on a day, whether a resource is free.",
                     std::move(cal), std::move(tools)) {}

 protected:
  protocol::envelope compute(const agents::agent_context& context, const household& h) const override {
    const json::object* parsed = output_of(context, "nl_parser");
    if (!parsed)
      return make_failure("missing_input", "query needs nl_parser's output and there is none");
    const request r = decode_request(*parsed);
    const people who = resolve_people(h, r.participants);
    if (!who.unknown.empty())
      return make_failure("unknown_participant", "unknown participant '" + who.unknown.front() +
                                                     "' in the question; the household knows " +
                                                     h.member_names());
    const minute_t now = reference_now(h, context.input);
    day_t first = day_of(now);
    int days = 7;
    if (r.date) {
      first = *r.date;
      days = 1;
    } else if (r.date_range) {
      first = std::max(first, r.date_range->first);
      days = static_cast<int>(std::clamp<day_t>(r.date_range->second - first + 1, 1, 14));
    }
    const std::string when = days == 1 ? "on " + std::string(weekday_name(weekday(first))) + " " + format_date(first)
                                       : "between " + format_date(first) + " and " + format_date(first + days - 1);
    json::object data;
    data["question"] = request_text(context.input);
    data["kind"] = r.query_kind;
    data["date"] = r.date ? json::value(format_date(*r.date)) : json::value(nullptr);
    data["participants"] = json::value_from(names_of(who.members));
    std::string answer;
    if (r.query_kind == "resource") {
      if (r.resources.empty())
        return make_failure("invalid_input", "query: a question about a resource names none (the household has " +
                                                 h.resource_names() + ")");
      const resource* res = h.find_resource(r.resources.front());
      if (!res)
        return make_failure("unknown_resource", "unknown resource '" + r.resources.front() +
                                                    "' in the question; the household has " + h.resource_names());
      answer = resource_answer(h, *res, r, first, days, now, when, data);
    } else if (r.query_kind == "events") {
      answer = events_answer(who.members, first, days, r.time_window, now, when, data);
    } else {
      answer = free_answer(h, who, first, days, r.time_window, now, when, data);
    }
    data["answer"] = answer;
    return make_envelope(std::move(data), "Answer: " + answer, r.date ? 0.9 : 0.8,
                         "Rule-based query (offline, " + r.query_kind + "): read the calendars of " +
                             join(names_of(who.members)) +
                             " and the resources' bookings within each day's allowed hours (the strictest "
                             "applicable hard rules), keeping free stretches of at least 30 minutes.");
  }

 private:
  std::string free_answer(const household& h, const people& who, day_t first, int days,
                          const std::optional<std::pair<int, int>>& part, minute_t now, const std::string& when,
                          json::object& data) const {
    json::array free_slots;
    json::array busy;
    std::vector<std::string> spans;
    for (day_t day = first; day < first + days; ++day) {
      const interval window = day_window(h, who.members, day, part, now);
      if (window.length() <= 0) continue;
      std::vector<interval> taken;
      for (const member* m : who.members)
        for (const auto& entry : m->calendar)
          for (const auto& o : occurrences(entry, window)) {
            taken.push_back(o.when);
            busy.push_back(busy_json(m->name, o));
          }
      for (const interval& gap : gaps(window, std::move(taken))) spans.push_back(add_slot(gap, day, days, free_slots));
    }
    data["free_slots"] = std::move(free_slots);
    data["busy"] = std::move(busy);
    const std::vector<std::string> names = names_of(who.members);
    const bool everyone = who.defaulted || names.size() > 2;
    const std::string subject = everyone ? "Everyone (" + join(names) + ") is"
                                         : join(names) + (names.size() == 1 ? " is" : " are");
    return spans.empty() ? "There is no time " + when + " when " + join(names) +
                               (names.size() == 1 ? " is" : " are all") +
                               " free (slots of at least 30 minutes within the household rules)."
                         : subject + " free " + when + ": " + join(spans) + ".";
  }

  static std::string events_answer(const std::vector<const member*>& who, day_t first, int days,
                                   const std::optional<std::pair<int, int>>& part, minute_t now,
                                   const std::string& when, json::object& data) {
    json::array busy;
    std::vector<std::string> items;
    const interval range{std::max(start_of(first), days > 1 ? now : start_of(first)), start_of(first + days)};
    std::vector<std::pair<std::string, occurrence>> found;
    for (const member* m : who)
      for (const auto& entry : m->calendar)
        for (auto& o : occurrences(entry, range)) {
          const minute_t midnight = start_of(day_of(o.when.start));
          if (part && (o.when.end <= midnight + part->first || o.when.start >= midnight + part->second)) continue;
          found.emplace_back(m->name, std::move(o));
        }
    std::ranges::stable_sort(found, {}, [](const auto& p) { return p.second.when.start; });
    for (const auto& [name, o] : found) {
      busy.push_back(busy_json(name, o));
      items.push_back(o.title + (who.size() > 1 ? " (" + name + ")" : "") + " " +
                      (days == 1 ? format_clock(static_cast<int>(o.when.start - start_of(first))) + "\u2013" +
                                       format_clock(static_cast<int>(o.when.end - start_of(first)))
                                 : describe(o.when)) +
                      (o.by == "driving" ? " (driving)" : ""));
    }
    data["free_slots"] = json::array{};
    data["busy"] = std::move(busy);
    const std::string names = join(names_of(who));
    return items.empty() ? names + (who.size() == 1 ? " has" : " have") + " nothing on the calendar " + when + "."
                         : names + (who.size() == 1 ? " has" : " have") + " " + when + ": " + join(items) + ".";
  }

  std::string resource_answer(const household& h, const resource& res, const request& r, day_t first, int days,
                              minute_t now, const std::string& when, json::object& data) const {
    json::array bookings;
    json::array free_slots;
    std::vector<std::string> booked;
    std::vector<std::string> spans;
    for (day_t day = first; day < first + days; ++day) {
      // The resource's hours: only the rules that apply to everyone.
      const interval window = day_window(h, {}, day, r.time_window, now);
      if (window.length() <= 0) continue;
      std::vector<interval> taken;
      for (const auto& entry : res.bookings)
        for (const auto& o : occurrences(entry, window)) {
          taken.push_back(o.when);
          bookings.push_back({{"title", o.title}, {"by", o.by}, {"start", format_datetime(o.when.start)},
                              {"end", format_datetime(o.when.end)}});
          booked.push_back(describe(o.when) + " (" + o.title + (o.by.empty() ? "" : ", by " + o.by) + ")");
        }
      for (const interval& gap : gaps(window, std::move(taken))) spans.push_back(add_slot(gap, day, days, free_slots));
    }
    data["resource"] = res.name;
    data["bookings"] = std::move(bookings);
    data["free_slots"] = std::move(free_slots);
    const std::string part = r.time_window ? " (" + format_clock(r.time_window->first) + "\u2013" +
                                                 format_clock(r.time_window->second) + ")"
                                           : std::string{};
    if (booked.empty()) return "Yes: the " + res.name + " is free " + when + part + ".";
    return "No: the " + res.name + " is booked " + join(booked) +
           (spans.empty() ? "; it is not free " + when + part + "." : "; it is free " + join(spans) + ".");
  }

  static json::object busy_json(const std::string& name, const occurrence& o) {
    return {{"name", name}, {"title", o.title}, {"start", format_datetime(o.when.start)},
            {"end", format_datetime(o.when.end)}};
  }

  static std::string add_slot(const interval& gap, day_t day, int days, json::array& free_slots) {
    json::object o = slot_json(gap);
    o["duration_minutes"] = gap.length();
    free_slots.push_back(std::move(o));
    return days == 1 ? format_clock(static_cast<int>(gap.start - start_of(day))) + "\u2013" +
                           format_clock(static_cast<int>(gap.end - start_of(day)))
                     : describe(gap);
  }

  static interval day_window(const household& h, const std::vector<const member*>& who, day_t day,
                             const std::optional<std::pair<int, int>>& part, minute_t now) {
    minute_t from = start_of(day);
    minute_t to = start_of(day) + minutes_per_day;
    for (const auto& rule : h.hard_rules) {
      if (rule.days != 0 && (rule.days & (1u << weekday(day))) == 0) continue;
      if (!rule.applies_to_role.empty() &&
          std::ranges::none_of(who, [&](const member* m) { return m->role == rule.applies_to_role; }))
        continue;
      if (rule.not_before) from = std::max(from, start_of(day) + *rule.not_before);
      if (rule.not_after) to = std::min(to, start_of(day) + *rule.not_after);
    }
    if (part) {
      from = std::max(from, start_of(day) + part->first);
      to = std::min(to, start_of(day) + part->second);
    }
    from = std::max(from, now);
    return {from, std::max(from, to)};
  }

  static std::vector<interval> gaps(const interval& window, std::vector<interval> taken) {
    std::ranges::sort(taken, {}, &interval::start);
    std::vector<interval> out;
    minute_t cursor = window.start;
    for (const auto& t : taken) {
      if (t.start - cursor >= min_free) out.push_back({cursor, std::min(t.start, window.end)});
      cursor = std::max(cursor, t.end);
    }
    if (window.end - cursor >= min_free) out.push_back({cursor, window.end});
    std::erase_if(out, [](const interval& i) { return i.length() < min_free; });
    return out;
  }
};

}  // namespace

std::shared_ptr<agents::agent> make_query(std::shared_ptr<calendar> cal,
                                          std::shared_ptr<const agents::tool_registry> tools) {
  return std::make_shared<query_agent>(std::move(cal), std::move(tools));
}

}  // namespace switchboard::scheduling
