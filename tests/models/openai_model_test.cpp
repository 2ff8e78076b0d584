#include <switchboard/models/openai_model.hpp>

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

openai_options options_for(const loopback_model_server& server) { return test::openai_for(server, "default-model"); }

chat_request full_request() {
  chat_request request;
  request.model = "gpt-4o-mini";
  request.messages = {{chat_role::system, "be brief"}, {chat_role::user, "hi"}, {chat_role::assistant, "hello"},
                      {chat_role::user, "again"}};
  request.temperature = 0.25;
  request.max_tokens = 128;
  request.seed = 42;
  request.stop = {"END"};
  request.prompt_version = "greeting@3";
  return request;
}

TEST(OpenAiModel, SendsTheChatCompletionsWireFormat) {
  loopback_model_server server;
  server.enqueue(server_action::reply("hi there"));
  openai_model model(options_for(server));
  run(model.complete(full_request()));

  const auto body = server.requests().at(0).json().as_object();
  EXPECT_EQ(body.at("model"), "gpt-4o-mini");
  const auto& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0], json::parse(R"({"role":"system","content":"be brief"})"));
  EXPECT_EQ(messages[2], json::parse(R"({"role":"assistant","content":"hello"})"));
  EXPECT_EQ(body.at("temperature").as_double(), 0.25);
  EXPECT_EQ(body.at("max_tokens"), 128);
  EXPECT_EQ(body.at("seed"), 42);
  EXPECT_EQ(body.at("stop"), json::parse(R"(["END"])"));
  EXPECT_FALSE(body.contains("response_format"));
  EXPECT_FALSE(body.contains("prompt_version"));  // ours, not the provider's
}

TEST(OpenAiModel, OmitsUnsetOptionalFieldsAndUsesTheDefaultModel) {
  openai_options options;
  options.http.base_url = "http://127.0.0.1:9/v1";
  options.model = "default-model";
  openai_model model(options);
  const auto body = json::parse(model.render_request(test::user_request("x", ""))).as_object();
  EXPECT_EQ(body.at("model"), "default-model");
  for (const char* absent : {"temperature", "max_tokens", "seed", "stop", "response_format"}) {
    EXPECT_FALSE(body.contains(absent)) << absent;
  }
}

TEST(OpenAiModel, JsonSchemaResponseFormat) {
  openai_options options;
  options.http.base_url = "http://127.0.0.1:9/v1";
  openai_model model(options);
  auto request = full_request();
  request.format.type = response_format::kind::json_schema;
  request.format.name = "scheduling.output@1";
  request.format.strict = true;
  request.format.schema = json::parse(R"({"type":"object","properties":{"a":{"type":"number"}}})");
  const auto body = json::parse(model.render_request(request)).as_object();
  const auto& format = body.at("response_format").as_object();
  EXPECT_EQ(format.at("type"), "json_schema");
  EXPECT_EQ(format.at("json_schema").at("name"), "scheduling_output_1");  // provider-safe characters
  EXPECT_EQ(format.at("json_schema").at("strict"), true);
  EXPECT_EQ(format.at("json_schema").at("schema"), request.format.schema);

  request.format.type = response_format::kind::json_object;
  const auto object_mode = json::parse(model.render_request(request)).as_object();
  EXPECT_EQ(object_mode.at("response_format"), json::parse(R"({"type":"json_object"})"));
}

TEST(OpenAiModel, MessageTextsSurviveRenderingExactly) {
  openai_options options;
  options.http.base_url = "http://127.0.0.1:9/v1";
  openai_model model(options);
  std::string tricky = "quote \" backslash \\ slash / tab \t newline \n cr \r ";
  for (char c = 1; c < 0x20; ++c) tricky += c;
  tricky += " del \x7f utf-8 \xc3\xa9\xe2\x82\xac\xf0\x9f\x99\x82 end";
  auto request = full_request();
  request.messages = {{chat_role::system, tricky}, {chat_role::user, ""}};
  const auto body = json::parse(model.render_request(request)).as_object();
  const auto& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0].at("content").as_string(), tricky);
  EXPECT_EQ(messages[1].at("content").as_string(), "");
  EXPECT_EQ(body.at("temperature").to_number<double>(), *request.temperature);
}

TEST(OpenAiModel, EscapesAreFoundAtEveryPositionOfLongTexts) {
  // Texts are scanned several bytes at a time: a character to escape must be
  // found wherever it falls in (or at the end of) such a block.
  openai_options options;
  options.http.base_url = "http://127.0.0.1:9/v1";
  openai_model model(options);
  for (const char special : {'"', '\\', '\n', '\x01', '\x1f'}) {
    for (std::size_t at = 0; at < 40; ++at) {
      std::string text(40, 'a');
      text[at] = special;
      text += "\xc3\xa9";  // and a multi-byte character after it
      auto request = full_request();
      request.messages = {{chat_role::user, text}};
      const auto body = json::parse(model.render_request(request)).as_object();
      ASSERT_EQ(body.at("messages").at(0).at("content").as_string(), text) << int(special) << " at " << at;
    }
  }
}

