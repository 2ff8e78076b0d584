// The household as JSON in the data files' form: what the calendar.household
// tool answers and what older prompt versions read as input/context. Built
// from a calendar snapshot, so it holds what earlier runs booked, not only
// the seed data; household_from_json() reads it back.
#include <switchboard/scheduling/agents.hpp>

#include <boost/json/value_from.hpp>

namespace switchboard::scheduling {
namespace {

namespace json = boost::json;

json::array weekdays_json(unsigned mask) {
  json::array out;
  for (int d = 0; d < 7; ++d)
    if (mask & (1u << d)) out.push_back(json::value(std::string(weekday_name(d)).substr(0, 3)));
  return out;
}

json::object entry_json(const calendar_entry& e) {
  json::object o{{"title", e.title}};
  if (!e.by.empty()) o["by"] = e.by;
  if (e.once) {
    o["start"] = format_datetime(e.once->start);
    o["end"] = format_datetime(e.once->end);
  } else {
    o["every"] = weekdays_json(e.weekdays);
    o["from"] = format_clock(e.from);
    o["to"] = format_clock(e.to);
  }
  return o;
}

json::array entries_json(const std::vector<calendar_entry>& entries) {
  json::array out;
  for (const auto& e : entries) out.push_back(entry_json(e));
  return out;
}

json::object rule_json(const std::string& id, const std::string& description, const std::string& role, unsigned days) {
  json::object o{{"id", id}, {"description", description}};
  if (!role.empty()) o["applies_to_role"] = role;
  if (days) o["days"] = weekdays_json(days);
  return o;
}

}  // namespace

boost::json::object sample_context(const household& h, bool with_calendars) {
  json::array members;
  for (const auto& m : h.members) {
    json::object o{{"name", m.name},         {"role", m.role},     {"aliases", json::value_from(m.aliases)},
                   {"household", m.in_household}, {"drives", m.drives}};
    if (with_calendars) o["calendar"] = entries_json(m.calendar);
    members.push_back(std::move(o));
  }
  json::array resources;
  for (const auto& r : h.resources) {
    json::object o{{"name", r.name}, {"kind", r.kind}, {"capacity", r.capacity}, {"aliases", json::value_from(r.aliases)}};
    if (!r.unit.empty()) o["unit"] = r.unit;
    if (with_calendars) o["bookings"] = entries_json(r.bookings);
    resources.push_back(std::move(o));
  }
  json::array hard;
  for (const auto& rule : h.hard_rules) {
    json::object o = rule_json(rule.id, rule.description, rule.applies_to_role, rule.days);
    if (rule.not_before) o["not_before"] = format_clock(*rule.not_before);
    if (rule.not_after) o["not_after"] = format_clock(*rule.not_after);
    hard.push_back(std::move(o));
  }
  json::array soft;
  for (const auto& rule : h.soft_rules) {
    json::object o = rule_json(rule.id, rule.description, rule.applies_to_role, rule.days);
    if (rule.prefer_from) o["prefer_from"] = format_clock(*rule.prefer_from);
    if (rule.prefer_to) o["prefer_to"] = format_clock(*rule.prefer_to);
    o["weight"] = rule.weight;
    soft.push_back(std::move(o));
  }
  json::object out;
  if (!h.name.empty()) out["household"] = h.name;
  out["now"] = format_datetime(h.now);
  out["members"] = std::move(members);
  out["resources"] = std::move(resources);
  out["rules"] = json::object{{"hard", std::move(hard)}, {"soft", std::move(soft)}};
  return out;
}

}  // namespace switchboard::scheduling
