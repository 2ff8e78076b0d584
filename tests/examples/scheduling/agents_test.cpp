// The scheduling sample's seven agents, run one by one the way the workflow
// chains them, against the sample's data in an in-memory calendar
// (reference now: Mon 2026-03-02 08:00).
#include <switchboard/scheduling/agents.hpp>

#include "scheduling/sample_fixture.hpp"

#include <boost/json/serialize.hpp>

namespace switchboard::scheduling::testing {
namespace {

namespace json = boost::json;

using agents_test = sample_test;

TEST_F(agents_test, registers_seven_agents_with_the_builtin_origin) {
  const auto infos = registry_.list();
  ASSERT_EQ(infos.size(), 7u);
  for (const auto& info : infos) {
    EXPECT_EQ(info.origin, builtin_origin) << info.name;
    EXPECT_EQ(info.output_schema, info.name + ".output@1");
  }
  EXPECT_EQ(registration_.native_agents.size(), 7u);
  EXPECT_TRUE(registration_.llm_backed_agents.empty());
}

TEST_F(agents_test, parser_reads_a_clear_request) {
  const auto e = parse("Soccer practice for Maya on Saturday 2-4pm, she needs the minivan");
  ASSERT_FALSE(e.failed()) << e.reasoning;
  EXPECT_EQ(str(e.data.at("intent")), "create");
  EXPECT_EQ(str(e.data.at("title")), "Soccer practice");
  EXPECT_EQ(str(e.data.at("date")), "2026-03-07");
  EXPECT_EQ(str(e.data.at("start_time")), "14:00");
  EXPECT_EQ(str(e.data.at("end_time")), "16:00");
  EXPECT_EQ(e.data.at("duration_minutes").as_int64(), 120);
  EXPECT_EQ(json::serialize(e.data.at("participants")), R"(["Maya"])");
  EXPECT_EQ(json::serialize(e.data.at("resources")), R"(["minivan"])");
  EXPECT_EQ(str(e.data.at("flexibility")), "fixed");
  EXPECT_GE(e.confidence, 0.9);
  EXPECT_FALSE(e.data.contains("clarification_question"));
}

TEST_F(agents_test, parser_reads_a_start_time_with_a_duration) {
  const auto e = parse("Movie night for Maya and Leo on Friday at 7pm for 2 hours in the living room");
  EXPECT_EQ(str(e.data.at("date")), "2026-03-06");
  EXPECT_EQ(str(e.data.at("start_time")), "19:00");
  EXPECT_EQ(str(e.data.at("end_time")), "21:00");
  EXPECT_EQ(json::serialize(e.data.at("participants")), R"(["Maya","Leo"])");
  EXPECT_EQ(json::serialize(e.data.at("resources")), R"(["living room"])");
}

TEST_F(agents_test, parser_reads_variations) {
  auto e = parse("Book the laptop for Ana tomorrow from 10:30 to 12");
  EXPECT_EQ(str(e.data.at("date")), "2026-03-03");
  EXPECT_EQ(str(e.data.at("start_time")), "10:30");
  EXPECT_EQ(str(e.data.at("end_time")), "12:00");
  EXPECT_EQ(json::serialize(e.data.at("resources")), R"(["laptop"])");

  e = parse("Dentist for Leo next Thursday at 4 for half an hour");
  EXPECT_EQ(str(e.data.at("date")), "2026-03-12");
  EXPECT_EQ(str(e.data.at("start_time")), "16:00");
  EXPECT_EQ(e.data.at("duration_minutes").as_int64(), 30);

  e = parse("Haircut for Sam on 2026-03-05 in the morning");
  EXPECT_EQ(str(e.data.at("date")), "2026-03-05");
  EXPECT_TRUE(e.data.at("start_time").is_null());
  EXPECT_EQ(str(e.data.at("time_window").at("from")), "08:00");
  EXPECT_EQ(str(e.data.at("flexibility")), "flexible");
}

TEST_F(agents_test, parser_is_unsure_about_a_vague_request_and_asks) {
  const auto e = parse("Piano lesson for Leo sometime next week");
  EXPECT_LT(e.confidence, 0.7);
  EXPECT_TRUE(e.data.at("date").is_null());
  EXPECT_EQ(str(e.data.at("date_range").at("from")), "2026-03-09");
  EXPECT_EQ(str(e.data.at("date_range").at("to")), "2026-03-15");
  const std::string question = str(e.data.at("clarification_question"));
  EXPECT_NE(question.find("Piano lesson"), std::string::npos) << question;
  EXPECT_NE(question.find("next week"), std::string::npos) << question;
}

TEST_F(agents_test, parser_completes_a_vague_request_with_the_answer) {
  answers_ = {"Wednesday 5-6pm"};
  const auto e = parse("Piano lesson for Leo sometime next week");
  EXPECT_GE(e.confidence, 0.7);
  EXPECT_EQ(str(e.data.at("date")), "2026-03-11");  // Wednesday of next week
  EXPECT_EQ(str(e.data.at("start_time")), "17:00");
  EXPECT_EQ(str(e.data.at("end_time")), "18:00");
}

TEST_F(agents_test, parser_asks_about_unknown_names_instead_of_guessing) {
  const auto e = parse("Swimming lesson for Zoe on Saturday at 3pm, she needs the boat");
  EXPECT_EQ(json::serialize(e.data.at("participants")), "[]");
  EXPECT_EQ(json::serialize(e.data.at("resources")), R"(["boat"])");
  EXPECT_LT(e.confidence, 0.7);
  const std::string question = str(e.data.at("clarification_question"));
  EXPECT_NE(question.find("Who is Zoe?"), std::string::npos) << question;
  EXPECT_NE(question.find("Maya"), std::string::npos) << question;
}

TEST_F(agents_test, scheduler_names_an_unknown_resource) {
  parse("Fishing trip for Sam on Saturday at 1pm, he needs the boat");
  const auto s = next("scheduling");
  ASSERT_TRUE(s.failed());
  EXPECT_EQ(s.error->type, "unknown_resource");
  EXPECT_NE(s.error->message.find("'boat'"), std::string::npos) << s.error->message;
  EXPECT_NE(s.error->message.find("minivan"), std::string::npos) << s.error->message;
}

TEST_F(agents_test, parser_recognises_a_question) {
  const auto e = parse("When is everyone free on Sunday?");
  EXPECT_EQ(str(e.data.at("intent")), "query");
  EXPECT_EQ(str(e.data.at("date")), "2026-03-08");
  EXPECT_EQ(json::serialize(e.data.at("participants")), R"(["Ana","Sam","Maya","Leo"])");
  EXPECT_GE(e.confidence, 0.7);
}

TEST_F(agents_test, clear_request_has_no_conflicts) {
  parse("Soccer practice for Maya on Saturday 2-4pm, she needs the minivan");
  const auto s = next("scheduling");
  ASSERT_FALSE(s.failed()) << s.reasoning;
  EXPECT_EQ(str(s.data.at("recommended_slot").at("start")), "2026-03-07T14:00");
  EXPECT_EQ(str(s.data.at("recommended_slot").at("end")), "2026-03-07T16:00");
  EXPECT_TRUE(s.data.at("all_hard_constraints_hold").as_bool());
  EXPECT_EQ(json::serialize(s.data.at("participants_available")), R"(["Maya"])");
  EXPECT_GE(s.confidence, 0.9);
  const auto& first = s.data.at("candidate_slots").as_array().at(0).as_object();
  EXPECT_TRUE(first.at("requested").as_bool());

  const auto r = next("resource_manager");
  const auto& minivan = r.data.at("resources").as_array().at(0).as_object();
  EXPECT_EQ(minivan.at("needed").as_int64(), 2);  // Maya and a driver
  EXPECT_TRUE(minivan.at("available").as_bool());
  EXPECT_TRUE(r.data.at("all_available").as_bool());

  const auto c = next("conflict_detection");
  EXPECT_FALSE(c.data.at("has_conflicts").as_bool());
  EXPECT_TRUE(c.data.at("conflicts").as_array().empty());
}

TEST_F(agents_test, booked_resource_is_a_conflict_resolved_by_another_vehicle) {
  parse("Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan");
  const auto s = next("scheduling");
  EXPECT_EQ(str(s.data.at("recommended_slot").at("start")), "2026-03-03T16:00");
  const auto r = next("resource_manager");
  EXPECT_FALSE(r.data.at("all_available").as_bool());
  const auto& minivan = r.data.at("resources").as_array().at(0).as_object();
  EXPECT_EQ(str(minivan.at("bookings_overlapping").as_array().at(0).at("title")), "Airport pickup");

  const auto c = next("conflict_detection");
  ASSERT_TRUE(c.data.at("has_conflicts").as_bool());
  EXPECT_EQ(str(c.data.at("conflicts").as_array().at(0).at("type")), "resource_booked");
  EXPECT_EQ(str(c.data.at("conflicts").as_array().at(0).at("severity")), "high");

  const auto res = next("resolution");
  ASSERT_FALSE(res.failed()) << res.reasoning;
  EXPECT_EQ(res.data.at("recommended").as_int64(), 0);
  const auto& best = res.data.at("strategies").as_array().at(0).as_object();
  EXPECT_EQ(str(best.at("strategy")), "change_resource");
  EXPECT_EQ(json::serialize(best.at("resources")), R"(["sedan"])");
  EXPECT_EQ(str(res.data.at("plan").at("start")), "2026-03-03T16:00");
  // Moving to when the minivan is back is offered too, scored lower.
  const json::object* first_move = nullptr;
  for (const auto& st : res.data.at("strategies").as_array()) {
    if (str(st.at("strategy")) != "move_event") continue;
    if (!first_move) first_move = &st.as_object();
    EXPECT_LT(st.at("score").as_double(), best.at("score").as_double());
  }
  ASSERT_NE(first_move, nullptr);
  EXPECT_EQ(str(first_move->at("start")), "2026-03-03T17:00");
  const auto b = next("booking");
  ASSERT_FALSE(b.failed()) << b.reasoning;
  EXPECT_EQ(str(b.data.at("action")), "booked");
  EXPECT_NE(b.explanation.find("Plan (after resolution): \"Dentist appointment\", Tue 2026-03-03 16:00\u201317:00, "
                               "with Leo, using the sedan, driven by Ana"),
            std::string::npos)
      << b.explanation;
}

// A journal the test can read and alter between two runs of a step.
class open_journal final : public agents::tool_journal {
 public:
  std::vector<json::object> records() const override { return kept; }
  boost::asio::awaitable<void> append(json::object record) override {
    kept.push_back(std::move(record));
    co_return;
  }
  std::vector<json::object> kept;
};

// The step's journal is a checkpoint, so untrusted: a recorded booking
// altered to name another event is refused, not reported as this one.
TEST_F(agents_test, a_recorded_booking_of_another_event_is_not_taken_for_this_one) {
  parse("Soccer practice for Maya on Saturday 2-4pm, she needs the minivan");
  for (const auto* agent : {"scheduling", "resource_manager", "conflict_detection"}) next(agent);
  auto journal = std::make_shared<open_journal>();
  journal_ = journal;
  const auto booked = next("booking");
  ASSERT_FALSE(booked.failed()) << booked.reasoning;
  EXPECT_EQ(str(booked.data.at("action")), "booked");

  // The step runs again on the journal, its recorded answer now about a
  // dentist appointment.
  bool altered = false;
  for (auto& r : journal->kept) {
    if (r.at("kind") != "result") continue;
    r["record"].as_object()["result"].as_object()["event"].as_object()["title"] = "Dentist";
    altered = true;
  }
  ASSERT_TRUE(altered);
  const auto again = next("booking");
  ASSERT_TRUE(again.failed());
  EXPECT_THAT(again.error->message, ::testing::HasSubstr("answered about another event"));
  EXPECT_EQ(entries_titled(registration_.calendar->snapshot(), "Soccer practice"), 3);  // Maya, minivan, Ana
}

TEST_F(agents_test, curfew_and_booking_are_resolved_by_moving_earlier) {
  parse("Sleepover movie night for Maya and Leo on Friday at 7pm for 2 hours in the living room");
  const auto s = next("scheduling");
  EXPECT_FALSE(s.data.at("all_hard_constraints_hold").as_bool());
  EXPECT_LT(s.confidence, 0.7);
  EXPECT_EQ(str(s.data.at("constraints_violated").as_array().at(0).at("id")), "children_curfew");
  next("resource_manager");
  const auto c = next("conflict_detection");
  EXPECT_EQ(c.data.at("conflicts").as_array().size(), 2u);
  const auto res = next("resolution");
  const auto& best = res.data.at("strategies").as_array().at(0).as_object();
  EXPECT_EQ(str(best.at("strategy")), "move_event");
  EXPECT_EQ(str(best.at("start")), "2026-03-06T16:00");
  EXPECT_EQ(str(best.at("end")), "2026-03-06T18:00");
}

TEST_F(agents_test, flexible_request_gets_the_best_free_slot) {
  parse("Dentist for Leo on Wednesday");
  const auto s = next("scheduling");
  ASSERT_FALSE(s.failed()) << s.reasoning;
  EXPECT_TRUE(s.data.at("requested_slot").is_null());
  EXPECT_TRUE(s.data.at("all_hard_constraints_hold").as_bool());
  // Leo is at school until 15:00 and at art club 15:30-16:30 on Wednesdays.
  const auto start = str(s.data.at("recommended_slot").at("start"));
  EXPECT_TRUE(start == "2026-03-04T07:00" || start >= "2026-03-04T16:30") << start;
}

TEST_F(agents_test, unschedulable_request_is_explained) {
  parse("Road trip for Maya on Saturday for 14 hours");
  const auto s = next("scheduling");
  ASSERT_TRUE(s.failed());
  EXPECT_EQ(s.error->type, "unschedulable");
  EXPECT_NE(s.error->message.find("840-minute"), std::string::npos) << s.error->message;
  EXPECT_NE(s.error->message.find("Children have no events after 20:00"), std::string::npos)
      << s.error->message;
}

TEST_F(agents_test, relatives_bring_the_household_and_soft_preferences_are_warnings) {
  parse("Dinner with grandma on Sunday at 6pm");
  const auto s = next("scheduling");
  EXPECT_EQ(json::serialize(s.data.at("event").at("participants")),
            R"(["Rosa","Ana","Sam","Maya","Leo"])");
  EXPECT_TRUE(s.data.at("all_hard_constraints_hold").as_bool());
  EXPECT_DOUBLE_EQ(s.data.at("recommended_slot").at("score").as_double(), 0.8);
  next("resource_manager");
  const auto c = next("conflict_detection");
  EXPECT_FALSE(c.data.at("has_conflicts").as_bool());
  ASSERT_EQ(c.data.at("warnings").as_array().size(), 1u);
  EXPECT_EQ(str(c.data.at("warnings").as_array().at(0).at("subject")), "weekend_afternoons");
}

TEST_F(agents_test, query_answers_with_the_shared_free_slots) {
  parse("When is everyone free on Sunday?");
  const auto q = next("query");
  ASSERT_FALSE(q.failed()) << q.reasoning;
  const auto& slots = q.data.at("free_slots").as_array();
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(str(slots[0].at("start")), "2026-03-08T07:00");  // quiet hours end
  EXPECT_EQ(str(slots[0].at("end")), "2026-03-08T09:00");    // Leo's birthday party
  EXPECT_EQ(str(slots[1].at("start")), "2026-03-08T11:00");
  EXPECT_EQ(str(slots[1].at("end")), "2026-03-08T13:00");    // Ana's yoga
  EXPECT_EQ(str(slots[2].at("start")), "2026-03-08T14:00");
  EXPECT_EQ(str(slots[2].at("end")), "2026-03-08T20:00");    // children's curfew
  EXPECT_NE(str(q.data.at("answer")).find("07:00\u201309:00"), std::string::npos);
  EXPECT_EQ(q.explanation.rfind("Answer: ", 0), 0u);
}

TEST_F(agents_test, agents_fail_clearly_without_their_inputs) {
  input_ = json::object{{"request", "anything"}};
  for (const auto* name : {"scheduling", "resource_manager", "conflict_detection", "resolution", "booking", "query"}) {
    const auto e = next(name);
    ASSERT_TRUE(e.failed()) << name;
    EXPECT_EQ(e.error->type, "missing_input") << name;
    EXPECT_EQ(e.confidence, 0.0);
  }
  input_ = json::object{{"something", "else"}};
  const auto e = next("nl_parser");
  ASSERT_TRUE(e.failed());
  EXPECT_NE(e.error->message.find("request"), std::string::npos);
}

TEST_F(agents_test, input_now_overrides_the_household_reference_time) {
  input_ = json::object{{"request", "Soccer practice for Maya on Saturday 2-4pm"}, {"now", "2026-03-09T08:00"}};
  const auto e = run("nl_parser", input_);
  EXPECT_EQ(str(e.data.at("date")), "2026-03-14");
}

}  // namespace
}  // namespace switchboard::scheduling::testing
