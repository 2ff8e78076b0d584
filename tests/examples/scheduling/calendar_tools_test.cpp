// The calendar tools (tools.hpp) called directly, as the hub would call
// them: the household read (and read back with household_from_json), the
// dated events over a range, the argument schemas, and the two changes
// keyed on run and call (replayed, refused, unkeyed) with their flags.
#include <switchboard/scheduling/tools.hpp>

#include <switchboard/agents/tool.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/scheduling/agents.hpp>
#include <switchboard/scheduling/calendar.hpp>

#include "scheduling/workflow_fixture.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include <optional>
#include <string>
#include <vector>

namespace switchboard::scheduling::testing {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

const std::string soccer =
    R"({"title": "Soccer practice", "start": "2026-03-07T14:00", "end": "2026-03-07T16:00",
        "participants": ["Maya"], "resources": ["minivan"], "moved_from": null})";
const std::string swim_meet = R"({"title": "Swim meet", "start": "2026-03-07T10:00", "end": "2026-03-07T11:30"})";

std::string text_of(const json::value& v) {
  return v.is_string() ? std::string(v.get_string()) : json::serialize(v);
}

// One line per meaningful field of the household, so that two households
// compare with a readable difference.
std::string entry_line(const calendar_entry& e) {
  std::string line = e.title + " by '" + e.by + "' ";
  if (e.once) return line + format_datetime(e.once->start) + ".." + format_datetime(e.once->end);
  return line + "weekly " + std::to_string(e.weekdays) + " " + format_clock(e.from) + "-" + format_clock(e.to);
}
std::vector<std::string> lines_of(const household& h) {
  std::vector<std::string> out{"name " + h.name, "now " + format_datetime(h.now)};
  for (const auto& m : h.members) {
    std::string aliases;
    for (const auto& a : m.aliases) aliases += a + ",";
    out.push_back("member " + m.name + " " + m.role + " [" + aliases + "] household=" +
                  std::to_string(m.in_household) + " drives=" + std::to_string(m.drives));
    for (const auto& e : m.calendar) out.push_back("  " + m.name + ": " + entry_line(e));
  }
  for (const auto& r : h.resources) {
    std::string aliases;
    for (const auto& a : r.aliases) aliases += a + ",";
    out.push_back("resource " + r.name + " " + r.kind + " " + std::to_string(r.capacity) + " " + r.unit + " [" +
                  aliases + "]");
    for (const auto& e : r.bookings) out.push_back("  " + r.name + ": " + entry_line(e));
  }
  for (const auto& rule : h.hard_rules)
    out.push_back("hard " + rule.id + " " + rule.description + " role=" + rule.applies_to_role +
                  " days=" + std::to_string(rule.days) +
                  " before=" + (rule.not_before ? format_clock(*rule.not_before) : "-") +
                  " after=" + (rule.not_after ? format_clock(*rule.not_after) : "-"));
  for (const auto& rule : h.soft_rules)
    out.push_back("soft " + rule.id + " " + rule.description + " role=" + rule.applies_to_role +
                  " days=" + std::to_string(rule.days) +
                  " from=" + (rule.prefer_from ? format_clock(*rule.prefer_from) : "-") +
                  " to=" + (rule.prefer_to ? format_clock(*rule.prefer_to) : "-") +
                  " weight=" + std::to_string(rule.weight));
  return out;
}

class calendar_tools : public ::testing::Test {
 protected:
  // The sample's seed in memory, its changes confirmed (the sample's default).
  calendar_tools()
      : calendar_(calendar::in_memory(load_household(sample_workflow_dir / "data"))),
        tools_(make_calendar_tool_registry(calendar_, {.confirm_changes = true, .booking_hold = {}})) {}

  // Validates `arguments` (JSON text) as the hub does for a model's call,
  // then calls the tool with the run and call ids the hub would give it.
  agents::tool_result call(std::string_view tool_name, const std::string& arguments, std::string call_id,
                           std::string workflow_id = "wf-tools") {
    const agents::tool_arguments validated = tools_->validate_arguments(tool_name, arguments);
    if (!validated.ok()) {
      ADD_FAILURE() << validated.describe(tool_name);
      return agents::tool_result::failure("test", "arguments refused");
    }
    agents::tool_context context{logger_, std::move(workflow_id), std::move(call_id), "test"};
    boost::asio::io_context io;
    std::optional<agents::tool_result> result;
    boost::asio::co_spawn(io, tools_->at(tool_name).call(context, validated.value),
                          [&](std::exception_ptr e, agents::tool_result value) {
                            if (e) std::rethrow_exception(e);
                            result = std::move(value);
                          });
    io.run();
    return *result;
  }

