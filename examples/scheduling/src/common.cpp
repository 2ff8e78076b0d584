// Slot and resource checks shared by the sample's agents, and how they read
// the calendar.
#include "detail.hpp"

#include <switchboard/agents/call_tool.hpp>
#include <switchboard/scheduling/agents.hpp>
#include <switchboard/scheduling/tools.hpp>

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace switchboard::scheduling::detail {
namespace {

std::optional<day_t> date_field(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_string()) return std::nullopt;
  return parse_date(v->get_string());
}

std::optional<int> clock_field(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_string()) return std::nullopt;
  return parse_clock(v->get_string());
}


bool applies(unsigned days, const std::string& role, const std::vector<const member*>& who,
             day_t day) {
  if (days != 0 && (days & (1u << weekday(day))) == 0) return false;
  if (role.empty()) return true;
  return std::ranges::any_of(who, [&](const member* m) { return m->role == role; });
}

}  // namespace

request decode_request(const json::object& data) {
  request r;
  if (const auto* v = data.if_contains("intent"); v && v->is_string()) r.intent = v->get_string();
  if (const auto* v = data.if_contains("title"); v && v->is_string()) r.title = v->get_string();
  r.date = date_field(data, "date");
  if (const auto* v = data.if_contains("date_range"); v && v->is_object()) {
    const auto from = date_field(v->get_object(), "from");
    const auto to = date_field(v->get_object(), "to");
    if (from && to && *from <= *to) r.date_range = std::pair{*from, *to};
  }
  r.start_time = clock_field(data, "start_time");
  r.end_time = clock_field(data, "end_time");
  if (const auto* v = data.if_contains("time_window"); v && v->is_object()) {
    const auto from = clock_field(v->get_object(), "from");
    const auto to = clock_field(v->get_object(), "to");
    if (from && to && *from < *to) r.time_window = std::pair{*from, *to};
  }
  if (const auto* v = data.if_contains("duration_minutes"); v && v->is_int64())
    r.duration_minutes = static_cast<int>(v->get_int64());
  r.participants = string_list(data, "participants");
  r.resources = string_list(data, "resources");
  if (const auto* v = data.if_contains("flexibility"); v && v->is_string())
    r.flexibility = v->get_string();
  if (const auto* v = data.if_contains("query_kind"); v && v->is_string()) r.query_kind = v->get_string();
  r.original_date = date_field(data, "original_date");
  return r;
}

std::vector<request> decode_events(const json::object& data) {
  const request whole = decode_request(data);
  std::vector<request> out;
  if (const auto* v = data.if_contains("events"); v && v->is_array() && v->get_array().size() > 1) {
    for (const auto& e : v->get_array()) {
      if (!e.is_object()) continue;
      request part = decode_request(e.get_object());
      part.intent = whole.intent;
      out.push_back(std::move(part));
    }
  }
  if (out.empty()) out.push_back(whole);
  return out;
}

std::optional<current_event> event_in_progress(const agents::agent_context& context) {
  const json::object* parsed = output_of(context, "nl_parser");
  if (!parsed) return std::nullopt;
  std::vector<request> events = decode_events(*parsed);
  std::size_t index = 0;
  if (const json::object* booked = output_of(context, "booking"))
    if (const auto* next = booked->if_contains("next_event"); next && next->is_int64() && next->get_int64() > 0)
      index = static_cast<std::size_t>(next->get_int64());
  if (index >= events.size()) index = events.size() - 1;
  return current_event{std::move(events[index]), index, events.size()};
}

