// The sample as shipped ("confirm_bookings": true) in-process: a booking or
// a cancellation pauses the run before the calendar changes; approved, the
// change is made and in the step's audit entry; rejected, the run ends at
// the `declined` node with nothing written; and the decision may come from
// another hub on the same state directory (another process, as far as the
// store of runs and the calendar file know).
#include <switchboard/scheduling/tools.hpp>

#include "scheduling/workflow_fixture.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace switchboard::scheduling::testing {
namespace {

namespace json = boost::json;
namespace orch = switchboard::orchestrator;
using ::testing::HasSubstr;

const std::string soccer = "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan";

std::string why(const orch::workflow_state& s) {
  return std::string(orch::to_string(s.status)) + (s.first_error() ? ": " + s.first_error()->message : "");
}

// The one call a paused run waits for, checked to be of `tool` by booking.
const agents::pending_tool_call& pending_call(const orch::workflow_state& s, std::string_view tool) {
  static const agents::pending_tool_call none;
  EXPECT_EQ(s.status, orch::workflow_status::awaiting_approval) << why(s);
  if (!s.approval || s.approval->calls.size() != 1) {
    ADD_FAILURE() << "expected one pending call";
    return none;
  }
  const auto& call = s.approval->calls.front();
  EXPECT_EQ(call.tool, tool);
  EXPECT_EQ(call.agent, "booking");
  return call;
}

const json::value soccer_arguments = json::parse(
    R"({"start": "2026-03-07T14:00", "end": "2026-03-07T16:00", "title": "Soccer practice",
        "participants": ["Maya"], "resources": ["minivan"], "moved_from": null})");

// The fixture most tests use, with confirm_bookings on: the run stops before
// the booking step writes anything.
TEST(booking_approval, a_clear_request_waits_for_approval_before_the_calendar_changes) {
  temp_dir state;
  sample_workflow_runner runner(state.path(), false, /*confirm_bookings=*/true);
  const auto paused = runner.run(soccer);
  const auto& call = pending_call(paused, book_tool);
  EXPECT_EQ(call.id, "book-0");
  EXPECT_EQ(call.arguments, soccer_arguments);
  EXPECT_THAT(call.description, HasSubstr("Books an event"));
  EXPECT_EQ(paused.approval->node, "auto_confirm");
  EXPECT_FALSE(paused.result) << "the run has no outcome yet";
  EXPECT_EQ(entries_titled(runner.cal().snapshot(), "Soccer practice"), 0);
  // The steps before booking ran; booking is not counted until it runs through.
  ASSERT_FALSE(paused.audit.empty());
  EXPECT_EQ(paused.audit.back().node, "conflicts");
}

TEST(booking_approval, approved_the_booking_is_written_and_in_the_steps_audit_entry) {
  temp_dir state;
  sample_workflow_runner runner(state.path(), false, /*confirm_bookings=*/true, /*keep_runs=*/true);
  const auto paused = runner.run(soccer);
  ASSERT_EQ(pending_call(paused, book_tool).arguments, soccer_arguments);

  const auto done = runner.decide(paused.id, true);
  ASSERT_EQ(done.status, orch::workflow_status::completed) << why(done);
  EXPECT_FALSE(done.approval);
  ASSERT_TRUE(done.result);
  EXPECT_EQ(done.result->data.at("action"), "booked");
  EXPECT_EQ(done.result->data.at("replayed"), false);
  EXPECT_EQ(done.result->data.at("event").at("driver"), "Ana");
  EXPECT_THAT(done.result->explanation, HasSubstr("Confirmed: \"Soccer practice\", Sat 2026-03-07 14:00"));

  // Maya's calendar, the minivan's bookings and Ana (driving): once each.
  const household h = runner.cal().snapshot();
  EXPECT_EQ(entries_titled(h, "Soccer practice"), 3);

  const auto& step = done.audit.back();
  EXPECT_EQ(step.node, "auto_confirm");
  EXPECT_EQ(step.agent, "booking");
  EXPECT_EQ(step.route, "done");
  ASSERT_EQ(step.tool_calls.size(), 1u) << json::serialize(step.tool_calls);
  const auto& call = step.tool_calls[0].as_object();
  EXPECT_EQ(call.at("tool"), "calendar.book");
  EXPECT_EQ(call.at("id"), "book-0");
  EXPECT_EQ(call.at("is_error"), false);
  EXPECT_EQ(call.at("result").at("action"), "booked");
}