  // The successful answer of a call, as an object (an empty one after a
  // failure, which is reported).
  json::object answer(const agents::tool_result& r) {
    if (!r.ok()) {
      ADD_FAILURE() << r.error().code << ": " << r.error().message;
      return {};
    }
    EXPECT_TRUE(r.value().is_object()) << json::serialize(r.value());
    return r.value().is_object() ? r.value().get_object() : json::object{};
  }

  household now() const { return calendar_->snapshot(); }

  std::shared_ptr<calendar> calendar_;
  std::shared_ptr<agents::tool_registry> tools_;
  std::shared_ptr<spdlog::logger> logger_ = std::make_shared<spdlog::logger>("calendar-tools-test");
};

// ---- calendar.household -------------------------------------------------

TEST_F(calendar_tools, household_without_calendars_names_members_resources_and_rules_only) {
  const json::object h = answer(call(household_tool, R"({"calendars": false})", "household"));
  EXPECT_EQ(h.at("household"), "The Rivera family");
  EXPECT_EQ(h.at("now"), "2026-03-02T08:00");
  ASSERT_EQ(h.at("members").as_array().size(), 5u);
  for (const auto& m : h.at("members").as_array()) EXPECT_FALSE(m.as_object().contains("calendar")) << m;
  ASSERT_EQ(h.at("resources").as_array().size(), 4u);
  for (const auto& r : h.at("resources").as_array()) EXPECT_FALSE(r.as_object().contains("bookings")) << r;
  EXPECT_EQ(h.at("rules").at("hard").as_array().size(), 2u);

  // Read back, it is the household with empty calendars.
  const household back = household_from_json(json::value(h), "calendar.household");
  EXPECT_EQ(back.members.size(), 5u);
  EXPECT_TRUE(back.find_member("Maya")->calendar.empty());
  EXPECT_TRUE(back.find_resource("van")->bookings.empty());
  EXPECT_EQ(back.find_member("mum")->name, "Ana");
}

TEST_F(calendar_tools, household_with_calendars_reads_back_as_the_same_household) {
  // A booking first: the answer holds what runs booked (a driver's entry
  // and a resource booking with its "by"), not only the seed.
  ASSERT_EQ(answer(call(book_tool, soccer, "book-0")).at("action"), "booked");

  const json::object h = answer(call(household_tool, R"({"calendars": true})", "household"));
  const auto& maya = h.at("members").as_array().at(2).as_object();
  EXPECT_EQ(maya.at("name"), "Maya");
  ASSERT_TRUE(maya.contains("calendar"));
  EXPECT_THAT(json::serialize(maya.at("calendar")), HasSubstr("Soccer practice"));

  const household expected = now();
  const household back = household_from_json(json::value(h), "calendar.household");
  const auto expected_lines = lines_of(expected);
  EXPECT_EQ(lines_of(back), expected_lines);
  EXPECT_NE(lines_of(load_household(sample_workflow_dir / "data")), expected_lines) << "the booking is compared too";
  // The comparison covered what matters: the booking, its driver, weekly
  // entries, the resource's booking and the rules.
  std::string all;
  for (const auto& line : expected_lines) all += line + "\n";
  EXPECT_THAT(all, HasSubstr("Ana: Soccer practice by 'driving' 2026-03-07T14:00..2026-03-07T16:00"));
  EXPECT_THAT(all, HasSubstr("minivan: Soccer practice by 'Maya'"));
  EXPECT_THAT(all, HasSubstr("Ana: Work by '' weekly"));
  EXPECT_THAT(all, HasSubstr("soft weekend_afternoons"));
  EXPECT_THAT(all, HasSubstr("hard children_curfew"));
}

// ---- calendar.events ----------------------------------------------------