people resolve_people(const household& h, const std::vector<std::string>& names) {
  people out;
  for (const auto& name : names) {
    const member* m = h.find_member(name);
    if (!m) {
      out.unknown.push_back(name);
    } else if (std::ranges::find(out.members, m) == out.members.end()) {
      out.members.push_back(m);
    }
  }
  if (names.empty()) {
    out.defaulted = true;
    for (const auto& m : h.members)
      if (m.in_household) out.members.push_back(&m);
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<const member*>& members) {
  std::vector<std::string> out;
  for (const auto* m : members) out.push_back(m->name);
  return out;
}

bool is_child(const member& m) { return m.role == "child"; }

slot_check check_slot(const household& h, const std::vector<const member*>& who, interval slot,
                      minute_t now) {
  slot_check c;
  c.slot = slot;
  c.in_past = slot.start < now;
  for (const member* m : who) {
    bool free = true;
    for (const auto& entry : m->calendar) {
      for (auto& o : occurrences(entry, slot)) {
        c.busy.push_back({m->name, std::move(o)});
        free = false;
      }
    }
    if (free) c.available.push_back(m->name);
  }
  const day_t day = day_of(slot.start);
  const minute_t midnight = start_of(day);
  for (const auto& rule : h.hard_rules) {
    if (!applies(rule.days, rule.applies_to_role, who, day)) continue;
    const bool too_early = rule.not_before && slot.start < midnight + *rule.not_before;
    const bool too_late = rule.not_after && slot.end > midnight + *rule.not_after;
    if (too_early || too_late) c.hard_violated.push_back(&rule);
  }
  double score = 1.0;
  for (const auto& rule : h.soft_rules) {
    if (!applies(rule.days, rule.applies_to_role, who, day)) continue;
    const bool early = rule.prefer_from && slot.start < midnight + *rule.prefer_from;
    const bool late = rule.prefer_to && slot.end > midnight + *rule.prefer_to;
    if (early || late) {
      c.soft_violated.push_back(&rule);
      score -= rule.weight;
    }
  }
  score = std::clamp(score, 0.0, 1.0);
  // An infeasible slot keeps a little of its score so that among infeasible
  // slots the better ones still sort first.
  c.score = std::round((c.feasible() ? score : score * 0.2) * 100.0) / 100.0;
  return c;
}

std::string free_driver(const household& h, interval slot) {
  for (const auto& m : h.members) {
    if (!m.drives) continue;
    const bool busy = std::ranges::any_of(m.calendar, [&](const calendar_entry& e) {
      return !occurrences(e, slot).empty();
    });
    if (!busy) return m.name;
  }
  return {};
}

resource_check check_resource(const household& h, const resource& res, const std::vector<const member*>& who,
                              interval slot) {
  resource_check c;
  c.res = &res;
  const int count = static_cast<int>(who.size());
  if (res.kind == "vehicle") {
    c.needs_driver = std::ranges::none_of(who, [](const member* m) { return m->drives; });
    c.needed = count + (c.needs_driver ? 1 : 0);
    if (c.needs_driver) c.driver = free_driver(h, slot);
  } else if (res.kind == "room") {
    c.needed = std::max(count, 1);
  } else {
    c.needed = 1;
  }
  c.capacity_ok = c.needed <= res.capacity;
  for (const auto& booking : res.bookings)
    for (auto& o : occurrences(booking, slot)) c.overlapping.push_back(std::move(o));
  return c;
}

bool resources_available(const household& h, const std::vector<const resource*>& resources,
                         const std::vector<const member*>& who, interval slot) {
  return std::ranges::all_of(resources, [&](const resource* r) {
    return check_resource(h, *r, who, slot).available();
  });
}

std::vector<slot_check> find_slots(const household& h, const std::vector<const member*>& who,
                                   const std::vector<const resource*>& resources, day_t first,
                                   int days, int duration, std::pair<int, int> window,
                                   minute_t now, std::optional<minute_t> preferred_start,
                                   std::size_t limit) {
  std::vector<slot_check> found;
  for (day_t day = first; day < first + days; ++day) {
    for (int start = window.first; start + duration <= window.second; start += 30) {
      const interval slot{start_of(day) + start, start_of(day) + start + duration};
      slot_check c = check_slot(h, who, slot, now);
      if (c.feasible() && resources_available(h, resources, who, slot)) found.push_back(std::move(c));
    }
  }
  auto distance = [&](const slot_check& c) {
    return preferred_start ? std::abs(c.slot.start - *preferred_start) : minute_t{0};
  };
  // Moving far from the preferred time costs up to 0.3 of the score.
  auto rank = [&](const slot_check& c) {
    return c.score - std::min(0.3, 0.02 * static_cast<double>(distance(c)) / 30.0);
  };
  std::ranges::stable_sort(found, [&](const slot_check& a, const slot_check& b) {
    if (rank(a) != rank(b)) return rank(a) > rank(b);
    return a.slot.start < b.slot.start;
  });
  std::vector<slot_check> picked;
  for (auto& c : found) {
    if (picked.size() >= limit) break;
    const bool overlaps = std::ranges::any_of(
        picked, [&](const slot_check& p) { return p.slot.overlaps(c.slot); });
    if (!overlaps) picked.push_back(std::move(c));
  }
  return picked;
}

std::optional<minute_t> input_now(const json::object& input) {
  const auto* v = input.if_contains("now");
  if (!v) return std::nullopt;
  // A reference time that is given but unreadable is refused: falling back
  // to the household's would plan every request for the wrong week.
  const auto t = v->is_string() ? parse_datetime(v->get_string()) : std::nullopt;
  if (!t)
    throw std::invalid_argument("the input's \"now\" must be a date and time \"YYYY-MM-DDTHH:MM\", got " +
                                json::serialize(*v));
  return t;
}

minute_t reference_now(const household& h, const json::value& input) {
  const auto* o = input.if_object();
  const auto given = o ? input_now(*o) : std::nullopt;
  return given ? *given : h.now;
}

std::string request_text(const json::value& input) {
  if (const auto* s = input.if_string()) return std::string(*s);
  if (const auto* o = input.if_object())
    if (const auto* v = o->if_contains("request"); v && v->is_string())
      return std::string(v->get_string());
  return {};
}

const json::object* output_of(const agents::agent_context& context, std::string_view agent) {
  const protocol::envelope* e = context.outputs.latest(agent);
  if (!e || e->failed()) return nullptr;
  return &e->data;
}

protocol::envelope make_envelope(json::object data, std::string explanation, double confidence,
                                 std::string reasoning) {
  protocol::envelope e;
  e.data = std::move(data);
  e.explanation = std::move(explanation);
  e.confidence = std::clamp(confidence, 0.0, 1.0);
  e.reasoning = std::move(reasoning);
  return e;
}

protocol::envelope make_failure(std::string type, std::string message) {
  protocol::envelope e;
  e.explanation = message;
  e.reasoning = message;
  e.confidence = 0.0;
  e.error = protocol::error_record{std::move(type), std::move(message), false, {}};
  return e;
}

json::object slot_json(const interval& slot) {
  return {{"start", format_datetime(slot.start)}, {"end", format_datetime(slot.end)}};
}

std::optional<interval> slot_from_json(const json::value* value) {
  if (!value || !value->is_object()) return std::nullopt;
  const auto& o = value->get_object();
  const auto* s = o.if_contains("start");
  const auto* e = o.if_contains("end");
  if (!s || !e || !s->is_string() || !e->is_string()) return std::nullopt;
  const auto start = parse_datetime(s->get_string());
  const auto end = parse_datetime(e->get_string());
  if (!start || !end || *end <= *start) return std::nullopt;
  return interval{*start, *end};
}

std::optional<interval> recommended_slot(const json::object* scheduling_data) {
  if (!scheduling_data) return std::nullopt;
  return slot_from_json(scheduling_data->if_contains("recommended_slot"));
}

std::string join(const std::vector<std::string>& items, std::string_view last,
                 std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? std::string(last) : std::string(separator);
    out += items[i];
  }
  return out;
}