TEST(booking_approval, rejected_the_run_ends_declined_with_nothing_written) {
  temp_dir state;
  sample_workflow_runner runner(state.path(), false, /*confirm_bookings=*/true, /*keep_runs=*/true);
  const auto paused = runner.run(soccer);
  pending_call(paused, book_tool);

  const auto done = runner.decide(paused.id, false, "not this week");
  ASSERT_EQ(done.status, orch::workflow_status::completed) << why(done);
  EXPECT_EQ(done.next_node, "declined");
  ASSERT_TRUE(done.result);
  EXPECT_EQ(done.result->data.at("action"), "declined");
  EXPECT_THAT(json::serialize(done.result->data.at("problems")), HasSubstr("not this week"));
  EXPECT_THAT(done.result->explanation, HasSubstr("Not booked (declined): \"Soccer practice\""));
  EXPECT_EQ(done.audit.back().route, "declined");
  ASSERT_EQ(done.audit.back().tool_calls.size(), 1u);
  EXPECT_EQ(done.audit.back().tool_calls[0].at("error").at("code"), "rejected");

  EXPECT_EQ(entries_titled(runner.cal().snapshot(), "Soccer practice"), 0);
}

TEST(booking_approval, another_hub_on_the_same_state_directory_approves_a_paused_run) {
  temp_dir state;
  std::string id;
  {
    sample_workflow_runner first(state.path(), false, /*confirm_bookings=*/true, /*keep_runs=*/true);
    const auto paused = first.run(soccer);
    pending_call(paused, book_tool);
    id = paused.id;
  }  // the first "process" is gone

  sample_workflow_runner second(state.path(), false, /*confirm_bookings=*/true, /*keep_runs=*/true);
  const auto stored = second.find(id);
  ASSERT_TRUE(stored);
  EXPECT_EQ(pending_call(*stored, book_tool).arguments, soccer_arguments);
  EXPECT_EQ(entries_titled(second.cal().snapshot(), "Soccer practice"), 0);

  const auto done = second.decide(id, true);
  ASSERT_EQ(done.status, orch::workflow_status::completed) << why(done);
  EXPECT_EQ(done.result->data.at("action"), "booked");
  EXPECT_EQ(entries_titled(second.cal().snapshot(), "Soccer practice"), 3);
  // The booking is in the calendar file, not only in this hub's calendar.
  const auto reopened = calendar::open_file(state.path() / "scheduling" / "calendar.db",
                                            load_household(sample_workflow_dir / "data"));
  EXPECT_EQ(entries_titled(reopened->snapshot(), "Soccer practice"), 3);
}

TEST(booking_approval, a_cancellation_waits_too_and_its_calendar_read_is_not_repeated) {
  temp_dir state;
  sample_workflow_runner runner(state.path(), false, /*confirm_bookings=*/true, /*keep_runs=*/true);
  const auto paused = runner.run("Cancel the swim meet on Saturday");
  const auto& call = pending_call(paused, cancel_tool);
  EXPECT_EQ(call.id, "cancel");
  EXPECT_EQ(call.arguments,
            json::parse(R"({"title": "Swim meet", "start": "2026-03-07T10:00", "end": "2026-03-07T11:30"})"));
  EXPECT_EQ(paused.approval->node, "cancel");
  EXPECT_EQ(entries_titled(runner.cal().snapshot(), "Swim meet"), 1);

  const auto done = runner.decide(paused.id, true);
  ASSERT_EQ(done.status, orch::workflow_status::completed) << why(done);
  EXPECT_EQ(done.result->data.at("action"), "cancelled");
  EXPECT_EQ(entries_titled(runner.cal().snapshot(), "Swim meet"), 0);

  // The step read the household before it paused; run again after the
  // decision, it replays that read from its journal.
  const auto& calls = done.audit.back().tool_calls;
  ASSERT_EQ(calls.size(), 2u) << json::serialize(calls);
  EXPECT_EQ(calls[0].at("tool"), "calendar.household");
  EXPECT_EQ(calls[0].at("id"), "household");
  const auto* replayed = calls[0].as_object().if_contains("replayed");
  EXPECT_TRUE(replayed && replayed->is_bool() && replayed->get_bool()) << json::serialize(calls[0]);
  EXPECT_EQ(calls[1].at("tool"), "calendar.cancel");
  EXPECT_EQ(calls[1].at("result").at("action"), "cancelled");
}

TEST(booking_approval, a_rejected_cancellation_leaves_the_event) {
  temp_dir state;
  sample_workflow_runner runner(state.path(), false, /*confirm_bookings=*/true, /*keep_runs=*/true);
  const auto paused = runner.run("Cancel the swim meet on Saturday");
  pending_call(paused, cancel_tool);
  const auto done = runner.decide(paused.id, false, "she still swims");
  ASSERT_EQ(done.status, orch::workflow_status::completed) << why(done);
  EXPECT_EQ(done.audit.back().route, "declined");
  EXPECT_EQ(done.result->data.at("action"), "declined");
  EXPECT_EQ(entries_titled(runner.cal().snapshot(), "Swim meet"), 1);
}

}  // namespace
}  // namespace switchboard::scheduling::testing
