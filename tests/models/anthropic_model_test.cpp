#include <switchboard/models/anthropic_model.hpp>

#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

namespace switchboard::models {
namespace {

namespace json = boost::json;
using testing::loopback_model_server;
using testing::server_action;
using test::error_of;
using test::run;

anthropic_options options_for(const loopback_model_server& server) {
  anthropic_options options;
  options.http = test::fast_http(server, "");
  options.api_key = test::secret_key;
  options.model = "claude-test";
  return options;
}

chat_request structured_request(json::value schema) {
  chat_request request;
  request.messages = {{chat_role::system, "You plan meetings."},
                      {chat_role::system, "Answer in JSON."},
                      {chat_role::user, "Plan one."}};
  request.format.type = response_format::kind::json_schema;
  request.format.name = "plan";
  request.format.schema = std::move(schema);
  return request;
}

TEST(AnthropicModel, SendsTheMessagesWireFormatWithHeaders) {
  loopback_model_server server;
  server.enqueue(server_action::reply("plain answer"));
  anthropic_model model(options_for(server));
  chat_request request = structured_request(nullptr);
  request.format = {};
  request.temperature = 0.5;
  request.stop = {"STOP"};
  request.seed = 7;
  const auto result = run(model.complete(request));
  EXPECT_EQ(result.text, "plain answer");
  EXPECT_EQ(result.finish_reason, "end_turn");

  const auto recorded = server.requests().at(0);
  EXPECT_EQ(recorded.target, "/v1/messages");
  EXPECT_EQ(recorded.header("x-api-key"), test::secret_key);
  EXPECT_EQ(recorded.header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(recorded.header("Authorization"), "");
  const auto body = recorded.json().as_object();
  EXPECT_EQ(body.at("model"), "claude-test");
  EXPECT_EQ(body.at("system"), "You plan meetings.\n\nAnswer in JSON.");
  EXPECT_EQ(body.at("messages"), json::parse(R"([{"role":"user","content":"Plan one."}])"));
  EXPECT_EQ(body.at("max_tokens"), 4096);  // required by the API: the default fills in
  EXPECT_EQ(body.at("temperature").as_double(), 0.5);
  EXPECT_EQ(body.at("stop_sequences"), json::parse(R"(["STOP"])"));
  EXPECT_FALSE(body.contains("seed"));  // not part of the messages API
  EXPECT_FALSE(body.contains("tools"));
}

TEST(AnthropicModel, StopReasonsAndThinkingBlocksAreMapped) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, R"({"content":[{"type":"thinking","thinking":"Maya first."},
      {"type":"text","text":"{\"a\": [1,"}],"stop_reason":"max_tokens","model":"c"})"));
  server.enqueue(server_action::raw_body(200, R"({"content":[{"type":"text","text":"I can't help with that."}],
      "stop_reason":"refusal","model":"c"})"));
  anthropic_model model(options_for(server));
  const auto cut = run(model.complete(test::user_request("x")));
  EXPECT_EQ(cut.stop, stop_reason::truncated);
  EXPECT_EQ(cut.reasoning, "Maya first.");
  EXPECT_EQ(cut.text, "{\"a\": [1,") << "thinking never joins the text";
  const auto refused = run(model.complete(test::user_request("x")));
  EXPECT_EQ(refused.stop, stop_reason::refusal);
  EXPECT_EQ(refused.refusal, "I can't help with that.");
}

