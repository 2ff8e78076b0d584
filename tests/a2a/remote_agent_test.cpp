// The A2A client's units: the messages it sends and how it reads tasks
// (task_wire), and what a remote agent does from its step's journal before
// it reaches the network. Its behaviour against a real A2A server is
// a2a_client.sdk_server (tests/a2a_peers/a2a_client.test.mjs).
#include <switchboard/a2a/remote_agent.hpp>
#include <switchboard/agents/tool_journal.hpp>

#include "remote_failure.hpp"
#include "task_wire.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/logger.h>

namespace switchboard::a2a {
namespace {

namespace json = boost::json;
using ::testing::AllOf;
using ::testing::HasSubstr;

remote_agent_config booker() {
  remote_agent_config c;
  c.name = "booker";
  c.url = "http://127.0.0.1:9/a2a";  // the discard port: nothing answers
  c.output_schema = "booking.output@1";
  c.request_timeout = std::chrono::milliseconds(2000);
  return c;
}

task_view task(std::string_view text) { return read_task(json::parse(text), booker()); }

TEST(A2aClientWire, a_new_message_carries_the_request_as_text_and_the_input_as_data) {
  const json::value input{{"request", "book Saturday"}, {"now", "2026-11-27T09:00"}};
  const auto m = new_message("m1", input, "prefer mornings");
  EXPECT_EQ(m.at("messageId"), "m1");
  EXPECT_EQ(m.at("role"), "ROLE_USER");
  const auto& parts = m.at("parts").as_array();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].at("text"), "book Saturday");
  EXPECT_EQ(parts[1].at("data"), input);
  EXPECT_EQ(parts[2].at("text"), "prefer mornings");
  const auto plain = new_message("m2", json::value("just text"), "");
  ASSERT_EQ(plain.at("parts").as_array().size(), 1u);
  EXPECT_EQ(plain.at("parts").as_array()[0].at("text"), "just text");
}

TEST(A2aClientWire, a_reply_that_is_a_json_object_goes_as_data_and_any_other_as_text) {
  const auto decision = reply_message("m3", "t1", "c1", R"({"decision": "approve"})");
  EXPECT_EQ(decision.at("taskId"), "t1");
  EXPECT_EQ(decision.at("contextId"), "c1");
  EXPECT_EQ(decision.at("parts").as_array()[0].at("data").at("decision"), "approve");
  const auto text = reply_message("m4", "t1", "", "Wednesday 5-6pm");
  EXPECT_FALSE(text.contains("contextId"));
  EXPECT_EQ(text.at("parts").as_array()[0].at("text"), "Wednesday 5-6pm");
  EXPECT_EQ(reply_message("m5", "t1", "", "[1, 2]").at("parts").as_array()[0].at("text"), "[1, 2]");
}

TEST(A2aClientWire, a_completed_task_gives_its_artifacts_data_and_text) {
  const auto e = outcome_of(task(R"({"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
      "artifacts": [{"artifactId": "a", "parts": [{"text": "Booked for"}, {"data": {"day": "monday"}}]},
                    {"artifactId": "b", "parts": [{"text": "monday"}, {"data": {"ignored": true}}]}]})"),
                            booker());
  ASSERT_FALSE(e.failed()) << e.error->message;
  EXPECT_EQ(e.data, (json::object{{"day", "monday"}}));
  EXPECT_EQ(e.explanation, "Booked for\nmonday");
  EXPECT_EQ(e.confidence, 1.0);
  EXPECT_THAT(e.reasoning, HasSubstr("t1"));
}

TEST(A2aClientWire, a_direct_message_answer_is_read_as_a_completed_task) {
  const auto t = read_send_result(json::parse(R"({"message": {"messageId": "r", "role": "ROLE_AGENT",
      "parts": [{"data": {"day": "friday"}}]}})"),
                                  booker());
  EXPECT_TRUE(t.id.empty());
  const auto e = outcome_of(t, booker());
  ASSERT_FALSE(e.failed());
  EXPECT_EQ(e.data.at("day"), "friday");
}

