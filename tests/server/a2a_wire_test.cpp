// The A2A shapes of serve's A2A server (server/src/a2a_wire.hpp): a run's
// status as a task state, a paused run as the input it asks for, a finished
// run as its artifact or its error, a message as input or reply, the card.
#include "a2a_wire.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace {

namespace a2a = switchboard::server::a2a;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;
using orch::workflow_status;

orch::workflow_state run(workflow_status status) {
  orch::workflow_state s;
  s.id = "a2a-1";
  s.workflow_name = "family_scheduling";
  s.input = json::object{{"request", "Piano lesson for Leo"}};
  s.status = status;
  s.step = 3;
  return s;
}

const json::array& status_parts(const json::object& task) {
  return task.at("status").at("message").at("parts").as_array();
}

std::optional<a2a::incoming_message> read(std::string_view params, std::string& error) {
  return a2a::read_message(json::parse(params).as_object(), error);
}

TEST(A2aWire, RunStatusesAreTaskStates) {
  EXPECT_EQ(a2a::task_state(workflow_status::running), "TASK_STATE_WORKING");
  EXPECT_EQ(a2a::task_state(workflow_status::completed), "TASK_STATE_COMPLETED");
  EXPECT_EQ(a2a::task_state(workflow_status::failed), "TASK_STATE_FAILED");
  EXPECT_EQ(a2a::task_state(workflow_status::cancelled), "TASK_STATE_CANCELED");
  for (auto paused : {workflow_status::awaiting_clarification, workflow_status::awaiting_approval,
                      workflow_status::interrupted})
    EXPECT_EQ(a2a::task_state(paused), "TASK_STATE_INPUT_REQUIRED");
  EXPECT_EQ(a2a::run_status_of("TASK_STATE_CANCELED"), workflow_status::cancelled);
  EXPECT_FALSE(a2a::run_status_of("input-required"));  // the v0.3 name is not a v1.0 one
}

TEST(A2aWire, AClarificationAsksItsQuestionAsATextPart) {
  auto s = run(workflow_status::awaiting_clarification);
  s.clarification = orch::clarification_request{"When next week?", "parse", "nl_parser", 1};
  const auto task = a2a::task_of(s);
  EXPECT_EQ(task.at("id"), "a2a-1");
  EXPECT_EQ(task.at("contextId"), "family_scheduling");
  EXPECT_EQ(task.at("status").at("state"), "TASK_STATE_INPUT_REQUIRED");
  EXPECT_EQ(task.at("status").at("message").at("role"), "ROLE_AGENT");
  const auto& parts = status_parts(task);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].at("text"), "When next week?");
  EXPECT_TRUE(task.at("artifacts").as_array().empty());
}

TEST(A2aWire, AnApprovalListsThePendingCallsInADataPart) {
  auto s = run(workflow_status::awaiting_approval);
  s.approval = orch::approval_request{"confirm", {{"booking", 1, "c1", "calendar.book", json::object{{"title", "Soccer"}}, "Books"}}};
  const auto task = a2a::task_of(s);
  const auto& parts = status_parts(task);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_NE(parts[0].at("text").as_string().find("booking wants to call calendar.book"), json::string::npos);
  const auto& calls = parts[1].at("data").at("pending_calls").as_array();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].at("tool"), "calendar.book");
  EXPECT_EQ(calls[0].at("arguments").at("title"), "Soccer");
}

TEST(A2aWire, ACompletedRunHasTheEnvelopeAndItsExplanationAsAnArtifact) {
  auto s = run(workflow_status::completed);
  s.result = switchboard::protocol::envelope{json::object{{"action", "booked"}}, "Confirmed.", 0.9, "", std::nullopt};
  const auto task = a2a::task_of(s);
  EXPECT_EQ(task.at("status").at("state"), "TASK_STATE_COMPLETED");
  EXPECT_FALSE(task.at("status").as_object().contains("message"));
  const auto& artifacts = task.at("artifacts").as_array();
  ASSERT_EQ(artifacts.size(), 1u);
  const auto& parts = artifacts[0].at("parts").as_array();
  EXPECT_EQ(parts[0].at("data").at("data").at("action"), "booked");
  EXPECT_EQ(parts[0].at("data").at("explanation"), "Confirmed.");
  EXPECT_EQ(parts[1].at("text"), "Confirmed.");
}