TEST(AnthropicModel, StructuredOutputGoesThroughOneForcedTool) {
  loopback_model_server server;
  server.enqueue(server_action::reply(R"({"room":"A","minutes":30})"));
  anthropic_model model(options_for(server));
  const auto schema = json::parse(R"({"type":"object","properties":{"room":{"type":"string"}}})");
  const auto result = run(model.complete(structured_request(schema)));

  EXPECT_EQ(json::parse(result.text), json::parse(R"({"room":"A","minutes":30})"));
  EXPECT_EQ(result.finish_reason, "tool_use");
  EXPECT_EQ(result.stop, stop_reason::complete) << "the forced tool is the answer, not a tool call";
  EXPECT_EQ(result.usage.prompt_tokens, 11);
  EXPECT_EQ(result.usage.completion_tokens, 7);
  EXPECT_EQ(result.model, "claude-test");

  const auto body = server.requests().at(0).json().as_object();
  const auto& tools = body.at("tools").as_array();
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0].at("name"), "plan");
  EXPECT_EQ(tools[0].at("input_schema"), schema);
  EXPECT_TRUE(tools[0].at("description").is_string());
  EXPECT_EQ(body.at("tool_choice"), json::parse(R"({"type":"tool","name":"plan"})"));
}

TEST(AnthropicModel, NonObjectSchemasAreWrappedAndUnwrapped) {
  loopback_model_server server;
  server.enqueue(server_action::reply(R"({"value":[1,2,3]})"));
  anthropic_model model(options_for(server));
  const auto schema = json::parse(R"({"type":"array","items":{"type":"integer"}})");
  const auto result = run(model.complete(structured_request(schema)));
  EXPECT_EQ(json::parse(result.text), json::parse("[1,2,3]"));
  const auto input_schema = server.requests().at(0).json().at("tools").at(0).at("input_schema");
  EXPECT_EQ(input_schema.at("type"), "object");
  EXPECT_EQ(input_schema.at("properties").at("value"), schema);
}

TEST(AnthropicModel, JsonObjectModeForcesAGenericObjectTool) {
  anthropic_options options;
  options.http.base_url = "http://127.0.0.1:9";
  options.model = "claude-test";
  anthropic_model model(options);
  auto request = structured_request(nullptr);
  request.format.type = response_format::kind::json_object;
  request.format.name.clear();
  const auto body = json::parse(model.render_request(request)).as_object();
  EXPECT_EQ(body.at("tools").at(0).at("name"), "structured_output");
  EXPECT_EQ(body.at("tools").at(0).at("input_schema"), json::parse(R"({"type":"object"})"));
}

TEST(AnthropicModel, TextInsteadOfTheToolIsReturnedAsText) {
  loopback_model_server server;
  server.enqueue(server_action::reply("I would rather chat"));  // not JSON: the server answers with text
  anthropic_model model(options_for(server));
  const auto result = run(model.complete(structured_request(json::parse(R"({"type":"object"})"))));
  EXPECT_EQ(result.text, "I would rather chat");
  EXPECT_EQ(result.finish_reason, "end_turn");
}

TEST(AnthropicModel, ErrorsCarryAnthropicsMessage) {
  loopback_model_server server;
  server.enqueue(server_action::error(400, "max_tokens: must be positive"));
  anthropic_model model(options_for(server));
  const auto error = error_of([&] { run(model.complete(structured_request(nullptr))); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::http_status);
  EXPECT_EQ(error->http_status(), 400);
  EXPECT_EQ(error->provider_message(), "max_tokens: must be positive");
  EXPECT_NE(std::string(error->what()).find("anthropic"), std::string::npos);
  EXPECT_EQ(server.request_count(), 1u);
}

TEST(AnthropicModel, MissingContentIsAnInvalidResponse) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, R"({"type":"message"})"));
  anthropic_model model(options_for(server));
  const auto error = error_of([&] { run(model.complete(structured_request(nullptr))); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::invalid_response);
}

TEST(AnthropicModel, CapabilitiesAreJsonSchemaThroughTheTool) {
  anthropic_options options;
  options.http.base_url = "http://127.0.0.1:9";
  anthropic_model model(options);
  EXPECT_EQ(model.capabilities().best_mode, output_mode::json_schema);
  EXPECT_FALSE(model.capabilities().strict_schema);
  EXPECT_EQ(model.provider(), "anthropic");
}

}  // namespace
}  // namespace switchboard::models