std::vector<std::string> string_list(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const auto* v = o.if_contains(key); v && v->is_array())
    for (const auto& item : v->get_array())
      if (item.is_string()) out.emplace_back(item.get_string());
  return out;
}

std::string text(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string{};
}

std::string format_score(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

boost::asio::awaitable<calendar_agent::household_read> calendar_agent::read_household(
    agents::agent_context& context) const {
  household_read out;
  if (!tools_) {
    try {
      out.value = calendar_->snapshot();
    } catch (const data_error& e) {
      out.problem = name_ + ": " + e.what();
    }
    co_return out;
  }
  json::value arguments = json::object{{"calendars", true}};
  std::string call_id = "household";
  const std::string_view tool_name = household_tool;
  const agents::tool_result read =
      co_await agents::call_tool(context, name_, *tools_, tool_name, std::move(arguments), std::move(call_id));
  if (!read.ok()) {
    out.problem = name_ + ": " + std::string(household_tool) + ": " + read.error().message;
    co_return out;
  }
  try {
    out.value = household_from_json(read.value(), std::string(household_tool) + " result");
  } catch (const data_error& e) {
    out.problem = name_ + ": " + e.what();
  }
  co_return out;
}

boost::asio::awaitable<protocol::envelope> native_agent::run(agents::agent_context& context) {
  household_read h = co_await read_household(context);
  if (!h.value) co_return make_failure("calendar_error", h.problem);
  co_return compute(context, *h.value);
}

}  // namespace switchboard::scheduling::detail