TEST(A2aWire, AFailedRunSaysItsErrorNamingTheAgent) {
  auto s = run(workflow_status::failed);
  s.errors.push_back({"timeout", "no answer in 30 s", true, "scheduling"});
  const auto task = a2a::task_of(s);
  EXPECT_EQ(task.at("status").at("state"), "TASK_STATE_FAILED");
  EXPECT_EQ(status_parts(task)[0].at("text"), "scheduling: no answer in 30 s");
  EXPECT_EQ(status_parts(task)[1].at("data").at("type"), "timeout");
}

TEST(A2aWire, HistoryIsTheRequestAndTheAnswers) {
  auto s = run(workflow_status::running);
  s.clarification_answers = {"Wednesday 5-6pm"};
  const auto history = a2a::task_of(s, true).at("history").as_array();
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].at("parts").at(0).at("text"), "Piano lesson for Leo");
  EXPECT_EQ(history[1].at("parts").at(0).at("text"), "Wednesday 5-6pm");
  EXPECT_EQ(history[1].at("role"), "ROLE_USER");
}

TEST(A2aWire, AMessageIsReadAndCheckedNamingWhatIsWrong) {
  std::string error;
  const auto m = read(R"({"message":{"messageId":"m1","role":"ROLE_USER","taskId":"t1",
                         "parts":[{"text":"a"},{"text":"b"},{"data":{"decision":"approve"}}]}})",
                      error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->task_id, "t1");
  EXPECT_EQ(m->text, "a\nb");
  ASSERT_TRUE(m->data);
  EXPECT_EQ(m->data->at("decision"), "approve");

  // proto3's default "" is an id not given: a new task.
  const auto fresh = read(R"({"message":{"messageId":"m2","role":"ROLE_USER","taskId":"","contextId":"",
                             "parts":[{"text":"a"}]}})",
                          error);
  ASSERT_TRUE(fresh) << error;
  EXPECT_TRUE(fresh->task_id.empty());

  const std::pair<std::string_view, std::string_view> bad[] = {
      {R"({})", "params.message"},
      {R"({"message":{"role":"ROLE_USER","parts":[{"text":"a"}]}})", "messageId"},
      {R"({"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"a"}]}})", "role"},
      {R"({"message":{"messageId":"m","role":"ROLE_USER","parts":[]}})", "parts"},
      {R"({"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"http://x"}]}})", "only text and data"},
      {R"({"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":[1]}]}})", "\"data\""},
      {R"({"message":{"messageId":"m","taskId":7,"role":"ROLE_USER","parts":[{"text":"a"}]}})", "taskId"},
  };
  for (const auto& [params, named] : bad) {
    error.clear();
    EXPECT_FALSE(read(params, error)) << params;
    EXPECT_NE(error.find(named), std::string::npos) << params << ": " << error;
  }
}

TEST(A2aWire, ANewTaskTakesTheDataPartElseTheTextAsTheRequest) {
  a2a::incoming_message m;
  m.text = "Soccer on Saturday";
  EXPECT_EQ(a2a::workflow_input(m), (json::object{{"request", "Soccer on Saturday"}}));
  m.data = json::object{{"request", "structured"}, {"who", "Maya"}};
  EXPECT_EQ(a2a::workflow_input(m), *m.data);
}

TEST(A2aWire, AReplyMustFitWhatThePausedRunWaitsFor) {
  std::string error;
  a2a::incoming_message answer;
  answer.text = "Wednesday";
  auto asked = run(workflow_status::awaiting_clarification);
  EXPECT_EQ(a2a::resume_arguments(asked, answer, error)->at("answer"), "Wednesday");

  auto approval = run(workflow_status::awaiting_approval);
  EXPECT_FALSE(a2a::resume_arguments(approval, answer, error));
  EXPECT_NE(error.find("decision"), std::string::npos);
  a2a::incoming_message reject;
  reject.data = json::object{{"decision", "reject"}, {"reason", "too late"}};
  const auto args = a2a::resume_arguments(approval, reject, error);
  ASSERT_TRUE(args) << error;
  EXPECT_EQ(args->at("decision"), "reject");
  EXPECT_EQ(args->at("reason"), "too late");
  reject.data = json::object{{"decision", "maybe"}};
  EXPECT_FALSE(a2a::resume_arguments(approval, reject, error));

  EXPECT_FALSE(a2a::resume_arguments(asked, reject, error));  // a question wants text
  EXPECT_FALSE(a2a::resume_arguments(run(workflow_status::completed), answer, error));
  EXPECT_NE(error.find("TASK_STATE_COMPLETED"), std::string::npos);
  const auto resumed = a2a::resume_arguments(run(workflow_status::interrupted), answer, error);
  ASSERT_TRUE(resumed);
  EXPECT_EQ(*resumed, (json::object{{"run_id", "a2a-1"}}));
}