TEST_F(calendar_tools, events_expand_weekly_entries_for_the_members_and_resources_asked_for) {
  // "mom" and "van" are aliases: Ana's week and the minivan's bookings.
  const json::object r =
      answer(call(events_tool, R"({"from": "2026-03-02", "to": "2026-03-08", "who": ["mom", "van"]})", "events"));
  EXPECT_EQ(r.at("from"), "2026-03-02");
  EXPECT_EQ(r.at("to"), "2026-03-08");
  std::vector<std::string> seen;
  std::string previous_start;
  for (const auto& v : r.at("events").as_array()) {
    const auto& e = v.as_object();
    seen.push_back(text_of(e.at("who")) + " " + text_of(e.at("kind")) + " " + text_of(e.at("title")) + " " +
                   text_of(e.at("start")) + "-" + text_of(e.at("end")) +
                   (e.contains("by") ? " by " + text_of(e.at("by")) : ""));
    EXPECT_LE(previous_start, text_of(e.at("start"))) << "not in order of start";
    previous_start = text_of(e.at("start"));
  }
  const std::vector<std::string> expected{
      "Ana member Work 2026-03-02T09:00-2026-03-02T17:00",
      "Ana member Work from home 2026-03-03T09:00-2026-03-03T15:00",
      "minivan resource Airport pickup 2026-03-03T15:30-2026-03-03T17:00 by Sam",
      "Ana member Work 2026-03-04T09:00-2026-03-04T17:00",
      "Ana member Work 2026-03-05T09:00-2026-03-05T17:00",
      "Ana member Work 2026-03-06T09:00-2026-03-06T17:00",
      "minivan resource Hardware store run 2026-03-07T09:00-2026-03-07T12:00 by Sam",
      "Ana member Yoga 2026-03-08T13:00-2026-03-08T14:00",
  };
  EXPECT_EQ(seen, expected);
}

TEST_F(calendar_tools, events_without_who_are_everyones_and_to_defaults_to_the_same_day) {
  const json::object r = answer(call(events_tool, R"({"from": "2026-03-07"})", "events"));
  EXPECT_EQ(r.at("to"), "2026-03-07");
  std::vector<std::string> titles;
  for (const auto& e : r.at("events").as_array())
    titles.push_back(text_of(e.at("who")) + ": " + text_of(e.at("title")));
  // Saturday: Sam's and the minivan's hardware store run, Maya's swim meet;
  // no weekday entries.
  EXPECT_THAT(titles, ::testing::UnorderedElementsAre("Sam: Hardware store run", "minivan: Hardware store run",
                                                      "Maya: Swim meet"));
}

TEST_F(calendar_tools, events_of_an_unknown_name_are_not_found_naming_who_is_known) {
  const auto r = call(events_tool, R"({"from": "2026-03-02", "who": ["Maya", "Zoe"]})", "events");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "not_found");
  EXPECT_THAT(r.error().message, HasSubstr("Zoe"));
  EXPECT_THAT(r.error().message, HasSubstr("Ana (mom, mum)"));
  EXPECT_THAT(r.error().message, HasSubstr("Rosa (grandma, granny)"));
  EXPECT_THAT(r.error().message, HasSubstr("minivan (van)"));
}

TEST_F(calendar_tools, events_over_more_than_31_days_or_backwards_are_invalid_arguments) {
  // 31 days, the first and the last included: allowed.
  EXPECT_TRUE(call(events_tool, R"({"from": "2026-03-01", "to": "2026-03-31"})", "events").ok());
  for (const std::string arguments : {R"({"from": "2026-03-01", "to": "2026-04-01"})",
                                      R"({"from": "2026-03-08", "to": "2026-03-07"})",
                                      R"({"from": "2026-02-30"})"}) {
    const auto r = call(events_tool, arguments, "events");
    ASSERT_FALSE(r.ok()) << arguments;
    EXPECT_EQ(r.error().code, "invalid_arguments") << arguments;
  }
}

// ---- argument schemas ---------------------------------------------------