TEST(OpenAiModel, NoModelAnywhereIsNotConfigured) {
  openai_options options;
  options.http.base_url = "http://127.0.0.1:9/v1";
  openai_model model(options);
  // The error surfaces where the operation is awaited, not where it is made.
  std::optional<boost::asio::awaitable<chat_result>> operation;
  EXPECT_NO_THROW(operation.emplace(model.complete(test::user_request("x", ""))));
  const auto error = error_of([&] { run(std::move(*operation)); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::not_configured);
  EXPECT_NE(std::string(error->what()).find("openai"), std::string::npos);
}

TEST(OpenAiModel, WithoutAKeyNoAuthorizationHeaderIsSent) {
  loopback_model_server server;
  server.enqueue(server_action::reply("local"));
  auto options = options_for(server);
  options.api_key.clear();  // Ollama, llama.cpp
  openai_model model(options);
  EXPECT_EQ(run(model.complete(test::user_request("x"))).text, "local");
  EXPECT_EQ(server.requests().at(0).header("Authorization"), "");
}

TEST(OpenAiModel, CapabilitiesAreConfigurable) {
  openai_options options;
  options.http.base_url = "http://127.0.0.1:9/v1";
  EXPECT_EQ(openai_model(options).capabilities().best_mode, output_mode::json_schema);
  EXPECT_TRUE(openai_model(options).capabilities().strict_schema);
  options.capabilities = {output_mode::json_object, false};
  EXPECT_EQ(openai_model(options).capabilities().best_mode, output_mode::json_object);
  EXPECT_EQ(openai_model(options).provider(), "openai");
}

TEST(OpenAiModel, ParsesUsageFinishReasonAndModel) {
  loopback_model_server server;
  auto reply = server_action::reply("partial");
  reply.finish_reason = "length";
  reply.prompt_tokens = 100;
  reply.completion_tokens = 25;
  server.enqueue(reply);
  openai_model model(options_for(server));
  const auto result = run(model.complete(full_request()));
  EXPECT_EQ(result.text, "partial");
  EXPECT_EQ(result.finish_reason, "length");
  EXPECT_EQ(result.usage.prompt_tokens, 100);
  EXPECT_EQ(result.usage.completion_tokens, 25);
  EXPECT_EQ(result.model, "gpt-4o-mini");
  EXPECT_EQ(json::parse(result.raw_body).at("usage").at("total_tokens"), 125);
}

TEST(OpenAiModel, WrongShapesAreInvalidResponses) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, R"({"choices":[]})"));
  server.enqueue(server_action::raw_body(200, R"([1,2])"));
  openai_model model(options_for(server));
  for (const char* expected : {"choices[0]", "not a JSON object"}) {
    const auto error = error_of([&] { run(model.complete(test::user_request("x"))); });
    ASSERT_TRUE(error) << expected;
    EXPECT_EQ(error->errc(), model_errc::invalid_response);
    EXPECT_NE(std::string(error->what()).find(expected), std::string::npos) << error->what();
  }
}

TEST(OpenAiModel, ARefusalIsAResultTheLadderEndsOn) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(
      200, R"({"choices":[{"message":{"role":"assistant","content":null,"refusal":"I cannot help"},"finish_reason":"stop"}]})"));
  openai_model model(options_for(server));
  const chat_result result = run(model.complete(test::user_request("x")));
  EXPECT_EQ(result.stop, stop_reason::refusal);
  EXPECT_EQ(result.refusal, "I cannot help");
}

TEST(OpenAiModel, OllamaStyleErrorStringBecomesTheProviderMessage) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(404, R"({"error":"model 'llama9' not found"})"));
  openai_model model(options_for(server));
  const auto error = error_of([&] { run(model.complete(test::user_request("x"))); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->http_status(), 404);
  EXPECT_EQ(error->provider_message(), "model 'llama9' not found");
}

TEST(OpenAiModel, NonJsonErrorBodyIsQuotedShortly) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(400, "<html>" + std::string(1000, 'x') + "</html>"));
  openai_model model(options_for(server));
  const auto error = error_of([&] { run(model.complete(test::user_request("x"))); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->provider_message().rfind("<html>", 0), 0u);
  EXPECT_LE(error->provider_message().size(), 200u);
}

}  // namespace
}  // namespace switchboard::models