TEST(A2aWire, ErrorsCarryTheirCodeAndReason) {
  const auto e = a2a::error_response(json::value(5), a2a::code::task_not_found, "no task 'x'");
  EXPECT_EQ(e.at("id"), 5);
  EXPECT_EQ(e.at("error").at("code"), -32001);
  EXPECT_EQ(e.at("error").at("data").at(0).at("reason"), "TASK_NOT_FOUND");
  EXPECT_EQ(a2a::error_response(nullptr, a2a::code::unsupported_operation, "")
                .at("error").at("data").at(0).at("reason"),
            "UNSUPPORTED_OPERATION");
}

TEST(A2aWire, RestErrorsCarryTheHttpStatusAndTheReason) {
  const auto missing = a2a::rest_error_of(a2a::code::task_not_found, "no task 't'");
  EXPECT_EQ(missing.http_status, 404);
  EXPECT_EQ(missing.body.at("error").at("code"), 404);
  EXPECT_EQ(missing.body.at("error").at("status"), "NOT_FOUND");
  EXPECT_EQ(missing.body.at("error").at("message"), "no task 't'");
  EXPECT_EQ(missing.body.at("error").at("details").at(0).at("reason"), "TASK_NOT_FOUND");
  EXPECT_EQ(missing.body.at("error").at("details").at(0).at("@type"), "type.googleapis.com/google.rpc.ErrorInfo");
  EXPECT_EQ(a2a::rest_error_of(a2a::code::unsupported_operation, "").http_status, 400);
  EXPECT_EQ(a2a::rest_error_of(a2a::code::version_not_supported, "").body.at("error").at("status"),
            "FAILED_PRECONDITION");
  EXPECT_EQ(a2a::rest_error_of(a2a::code::invalid_params, "").body.at("error").at("status"), "INVALID_ARGUMENT");
  EXPECT_EQ(a2a::rest_error_of(a2a::code::internal_error, "").http_status, 500);
}

TEST(A2aWire, TheCardNamesTheJsonRpcInterfaceAndTheSkill) {
  const auto card = a2a::agent_card({.name = "wf",
                                     .description = "",
                                     .input_schema = json::object{{"type", "object"}},
                                     .rpc_url = "http://127.0.0.1:1/a2a/wf",
                                     .bearer_auth = true});
  EXPECT_EQ(card.at("supportedInterfaces").at(0).at("protocolBinding"), "JSONRPC");
  EXPECT_EQ(card.at("supportedInterfaces").at(0).at("protocolVersion"), "1.0");
  EXPECT_EQ(card.at("supportedInterfaces").at(0).at("url"), "http://127.0.0.1:1/a2a/wf");
  // The HTTP+JSON binding second, at the same base.
  EXPECT_EQ(card.at("supportedInterfaces").at(1).at("protocolBinding"), "HTTP+JSON");
  EXPECT_EQ(card.at("supportedInterfaces").at(1).at("url"), "http://127.0.0.1:1/a2a/wf");
  EXPECT_EQ(card.at("capabilities").at("streaming"), true);
  EXPECT_EQ(card.at("skills").at(0).at("id"), "wf");
  EXPECT_FALSE(card.at("skills").at(0).at("description").as_string().empty());
  EXPECT_TRUE(card.contains("securitySchemes"));
  EXPECT_FALSE(a2a::agent_card({.name = "wf", .description = "d", .input_schema = {}, .rpc_url = "u",
                                .bearer_auth = false})
                   .contains("securitySchemes"));
}

}  // namespace
