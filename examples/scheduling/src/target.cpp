// The event a cancel or a move is about, found on the calendars by title,
// participants and day; an event is every dated entry with its title and
// interval (the participants' entries, the driver's, the resources').
#include "detail.hpp"

#include <algorithm>
#include <cctype>

namespace switchboard::scheduling::detail {
namespace {

std::string lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (out.starts_with("the ")) out.erase(0, 4);
  return out;
}

// "dentist" names "Dentist appointment"; "swim meet" names "Swim meet".
bool title_matches(std::string_view wanted, std::string_view title) {
  const std::string a = lowered(wanted);
  const std::string b = lowered(title);
  if (a.empty() || b.empty()) return false;
  return a == b || b.find(a) != std::string::npos || a.find(b) != std::string::npos;
}

bool same_entry(const calendar_entry& e, const std::string& title, const interval& when) {
  return e.once && *e.once == when && lowered(e.title) == lowered(title);
}

std::vector<const member*> searched(const household& h, const std::vector<std::string>& names) {
  std::vector<const member*> out;
  for (const auto& n : names)
    if (const member* m = h.find_member(n)) out.push_back(m);
  if (out.empty())
    for (const auto& m : h.members) out.push_back(&m);
  return out;
}

std::string upcoming_list(const std::vector<const member*>& who, minute_t now) {
  std::vector<std::string> items;
  for (const member* m : who)
    for (const auto& e : m->calendar)
      if (e.once && e.once->end > now && e.by != "driving")
        items.push_back(e.title + " (" + m->name + ", " + describe(*e.once) + ")");
  if (items.empty()) return "no single events";
  if (items.size() > 6) items.resize(6);
  return join(items);
}

}  // namespace

target_lookup find_target(const household& h, const std::string& title,
                          const std::vector<std::string>& participants, std::optional<day_t> date, minute_t now) {
  const auto who = searched(h, participants);
  const calendar_entry* best = nullptr;
  const calendar_entry* weekly = nullptr;
  const member* weekly_owner = nullptr;
  for (const member* m : who) {
    for (const auto& e : m->calendar) {
      if (!title_matches(title, e.title)) continue;
      if (!e.once) {
        weekly = &e;
        weekly_owner = m;
        continue;
      }
      if (e.once->end <= now) continue;
      if (date && day_of(e.once->start) != *date) continue;
      if (!best || e.once->start < best->once->start) best = &e;
    }
  }
  target_lookup out;
  const std::string whose = participants.empty() ? std::string("the household's calendars")
                                                 : join(names_of(who)) + "'s calendar";
  if (!best) {
    if (weekly)
      out.problem = "\"" + weekly->title + "\" is a weekly entry of " + weekly_owner->name +
                    "'s calendar; the sample cancels and moves single events only";
    else
      out.problem = "there is no upcoming event \"" + title + "\"" +
                    (date ? " on " + format_date(*date) : std::string{}) + " on " + whose + " (it holds " +
                    upcoming_list(who, now) + ")";
    return out;
  }
  target_event t{best->title, *best->once, {}, {}, {}};
  for (const auto& m : h.members)
    for (const auto& e : m.calendar)
      if (same_entry(e, t.title, t.when)) {
        if (e.by == "driving") t.driver = m.name;
        else if (std::ranges::find(t.participants, m.name) == t.participants.end()) t.participants.push_back(m.name);
      }
  for (const auto& r : h.resources)
    for (const auto& e : r.bookings)
      if (same_entry(e, t.title, t.when)) t.resources.push_back(r.name);
  out.found = std::move(t);
  return out;
}

household without(household h, const target_event& target) {
  for (auto& m : h.members)
    std::erase_if(m.calendar, [&](const calendar_entry& e) { return same_entry(e, target.title, target.when); });
  for (auto& r : h.resources)
    std::erase_if(r.bookings, [&](const calendar_entry& e) { return same_entry(e, target.title, target.when); });
  return h;
}

household planning_view(const household& h, const request& r, minute_t now, std::string* error) {
  if (r.intent != "modify") return h;
  const auto lookup = find_target(h, r.title, r.participants, r.original_date, now);
  if (!lookup.found) {
    if (error) *error = lookup.problem;
    return h;
  }
  return without(h, *lookup.found);
}

household view_for_event(const household& h, const json::object& event) {
  const auto from = slot_from_json(event.if_contains("moved_from"));
  const auto* title = event.if_contains("title");
  if (!from || !title || !title->is_string()) return h;
  return without(h, target_event{std::string(title->get_string()), *from, {}, {}, {}});
}

}  // namespace switchboard::scheduling::detail