TEST(A2aClientWire, what_a_task_lacks_fails_the_step_naming_the_agent_and_the_task) {
  auto failure = [](std::string_view text) {
    const auto e = outcome_of(task(text), booker());
    EXPECT_TRUE(e.failed()) << text;
    return e.failed() ? e.error->type + ": " + e.error->message : std::string();
  };
  EXPECT_THAT(failure(R"({"id": "t2", "status": {"state": "TASK_STATE_COMPLETED"}})"),
              AllOf(HasSubstr("invalid_artifact"), HasSubstr("'booker'"), HasSubstr("'t2'"),
                    HasSubstr("booking.output@1")));
  EXPECT_THAT(failure(R"({"id": "t3", "status": {"state": "TASK_STATE_COMPLETED"},
                          "artifacts": [{"parts": [{"data": [1, 2]}]}]})"),
              AllOf(HasSubstr("invalid_artifact"), HasSubstr("not a JSON object")));
  EXPECT_THAT(failure(R"({"id": "t4", "status": {"state": "TASK_STATE_FAILED",
                          "message": {"parts": [{"text": "no rooms left"}]}}})"),
              AllOf(HasSubstr("remote_task_failed"), HasSubstr("'t4' failed: no rooms left")));
  EXPECT_THAT(failure(R"({"id": "t5", "status": {"state": "TASK_STATE_REJECTED"}})"), HasSubstr("rejected"));
  EXPECT_THAT(failure(R"({"id": "t6", "status": {"state": "TASK_STATE_CANCELED"}})"), HasSubstr("cancelled"));
  EXPECT_THAT(failure(R"({"id": "t7", "status": {"state": "TASK_STATE_AUTH_REQUIRED"}})"),
              HasSubstr("needs authorization"));
  EXPECT_THAT(failure(R"({"id": "t8", "status": {"state": "TASK_STATE_DREAMING"}})"),
              AllOf(HasSubstr("invalid_remote_response"), HasSubstr("unknown state")));
}

TEST(A2aClientWire, a_malformed_task_is_refused_naming_what_is_missing) {
  auto refusal = [](std::string_view text) {
    try {
      task(text);
    } catch (const remote_failure& f) {
      EXPECT_EQ(f.type(), "invalid_remote_response");
      return std::string(f.what());
    }
    ADD_FAILURE() << "accepted: " << text;
    return std::string();
  };
  EXPECT_THAT(refusal("[1]"), HasSubstr("not a JSON object"));
  EXPECT_THAT(refusal(R"({"status": {"state": "TASK_STATE_WORKING"}})"), HasSubstr("has no id"));
  EXPECT_THAT(refusal(R"({"id": "t"})"), HasSubstr("has no status"));
  EXPECT_THAT(refusal(R"({"id": "t", "status": {}})"), HasSubstr("has no status.state"));
  EXPECT_THROW(read_send_result(json::parse(R"({"neither": 1})"), booker()), remote_failure);
}

TEST(A2aClientWire, the_question_is_the_status_message_bounded) {
  EXPECT_EQ(question_of(task(R"({"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
                                 "message": {"parts": [{"text": "Which day?"}]}}})"),
                        booker()),
            "Which day?");
  EXPECT_EQ(question_of(task(R"({"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
                                 "message": {"parts": [{"data": {"pick": ["a", "b"]}}]}}})"),
                        booker()),
            R"({"pick":["a","b"]})");
  EXPECT_THAT(question_of(task(R"({"id": "t9", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}})"), booker()),
              AllOf(HasSubstr("'booker'"), HasSubstr("'t9'")));
  const std::string long_text(100'000, 'x');
  const auto q = question_of(task(R"({"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
      "message": {"parts": [{"text": ")" + long_text + R"("}]}}})"),
                             booker());
  EXPECT_LE(q.size(), max_question_bytes + 3);
}

