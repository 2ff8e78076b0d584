// query, rule-based: the offline stand-in for the LLM-backed agent. Answers
// availability questions with the free slots every participant shares within
// the household's hard rules.
#include "detail.hpp"

#include <switchboard/scheduling/agents.hpp>

#include <algorithm>

namespace switchboard::scheduling {
namespace {

using namespace detail;

constexpr minute_t min_free = 30;

class query_agent final : public native_agent {
 public:
  explicit query_agent(std::shared_ptr<const household> data)
      : native_agent("query",
                     "Answers availability questions (\"When is everyone free on Sunday?\") with "
                     "the free slots the participants share.",
                     std::move(data)) {}

 protected:
  protocol::envelope compute(const agents::agent_context& context) const override {
    const json::object* parsed = output_of(context, "nl_parser");
    if (!parsed)
      return make_failure("missing_input", "query needs nl_parser's output and there is none");
    const request r = decode_request(*parsed);
    const people who = resolve_people(data(), r.participants);
    if (!who.unknown.empty())
      return make_failure("unknown_participant", "unknown participant '" + who.unknown.front() +
                                                     "' in the question; the household knows " +
                                                     data().member_names());
    const minute_t now = reference_now(data(), context.input);
    day_t first = day_of(now);
    int days = 7;
    if (r.date) {
      first = *r.date;
      days = 1;
    } else if (r.date_range) {
      first = std::max(first, r.date_range->first);
      days = static_cast<int>(std::clamp<day_t>(r.date_range->second - first + 1, 1, 14));
    }
    json::array free_slots;
    json::array busy;
    std::vector<std::string> spans;
    for (day_t day = first; day < first + days; ++day) {
      const interval window = day_window(who.members, day, r.time_window, now);
      if (window.length() <= 0) continue;
      std::vector<interval> taken;
      for (const member* m : who.members)
        for (const auto& entry : m->calendar)
          for (const auto& o : occurrences(entry, window)) {
            taken.push_back(o.when);
            busy.push_back({{"name", m->name}, {"title", o.title},
                            {"start", format_datetime(o.when.start)},
                            {"end", format_datetime(o.when.end)}});
          }
      for (const interval& gap : gaps(window, std::move(taken))) {
        json::object o = slot_json(gap);
        o["duration_minutes"] = gap.length();
        free_slots.push_back(std::move(o));
        spans.push_back(days == 1 ? format_clock(static_cast<int>(gap.start - start_of(day))) + "\u2013" +
                                        format_clock(static_cast<int>(gap.end - start_of(day)))
                                  : describe(gap));
      }
    }
    const std::vector<std::string> names = names_of(who.members);
    const bool everyone = who.defaulted || names.size() > 2;
    const std::string subject = everyone ? "Everyone (" + join(names) + ") is"
                                         : join(names) + (names.size() == 1 ? " is" : " are");
    const std::string when = days == 1 ? "on " + std::string(weekday_name(weekday(first))) + " " + format_date(first)
                                       : "between " + format_date(first) + " and " + format_date(first + days - 1);
    const std::string answer =
        spans.empty() ? "There is no time " + when + " when " + join(names) +
                            " are all free (slots of at least 30 minutes within the household rules)."
                      : subject + " free " + when + ": " + join(spans) + ".";
    json::object data;
    data["question"] = request_text(context.input);
    data["date"] = r.date ? json::value(format_date(*r.date)) : json::value(nullptr);
    data["participants"] = json::value_from(names_of(who.members));
    data["free_slots"] = std::move(free_slots);
    data["busy"] = std::move(busy);
    data["answer"] = answer;
    return make_envelope(std::move(data), answer, r.date ? 0.9 : 0.8,
                         "Rule-based query (offline): intersected the calendars of " +
                             join(names_of(who.members)) +
                             " within each day's allowed hours (the strictest applicable hard rules), "
                             "keeping free stretches of at least 30 minutes.");
  }

 private:
  interval day_window(const std::vector<const member*>& who, day_t day,
                      const std::optional<std::pair<int, int>>& part, minute_t now) const {
    minute_t from = start_of(day);
    minute_t to = start_of(day) + minutes_per_day;
    for (const auto& rule : data().hard_rules) {
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

std::shared_ptr<agents::agent> make_query(std::shared_ptr<const household> data) {
  return std::make_shared<query_agent>(std::move(data));
}

}  // namespace switchboard::scheduling
