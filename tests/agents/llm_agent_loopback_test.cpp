// llm_agent end to end over real HTTP: the OpenAI-compatible client talks to
// a loopback model server started by the test.
#include <switchboard/agents/llm_agent.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/models/openai_model.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include "agent_test_support.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::agents {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using switchboard::testing::loopback_model_server;
using switchboard::testing::server_action;

constexpr std::string_view good_answer =
    R"({"data": {"title": "Design review", "start_time": "2026-11-24T10:00", "attendees": ["Ana"]},
        "explanation": "x", "confidence": 0.9, "reasoning": "Named in the request."})";
constexpr std::string_view invalid_answer =
    R"({"data": {"title": ""}, "explanation": "x", "confidence": 0.9, "reasoning": "y"})";

struct LlmAgentOverHttp : ::testing::Test {
  loopback_model_server server;
  // The io_context outlives the model: the client keeps idle connections on it.
  boost::asio::io_context io;
  std::shared_ptr<protocol::schema_registry> schemas = agent_test::test_schemas();
  agent_registry registry{schemas};
  agent_test::context_holder holder;

  LlmAgentOverHttp() {
    prompt_library library;
    library.load_directory(agent_test::test_data() / "prompts");
    register_prompt_agents(registry, library);
    openai_options options;
    options.http.base_url = server.base_url() + "/v1";
    options.http.retry.max_attempts = 1;  // this suite is about the agent, not retries
    options.model = "gpt-test";
    holder.models.add("default", std::make_shared<openai_model>(options));
    holder.input = boost::json::parse(R"({"request": "Schedule the design review"})");
  }
  ~LlmAgentOverHttp() override { holder.models = model_set{}; }

  protocol::envelope run(agent_context& context) {
    auto result = boost::asio::co_spawn(io, registry.at("meeting_parser").run(context),
                                        boost::asio::use_future);
    io.restart();
    io.run();
    return result.get();
  }
  // The chat messages of request `i` as the server received them.
  boost::json::array messages(std::size_t i) const {
    return server.requests().at(i).json().at("messages").as_array();
  }
};

TEST_F(LlmAgentOverHttp, ValidAnswer) {
  server.enqueue(server_action::reply(std::string(good_answer)));
  auto context = holder.make();
  const auto out = run(context);
  EXPECT_FALSE(out.failed());
  EXPECT_EQ(out.data.at("title"), "Design review");
  EXPECT_DOUBLE_EQ(out.confidence, 0.8);  // confidence rules of meeting_parser.v2
  EXPECT_THAT(registry.validate(registry.at("meeting_parser"), out), IsEmpty());
  EXPECT_EQ(context.usage.prompt_tokens, 11);  // as the server reported
  ASSERT_EQ(server.request_count(), 1u);
  const auto body = server.requests().at(0).json();
  EXPECT_EQ(body.at("model"), "gpt-test");
  EXPECT_EQ(body.at("max_tokens"), 400);
  EXPECT_THAT(std::string(messages(0).back().at("content").as_string()),
              HasSubstr("Request: Schedule the design review"));
}

TEST_F(LlmAgentOverHttp, InvalidAnswerFixedByReAsk) {
  server.enqueue(server_action::reply(std::string(invalid_answer)));
  server.enqueue(server_action::fenced_json(good_answer));
  auto context = holder.make();
  const auto out = run(context);
  EXPECT_FALSE(out.failed()) << out.reasoning;
  ASSERT_EQ(server.request_count(), 2u);
  // The re-ask carries the validator's complaint about /data/title.
  EXPECT_THAT(boost::json::serialize(messages(1)), HasSubstr("/data/title"));
  EXPECT_EQ(context.usage.total(), 2 * (11 + 7));
}

TEST_F(LlmAgentOverHttp, AnswerThatNeverValidatesIsAnErrorEnvelope) {
  server.enqueue(server_action::reply("Sure! The meeting is on Tuesday."));
  server.enqueue(server_action::reply(std::string(invalid_answer)));
  auto context = holder.make();
  const auto out = run(context);
  ASSERT_TRUE(out.failed());
  EXPECT_EQ(out.confidence, 0.0);
  EXPECT_EQ(out.error->type, "structured_output_failed");
  EXPECT_FALSE(out.error->retryable);
  EXPECT_THAT(out.error->message, AllOf(HasSubstr("meeting_parser"), HasSubstr("2 attempts")));
  EXPECT_EQ(server.request_count(), 2u);  // max_attempts of the prompt file
}

TEST_F(LlmAgentOverHttp, MissingTemplateVariableSendsNothing) {
  holder.input = boost::json::parse(R"({"subject": "no request member"})");
  auto context = holder.make();
  try {
    (void)run(context);
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(e.code(), make_error_code(agent_errc::template_variable_unknown));
    EXPECT_THAT(e.what(), AllOf(HasSubstr("meeting_parser.v2.json:19"), HasSubstr("/request")));
  }
  EXPECT_EQ(server.request_count(), 0u);
}

TEST_F(LlmAgentOverHttp, ServerErrorPropagatesAsModelError) {
  server.enqueue(server_action::error(400, "model 'gpt-test' does not exist"));
  auto context = holder.make();
  try {
    (void)run(context);
    FAIL();
  } catch (const model_error& e) {
    EXPECT_EQ(e.http_status(), 400);
    EXPECT_FALSE(e.retryable());
    EXPECT_THAT(e.what(), HasSubstr("does not exist"));
  }
}

}  // namespace
}  // namespace switchboard::agents
