// Runs over HTTP on the scheduling sample as shipped: a booking pauses for
// approval (thread `interrupted`, its state carrying the interrupt), a
// resume with the decision completes it; resumes that answer nothing are
// 409, two at once get one 200 and one 409, an answer of the wrong kind is
// 422.
#include "server_fixture.hpp"

#include "ids.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <latch>
#include <thread>

namespace switchboard::server::testing {
namespace {

using ::testing::HasSubstr;

class runs_test : public server_test {
 protected:
  // A thread whose soccer booking waits for approval.
  std::string paused_for_approval() {
    const auto id = create_thread();
    const auto values = values_of(run_wait(id, soccer));
    EXPECT_EQ(values.at("status"), "awaiting_approval") << json::serialize(values);
    return id;
  }
  // GET /threads/{id}/runs (newest first).
  json::array runs_of(const std::string& thread) {
    const auto r = get(port(), "/threads/" + thread + "/runs");
    EXPECT_EQ(r.status, 200) << r.describe();
    return r.json().is_array() ? r.json().as_array() : json::array{};
  }
};

TEST_F(runs_test, a_booking_pauses_for_approval_and_the_thread_is_interrupted) {
  const auto id = create_thread();
  const auto values = values_of(run_wait(id, soccer));
  EXPECT_EQ(values.at("status"), "awaiting_approval");
  ASSERT_TRUE(values.contains("__interrupt__")) << json::serialize(values);
  ASSERT_EQ(values.at("__interrupt__").as_array().size(), 1u);
  const auto interrupt = values.at("__interrupt__").at(0).as_object();
  EXPECT_TRUE(is_uuid(interrupt.at("id").as_string()));
  EXPECT_EQ(interrupt.at("value").at("type"), "approval");
  const auto& call = interrupt.at("value").at("calls").at(0);
  EXPECT_EQ(call.at("tool"), "calendar.book");
  EXPECT_EQ(call.at("arguments").at("title"), "Soccer practice");

  const auto t = thread(id).as_object();
  EXPECT_EQ(t.at("status"), "interrupted");
  EXPECT_EQ(t.at("metadata").at("graph_id"), "family_scheduling");
  ASSERT_EQ(t.at("interrupts").as_object().size(), 1u);
  const auto& [task_id, listed] = *t.at("interrupts").as_object().begin();
  EXPECT_TRUE(is_uuid(task_id));
  EXPECT_EQ(listed, (json::array{interrupt}));

  const auto state = get(port(), "/threads/" + id + "/state");
  ASSERT_EQ(state.status, 200) << state.describe();
  const auto s = state.json().as_object();
  ASSERT_EQ(s.at("next").as_array().size(), 1u);
  ASSERT_EQ(s.at("tasks").as_array().size(), 1u);
  EXPECT_EQ(s.at("tasks").at(0).at("id"), json::value(std::string(task_id)));
  EXPECT_EQ(s.at("tasks").at(0).at("name"), s.at("next").at(0));
  EXPECT_EQ(s.at("tasks").at(0).at("interrupts"), (json::array{interrupt}));
  EXPECT_EQ(s.at("interrupts"), (json::array{interrupt}));
  EXPECT_EQ(s.at("values").at("status"), "awaiting_approval");

  const auto history = post(port(), "/threads/" + id + "/history", json::object{{"limit", 3}});
  ASSERT_EQ(history.status, 200) << history.describe();
  ASSERT_EQ(history.json().as_array().size(), 3u);
  EXPECT_EQ(history.json().at(0), state.json());  // newest first

  const auto interrupted = post(port(), "/threads/search", json::object{{"status", "interrupted"}});
  ASSERT_EQ(interrupted.json().as_array().size(), 1u);
  EXPECT_EQ(interrupted.json().at(0).at("thread_id"), json::value(id));

  // The run that paused ended `success` (a pause is not a failure).
  const auto runs = runs_of(id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs.at(0).at("status"), "success");
}

TEST_F(runs_test, an_approval_resumed_completes_and_the_thread_is_idle) {
  const auto id = paused_for_approval();
  const auto values = values_of(resume(id, json::object{{"decision", "approve"}}));
  EXPECT_EQ(values.at("status"), "completed") << json::serialize(values);
  EXPECT_FALSE(values.contains("__interrupt__"));
  EXPECT_THAT(std::string(values.at("result").at("explanation").as_string()), HasSubstr("Confirmed: \"Soccer practice\""));

  const auto t = thread(id).as_object();
  EXPECT_EQ(t.at("status"), "idle");
  EXPECT_TRUE(t.at("interrupts").as_object().empty());
  EXPECT_EQ(t.at("values").at("status"), "completed");
  const auto state = get(port(), "/threads/" + id + "/state").json();
  EXPECT_TRUE(state.at("next").as_array().empty());
  EXPECT_TRUE(state.at("interrupts").as_array().empty());

  const auto runs = runs_of(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs.at(0).at("kwargs").at("command").at("resume").at("decision"), "approve");  // newest first
  for (const auto& r : runs) EXPECT_EQ(r.at("status"), "success");

  // The question the calendar now answers sees the booking.
  const auto asked = create_thread();
  const auto answer = values_of(run_wait(asked, question));
  EXPECT_THAT(json::serialize(answer.at("result")), HasSubstr("Soccer practice"));
}

TEST_F(runs_test, a_resume_may_name_the_interrupt_it_answers) {
  const auto id = paused_for_approval();
  const auto t = thread(id).as_object();
  const auto interrupt_id = t.at("interrupts").as_object().begin()->value().at(0).at("id");
  json::object by_id;
  by_id[std::string(interrupt_id.as_string())] = json::object{{"decision", "reject"}, {"reason", "not this week"}};
  const auto values = values_of(resume(id, by_id));
  EXPECT_EQ(values.at("status"), "completed") << json::serialize(values);
  EXPECT_THAT(json::serialize(values.at("result")), HasSubstr("declined"));
  EXPECT_EQ(thread_status(id), "idle");
}

TEST_F(runs_test, a_resume_when_nothing_is_paused_is_409) {
  // A fresh thread: nothing ran.
  const auto fresh = create_thread();
  const auto r = resume(fresh, json::object{{"decision", "approve"}});
  EXPECT_EQ(r.status, 409) << r.describe();
  EXPECT_THAT(std::string(r.json().at("detail").as_string()), HasSubstr("not waiting for input"));

  // A thread whose run completed.
  const auto done = create_thread();
  EXPECT_EQ(values_of(run_wait(done, question)).at("status"), "completed");
  EXPECT_EQ(resume(done, json::object{{"decision", "approve"}}).status, 409);
  EXPECT_EQ(resume(done, "Wednesday").status, 409);

  // A pause answered already.
  const auto answered = paused_for_approval();
  EXPECT_EQ(values_of(resume(answered, json::object{{"decision", "approve"}})).at("status"), "completed");
  const auto again = resume(answered, json::object{{"decision", "approve"}});
  EXPECT_EQ(again.status, 409) << again.describe();
  // The refused resumes left no runs behind.
  EXPECT_EQ(runs_of(fresh).size(), 0u);
  EXPECT_EQ(runs_of(done).size(), 1u);
  EXPECT_EQ(runs_of(answered).size(), 2u);
}

TEST_F(runs_test, of_two_resumes_at_once_one_is_accepted_and_one_is_409) {
  const auto id = paused_for_approval();
  std::latch go(2);
  reply answers[2];
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i)
    clients.emplace_back([&, i] {
      go.arrive_and_wait();
      answers[i] = resume(id, json::object{{"decision", "approve"}}, "");
    });
  for (auto& c : clients) c.join();
  std::vector<int> statuses{answers[0].status, answers[1].status};
  std::ranges::sort(statuses);
  EXPECT_EQ(statuses, (std::vector<int>{200, 409})) << answers[0].describe() << "\n" << answers[1].describe();
  const auto& accepted = answers[0].status == 200 ? answers[0] : answers[1];
  ASSERT_EQ(accepted.status, 200);
  const std::string run_id(accepted.json().at("run_id").as_string());
  EXPECT_EQ(accepted.header("content-location"), "/threads/" + id + "/runs/" + run_id);
  const auto joined = get(port(), "/threads/" + id + "/runs/" + run_id + "/join");
  ASSERT_EQ(joined.status, 200) << joined.describe();
  EXPECT_EQ(joined.json().at("status"), "completed");
  EXPECT_EQ(thread_status(id), "idle");
  EXPECT_EQ(runs_of(id).size(), 2u);  // the run that paused and the one resume
}

TEST_F(runs_test, a_clarification_answered_with_anything_but_text_is_422) {
  const auto id = create_thread();
  const auto paused = values_of(run_wait(id, vague));
  ASSERT_EQ(paused.at("status"), "awaiting_clarification") << json::serialize(paused);
  const auto interrupt = paused.at("__interrupt__").at(0);
  EXPECT_EQ(interrupt.at("value").at("type"), "clarification");
  EXPECT_THAT(std::string(interrupt.at("value").at("question").as_string()), HasSubstr("When"));
  EXPECT_EQ(thread_status(id), "interrupted");

  for (const json::value& wrong : {json::value(42), json::value(""), json::value(json::object{{"decision", "approve"}}),
                                   json::value(json::array{"Wednesday"}), json::value(true)}) {
    const auto r = resume(id, wrong);
    EXPECT_EQ(r.status, 422) << json::serialize(wrong) << " -> " << r.describe();
  }
  EXPECT_EQ(thread_status(id), "interrupted");
  EXPECT_EQ(runs_of(id).size(), 1u);

  // The answer continues the run, to the booking's approval (the sample as
  // shipped asks before it books).
  const auto answered = values_of(resume(id, "Wednesday 5-6pm"));
  EXPECT_EQ(answered.at("status"), "awaiting_approval") << json::serialize(answered);
  EXPECT_EQ(answered.at("__interrupt__").at(0).at("value").at("type"), "approval");
  EXPECT_EQ(thread_status(id), "interrupted");
}

TEST_F(runs_test, an_approval_answered_with_text_or_an_unknown_decision_is_422) {
  const auto id = paused_for_approval();
  for (const json::value& wrong :
       {json::value("yes"), json::value(json::object{{"decision", "maybe"}}), json::value(json::object{}),
        json::value(json::object{{"decision", "reject"}, {"reason", 7}})}) {
    const auto r = resume(id, wrong);
    EXPECT_EQ(r.status, 422) << json::serialize(wrong) << " -> " << r.describe();
  }
  EXPECT_EQ(thread_status(id), "interrupted");
  EXPECT_EQ(runs_of(id).size(), 1u);
}

TEST_F(runs_test, a_background_run_is_journaled_and_joined) {
  const auto id = create_thread();
  const auto created = post(port(), "/threads/" + id + "/runs",
                            json::object{{"assistant_id", system_assistant_id("family_scheduling")},
                                         {"input", json::object{{"request", question}}},
                                         {"metadata", json::object{{"source", "test"}}}});
  ASSERT_EQ(created.status, 200) << created.describe();
  const auto run = created.json().as_object();
  const std::string run_id(run.at("run_id").as_string());
  EXPECT_TRUE(is_uuid(run_id));
  EXPECT_EQ(run.at("thread_id"), json::value(id));
  EXPECT_EQ(run.at("assistant_id"), json::value(system_assistant_id("family_scheduling")));
  EXPECT_EQ(run.at("metadata"), (json::object{{"source", "test"}}));
  EXPECT_EQ(created.header("content-location"), "/threads/" + id + "/runs/" + run_id);

  const auto joined = get(port(), "/threads/" + id + "/runs/" + run_id + "/join");
  ASSERT_EQ(joined.status, 200) << joined.describe();
  EXPECT_EQ(joined.json().at("status"), "completed");
  const auto got = get(port(), "/threads/" + id + "/runs/" + run_id);
  ASSERT_EQ(got.status, 200) << got.describe();
  EXPECT_EQ(got.json().at("status"), "success");
  EXPECT_EQ(get(port(), "/threads/" + id + "/runs/" + random_uuid()).status, 404);
  EXPECT_EQ(get(port(), "/threads/" + create_thread() + "/runs/" + run_id).status, 404);  // not its thread

  // A finished run can be deleted; its thread then lists none.
  EXPECT_EQ(del(port(), "/threads/" + id + "/runs/" + run_id).status, 204);
  EXPECT_EQ(get(port(), "/threads/" + id + "/runs/" + run_id).status, 404);
  EXPECT_TRUE(runs_of(id).empty());
}

TEST_F(runs_test, a_stateless_run_makes_a_thread_of_its_own) {
  const auto r = post(port(), "/runs/wait",
                      json::object{{"assistant_id", "family_scheduling"}, {"input", json::object{{"request", question}}}});
  ASSERT_EQ(r.status, 200) << r.describe();
  EXPECT_EQ(r.json().at("status"), "completed");
  const auto location = r.header("content-location");
  EXPECT_THAT(location, ::testing::MatchesRegex("/threads/[0-9a-f-]{36}/runs/[0-9a-f-]{36}"));
}

TEST_F(runs_test, a_thread_with_a_run_in_it_is_not_deleted_until_the_run_ends) {
  const auto id = paused_for_approval();
  // Paused: no run pending or running, so it may go.
  EXPECT_EQ(del(port(), "/threads/" + id).status, 204);
  EXPECT_EQ(get(port(), "/threads/" + id).status, 404);
  EXPECT_EQ(resume(id, json::object{{"decision", "approve"}}).status, 404);
}

}  // namespace
}  // namespace switchboard::server::testing