TEST_F(calendar_tools, argument_schemas_refuse_bad_shapes) {
  struct bad_call {
    std::string tool;
    std::string arguments;
    std::string pointer;  // what the error names
  };
  const std::vector<bad_call> cases{
      {book_tool,
       R"({"title": "Soccer", "start": "tomorrow", "end": "2026-03-07T16:00", "participants": [], "resources": []})",
       "/start"},
      {book_tool,
       R"({"title": "Soccer", "start": "2026-03-07T14:00", "end": "2026-03-07T16:00", "participants": [],
           "resources": [], "color": "red"})",
       ""},
      {book_tool, R"({"title": "Soccer", "start": "2026-03-07T14:00", "end": "2026-03-07T16:00"})", ""},
      {book_tool,
       R"({"title": "", "start": "2026-03-07T14:00", "end": "2026-03-07T16:00", "participants": [], "resources": []})",
       "/title"},
      {cancel_tool, R"({"title": "Swim meet", "start": "2026-03-07", "end": "2026-03-07T11:30"})", "/start"},
      {events_tool, R"({"from": "2026-03-07", "who": "Maya"})", "/who"},
      // An empty list is not "everyone" (that is leaving it out): a model
      // asking so would read an empty calendar.
      {events_tool, R"({"from": "2026-03-07", "who": []})", "/who"},
      {events_tool, R"({"to": "2026-03-07"})", ""},
      {household_tool, R"({"calendars": "yes"})", "/calendars"},
      {household_tool, R"(["calendars"])", ""},
  };
  for (const auto& c : cases) {
    const auto validated = tools_->validate_arguments(c.tool, c.arguments);
    EXPECT_FALSE(validated.ok()) << c.tool << " accepted " << c.arguments;
    if (!c.pointer.empty()) {
      EXPECT_THAT(validated.describe(c.tool), HasSubstr(c.pointer)) << c.arguments;
    }
  }
  // The well-formed versions pass (so the refusals above are about the shape).
  EXPECT_TRUE(tools_->validate_arguments(book_tool, soccer).ok());
  EXPECT_TRUE(tools_->validate_arguments(cancel_tool, swim_meet).ok());
  EXPECT_TRUE(tools_->validate_arguments(household_tool, "").ok());
}

// ---- calendar.book ------------------------------------------------------

TEST_F(calendar_tools, a_booking_made_again_with_the_same_key_is_replayed_and_written_once) {
  const json::object first = answer(call(book_tool, soccer, "book-0"));
  EXPECT_EQ(first.at("action"), "booked");
  EXPECT_EQ(first.at("replayed"), false);
  EXPECT_EQ(first.at("event").at("driver"), "Ana");  // Maya does not drive; Ana is free
  EXPECT_TRUE(first.at("problems").as_array().empty());

  const json::object again = answer(call(book_tool, soccer, "book-0"));
  EXPECT_EQ(again.at("replayed"), true);
  json::object without_flag = again;
  without_flag["replayed"] = false;
  EXPECT_EQ(without_flag, first) << "a replay answers what the first call did";

  // Another change under the same key (a call id used twice in a run) is
  // refused: it never gets the first change's answer, and writes nothing.
  const std::string golf =
      R"({"title": "Golf", "start": "2026-03-08T15:00", "end": "2026-03-08T16:00", "participants": ["Sam"],
          "resources": []})";
  const auto conflict = call(book_tool, golf, "book-0");
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().code, "key_conflict");
  EXPECT_THAT(conflict.error().message, HasSubstr("book-0"));
  EXPECT_THAT(conflict.error().message, HasSubstr("Soccer practice"));
  const auto cancel_under_book_key = call(cancel_tool, swim_meet, "book-0");
  ASSERT_FALSE(cancel_under_book_key.ok());
  EXPECT_EQ(cancel_under_book_key.error().code, "key_conflict");
  EXPECT_EQ(entries_titled(now(), "Swim meet"), 1);

  const household h = now();
  EXPECT_EQ(entries_titled(h, "Soccer practice"), 3);  // Maya, the minivan, Ana driving: once each
  EXPECT_EQ(entries_titled(h, "Golf"), 0);

  // Another call id of the same run is another change.
  EXPECT_EQ(answer(call(book_tool, golf, "book-1")).at("action"), "booked");
  EXPECT_EQ(entries_titled(now(), "Golf"), 1);
}

TEST_F(calendar_tools, a_taken_slot_is_not_booked_naming_the_busy_person_and_resource) {
  const household before = now();
  // Maya swims 10:00-11:30 and Sam has the minivan 09:00-12:00 that Saturday.
  const json::object r = answer(call(
      book_tool,
      R"({"title": "Zoo trip", "start": "2026-03-07T10:30", "end": "2026-03-07T11:30", "participants": ["Maya"],
          "resources": ["van"]})",
      "book-0"));
  EXPECT_EQ(r.at("action"), "not_booked");
  EXPECT_EQ(r.at("replayed"), false);
  const std::string problems = json::serialize(r.at("problems"));
  EXPECT_THAT(problems, HasSubstr("Maya is busy: Swim meet"));
  EXPECT_THAT(problems, HasSubstr("the minivan is booked: Hardware store run by Sam"));
  EXPECT_EQ(entries_titled(now(), "Zoo trip"), 0);
  EXPECT_EQ(lines_of(now()), lines_of(before));
}