// ---------------------------------------------------------------- the step, from its journal

class no_outputs final : public agents::agent_outputs {
 public:
  const protocol::envelope* latest(std::string_view) const override { return nullptr; }
  std::vector<std::string> agent_names() const override { return {}; }
};

protocol::envelope run_step(remote_agent& agent, std::shared_ptr<agents::tool_journal> journal) {
  boost::asio::io_context io;
  const json::value input{{"request", "book it"}};
  const no_outputs outputs;
  const agents::model_set models;
  agents::agent_context context{input, outputs, "", {}, models, std::make_shared<spdlog::logger>("test"),
                                "", {}, {}, {}};
  context.journal = std::move(journal);
  auto result = boost::asio::co_spawn(io, agent.run(context), boost::asio::use_future);
  io.run();
  return result.get();
}

std::shared_ptr<agents::memory_tool_journal> journal_with(std::vector<json::object> records) {
  auto journal = std::make_shared<agents::memory_tool_journal>();
  boost::asio::io_context io;
  for (auto& r : records) boost::asio::co_spawn(io, journal->append(std::move(r)), boost::asio::detached);
  io.run();
  return journal;
}

TEST(A2aClientStep, a_start_message_sent_but_never_answered_is_not_sent_again) {
  remote_agent agent(booker());
  auto journal = journal_with({json::object{{"kind", "a2a_send"}, {"message", "sb-1"}}});
  const auto e = run_step(agent, journal);
  ASSERT_TRUE(e.failed());
  EXPECT_EQ(e.error->type, "unknown_outcome");
  EXPECT_THAT(e.error->message, AllOf(HasSubstr("'booker'"), HasSubstr("not sent again")));
  EXPECT_EQ(journal->records().size(), 1u);  // nothing more was tried
}

TEST(A2aClientStep, an_unreachable_agent_fails_the_step_naming_it_after_recording_the_attempt) {
  remote_agent agent(booker());
  auto journal = journal_with({});
  const auto e = run_step(agent, journal);
  ASSERT_TRUE(e.failed());
  EXPECT_EQ(e.error->type, "remote_agent_unreachable");
  EXPECT_THAT(e.error->message, HasSubstr("'booker'"));
  // The start was recorded before it was sent (a crash then is never a second
  // task), and marked unsent once the connection was refused...
  ASSERT_EQ(journal->records().size(), 2u);
  EXPECT_EQ(journal->records()[0].at("kind"), "a2a_send");
  EXPECT_EQ(journal->records()[1].at("kind"), "a2a_unsent");
  // ...so the step's next attempt tries again instead of giving up.
  const auto again = run_step(agent, journal);
  ASSERT_TRUE(again.failed());
  EXPECT_EQ(again.error->type, "remote_agent_unreachable");
}

TEST(A2aClientStep, a_recorded_task_is_looked_up_not_started_again) {
  remote_agent agent(booker());
  auto journal = journal_with({json::object{{"kind", "a2a_send"}, {"message", "sb-1"}},
                               json::object{{"kind", "a2a_task"}, {"task", "t1"}, {"context", "c1"}}});
  const auto e = run_step(agent, journal);
  ASSERT_TRUE(e.failed());
  EXPECT_EQ(e.error->type, "remote_agent_unreachable");
  EXPECT_THAT(e.error->message, HasSubstr("GetTask"));
  EXPECT_EQ(journal->records().size(), 2u);
}

TEST(A2aClientStep, an_unreachable_card_is_named) {
  auto config = booker();
  config.url.clear();
  config.card_url = "http://127.0.0.1:9/.well-known/agent-card.json";
  remote_agent agent(config);
  const auto e = run_step(agent, journal_with({}));
  ASSERT_TRUE(e.failed());
  EXPECT_THAT(e.error->message, AllOf(HasSubstr("'booker'"), HasSubstr(config.card_url)));
}

}  // namespace
}  // namespace switchboard::a2a