TEST_F(calendar_tools, without_a_workflow_id_every_call_is_applied) {
  const std::string tennis = R"({"title": "Tennis", "start": "2026-03-08T15:00", "end": "2026-03-08T16:00",
                                 "participants": ["Sam"], "resources": []})";
  const std::string golf = R"({"title": "Golf", "start": "2026-03-08T17:00", "end": "2026-03-08T18:00",
                               "participants": ["Sam"], "resources": []})";
  // The same call id, outside a run: no key, so each call is a change of
  // its own (inside a run, the second would replay the first).
  EXPECT_EQ(answer(call(book_tool, tennis, "book-0", "")).at("action"), "booked");
  EXPECT_EQ(answer(call(book_tool, golf, "book-0", "")).at("action"), "booked");
  // And the same booking again is checked again, not replayed: Sam is busy.
  const json::object again = answer(call(book_tool, tennis, "book-0", ""));
  EXPECT_EQ(again.at("action"), "not_booked");
  EXPECT_EQ(again.at("replayed"), false);
  EXPECT_THAT(json::serialize(again.at("problems")), HasSubstr("Sam is busy: Tennis"));
  EXPECT_EQ(entries_titled(now(), "Tennis"), 1);
  EXPECT_EQ(entries_titled(now(), "Golf"), 1);
}

// ---- calendar.cancel ----------------------------------------------------

TEST_F(calendar_tools, cancel_removes_the_event_and_a_missing_event_is_not_found) {
  const json::object r = answer(call(cancel_tool, swim_meet, "cancel"));
  EXPECT_EQ(r.at("action"), "cancelled");
  EXPECT_EQ(r.at("title"), "Swim meet");
  EXPECT_EQ(r.at("replayed"), false);
  EXPECT_EQ(entries_titled(now(), "Swim meet"), 0);

  // The same call again is replayed, not refused: the run's cancel stands.
  EXPECT_EQ(answer(call(cancel_tool, swim_meet, "cancel")).at("replayed"), true);

  // Another run finds nothing to cancel.
  const auto gone = call(cancel_tool, swim_meet, "cancel", "wf-other");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, "not_found");
  const auto never = call(cancel_tool, R"({"title": "Ballet", "start": "2026-03-07T10:00", "end": "2026-03-07T11:30"})",
                          "cancel", "wf-third");
  ASSERT_FALSE(never.ok());
  EXPECT_EQ(never.error().code, "not_found");
}

// ---- flags --------------------------------------------------------------

// Which tools need approval and which are idempotent, as the registry lists them.
std::vector<std::string> flags_of(const agents::tool_registry& tools) {
  std::vector<std::string> out;
  for (const auto& t : tools.list())
    out.push_back(t.name + " approval=" + std::to_string(t.needs_approval) + " idempotent=" +
                  std::to_string(t.idempotent) + " " + t.origin);
  return out;
}

TEST_F(calendar_tools, changes_need_approval_when_confirm_changes_is_set) {
  EXPECT_THAT(flags_of(*tools_),
              ::testing::ElementsAre("calendar.book approval=1 idempotent=1 builtin:scheduling",
                                     "calendar.cancel approval=1 idempotent=1 builtin:scheduling",
                                     "calendar.events approval=0 idempotent=1 builtin:scheduling",
                                     "calendar.household approval=0 idempotent=1 builtin:scheduling"));
  const auto unconfirmed = make_calendar_tool_registry(calendar_, {.confirm_changes = false, .booking_hold = {}});
  EXPECT_THAT(flags_of(*unconfirmed),
              ::testing::ElementsAre("calendar.book approval=0 idempotent=1 builtin:scheduling",
                                     "calendar.cancel approval=0 idempotent=1 builtin:scheduling",
                                     "calendar.events approval=0 idempotent=1 builtin:scheduling",
                                     "calendar.household approval=0 idempotent=1 builtin:scheduling"));
  // The tools themselves say the same (what the hub's default policy asks).
  EXPECT_TRUE(tools_->at(book_tool).needs_approval());
  EXPECT_FALSE(unconfirmed->at(cancel_tool).needs_approval());
  EXPECT_TRUE(unconfirmed->at(cancel_tool).idempotent());
}

}  // namespace
}  // namespace switchboard::scheduling::testing
