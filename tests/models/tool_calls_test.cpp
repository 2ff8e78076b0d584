// Tool calling on the wire, both formats, against the loopback model server:
// the request carries tools and the tool choice, parallel calls come back
// with their ids, names and raw arguments, the follow-up request carries the
// calls and their results, and malformed calls are clear errors.
#include <switchboard/models/tool_call.hpp>

#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <switchboard/models/anthropic_model.hpp>
#include <switchboard/models/openai_model.hpp>
#include <switchboard/protocol/limits.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace switchboard::models {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using switchboard::testing::loopback_model_server;
using switchboard::testing::server_action;
using test::error_of;
using test::run;

anthropic_options anthropic_for(const loopback_model_server& server) {
  anthropic_options options;
  options.http = test::fast_http(server, "");
  options.api_key = test::secret_key;
  options.model = "claude-test";
  return options;
}

std::vector<tool_definition> weather_tools() {
  return {{"get_weather", "The weather in a city.",
           json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"), true},
          {"calendar.list", "", nullptr, false}};
}

chat_request tool_request(std::optional<tool_choice> choice = std::nullopt) {
  chat_request request = test::user_request("Weather in Oslo and Bergen?");
  request.tools = weather_tools();
  request.tool_choice = std::move(choice);
  return request;
}

// The conversation after the model called two tools: its turn and both
// results, the second a failure.
chat_request follow_up_request() {
  chat_request request = tool_request();
  request.messages.insert(request.messages.begin(), chat_message{chat_role::system, "You check the weather."});
  chat_message assistant{chat_role::assistant, "Checking both."};
  assistant.tool_calls = {{"call_1", "get_weather", R"({"city": "Oslo"})"},
                          {"call_2", "get_weather", R"({"city":"Bergen"})"}};
  request.messages.push_back(assistant);
  chat_message sunny{chat_role::tool, "sunny, 21 C"};
  sunny.tool_call_id = "call_1";
  chat_message failed{chat_role::tool, "weather service unavailable"};
  failed.tool_call_id = "call_2";
  failed.is_error = true;
  request.messages.push_back(sunny);
  request.messages.push_back(failed);
  request.messages.push_back({chat_role::user, "Summarise."});
  return request;
}

const std::vector<testing::scripted_tool_call> two_calls = {
    {"call_a", "get_weather", R"({"city": "Oslo"})"}, {"call_b", "calendar.list", "{}"}};

// --- OpenAI-compatible -------------------------------------------------------

json::object sent_openai_body(const chat_request& request) {
  loopback_model_server server;
  server.enqueue(server_action::reply("ok"));
  openai_model model(test::openai_for(server, "gpt-test"));
  run(model.complete(request));
  return server.requests().at(0).json().as_object();
}

TEST(openai_tools, the_request_carries_tools_and_each_tool_choice) {
  const auto body = sent_openai_body(tool_request());
  EXPECT_EQ(body.at("tools"), json::parse(R"([
      {"type":"function","function":{"name":"get_weather","description":"The weather in a city.",
        "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}},
      {"type":"function","function":{"name":"calendar.list"}}])"));
  EXPECT_FALSE(body.contains("tool_choice")) << "no choice: the provider's default";
  EXPECT_FALSE(body.contains("parallel_tool_calls"));

  EXPECT_EQ(sent_openai_body(tool_request(tool_choice::automatic())).at("tool_choice"), "auto");
  EXPECT_EQ(sent_openai_body(tool_request(tool_choice::no_tools())).at("tool_choice"), "none");
  EXPECT_EQ(sent_openai_body(tool_request(tool_choice::any_tool())).at("tool_choice"), "required");
  EXPECT_EQ(sent_openai_body(tool_request(tool_choice::named_tool("get_weather"))).at("tool_choice"),
            json::parse(R"({"type":"function","function":{"name":"get_weather"}})"));

  chat_request serial = tool_request();
  serial.parallel_tool_calls = false;
  EXPECT_EQ(sent_openai_body(serial).at("parallel_tool_calls"), false);
}

TEST(openai_tools, a_request_without_tools_sends_no_tool_members) {
  chat_request request = test::user_request("hi");
  request.tool_choice = tool_choice::any_tool();  // meaningless without tools: not sent
  request.parallel_tool_calls = true;
  const auto body = sent_openai_body(request);
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_FALSE(body.contains("tool_choice"));
  EXPECT_FALSE(body.contains("parallel_tool_calls"));
  EXPECT_EQ(body.at("messages"), json::parse(R"([{"role":"user","content":"hi"}])"));
}

TEST(openai_tools, parallel_calls_are_read_with_ids_names_and_raw_arguments) {
  loopback_model_server server;
  server.enqueue(server_action::tool_calls(two_calls));
  openai_model model(test::openai_for(server, "gpt-test"));
  const auto result = run(model.complete(tool_request()));
  EXPECT_EQ(result.stop, stop_reason::tool_calls);
  EXPECT_EQ(result.finish_reason, "tool_calls");
  EXPECT_EQ(result.text, "");
  const std::vector<tool_call> expected = {{"call_a", "get_weather", R"({"city": "Oslo"})"},
                                           {"call_b", "calendar.list", "{}"}};
  EXPECT_EQ(result.tool_calls, expected) << "arguments are the text the model sent, unparsed";
}

TEST(openai_tools, a_stop_finish_beside_calls_still_asks_for_the_tools) {
  loopback_model_server server;
  auto action = server_action::tool_calls({{"c1", "get_weather", "{}"}}, "Let me look.");
  action.finish_reason = "stop";  // older Ollama, llama.cpp
  server.enqueue(std::move(action));
  openai_model model(test::openai_for(server, "gpt-test"));
  const auto result = run(model.complete(tool_request()));
  EXPECT_EQ(result.stop, stop_reason::tool_calls);
  EXPECT_EQ(result.text, "Let me look.");
  ASSERT_EQ(result.tool_calls.size(), 1u);
}

TEST(openai_tools, the_follow_up_carries_the_calls_and_their_results) {
  const auto body = sent_openai_body(follow_up_request());
  EXPECT_EQ(body.at("messages"), json::parse(R"([
      {"role":"system","content":"You check the weather."},
      {"role":"user","content":"Weather in Oslo and Bergen?"},
      {"role":"assistant","content":"Checking both.","tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}},
        {"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Bergen\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"sunny, 21 C"},
      {"role":"tool","tool_call_id":"call_2","content":"weather service unavailable"},
      {"role":"user","content":"Summarise."}])"));

  chat_request silent = tool_request();
  chat_message only_calls{chat_role::assistant, ""};
  only_calls.tool_calls = {{"call_9", "calendar.list", ""}};
  silent.messages.push_back(only_calls);
  const auto turn = sent_openai_body(silent).at("messages").at(1);
  EXPECT_TRUE(turn.at("content").is_null()) << "a turn of calls only has null content, as OpenAI sends it";
}

// The model_error an OpenAI answer `body` ends in.
model_error openai_error_for(const std::string& body) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, body));
  openai_model model(test::openai_for(server, "gpt-test"));
  const auto error = error_of([&] { run(model.complete(tool_request())); });
  if (!error) throw std::runtime_error("no error for " + body.substr(0, 200));
  return *error;
}

std::string openai_calls_body(const std::string& calls) {
  return R"({"choices":[{"message":{"content":null,"tool_calls":)" + calls + R"(},"finish_reason":"tool_calls"}]})";
}

std::string openai_call(const std::string& id, const std::string& name, const std::string& arguments_json) {
  return R"({"id":")" + id + R"(","type":"function","function":{"name":")" + name + R"(","arguments":)" +
         arguments_json + "}}";
}

TEST(openai_tools, malformed_calls_are_clear_errors) {
  const auto expect_error = [](const std::string& calls, const std::string& what) {
    const auto error = openai_error_for(openai_calls_body(calls));
    EXPECT_EQ(error.errc(), model_errc::invalid_response) << calls;
    EXPECT_THAT(error.what(), HasSubstr(what)) << calls;
  };
  expect_error(R"([{"type":"function","function":{"name":"get_weather","arguments":"{}"}}])",
               "tool call 0 has no id");
  expect_error(R"([{"id":"c1","type":"function","function":{"arguments":"{}"}}])",
               "tool call 0 ('c1') has no tool name");
  expect_error("[" + openai_call("c1", "get_weather", R"({"city":"Oslo"})") + "]",
               "tool call 0 ('c1') has arguments that are not a string");
  expect_error("[" + openai_call("c1", "get_weather", "\"{}\"") + "," + openai_call("c2", "rm -rf", "\"{}\"") + "]",
               "tool call 1 ('c2') names the tool 'rm -rf', not a valid tool name");
  expect_error(R"([{"id":"c1","type":"function"}])", "tool call 0 ('c1') has no function object");
  expect_error(R"([{"id":7,"type":"function","function":{"name":"x","arguments":"{}"}}])",
               "tool call 0 has a non-string 'id'");
  expect_error(R"(["get_weather"])", "tool call 0 is not an object");

  std::string many = "[";
  for (std::size_t i = 0; i <= protocol::max_tool_calls_per_turn; ++i)
    many += (i ? "," : "") + openai_call("c" + std::to_string(i), "get_weather", "\"{}\"");
  expect_error(many + "]", "65 tool calls in one answer, more than the 64 allowed");

  const std::string huge = "\"" + std::string(protocol::max_tool_arguments_bytes + 1, 'a') + "\"";
  expect_error("[" + openai_call("c1", "get_weather", huge) + "]",
               "tool call 0 ('c1') has 1048577 bytes of arguments, more than the 1048576 allowed");
}

TEST(openai_tools, the_largest_allowed_turn_is_read) {
  std::string many = "[";
  for (std::size_t i = 0; i < protocol::max_tool_calls_per_turn; ++i)
    many += (i ? "," : "") + openai_call("c" + std::to_string(i), "get_weather", "\"{}\"");
  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, openai_calls_body(many + "]")));
  openai_model model(test::openai_for(server, "gpt-test"));
  EXPECT_EQ(run(model.complete(tool_request())).tool_calls.size(), protocol::max_tool_calls_per_turn);
}

// --- Anthropic ---------------------------------------------------------------

json::object sent_anthropic_body(const chat_request& request) {
  loopback_model_server server;
  server.enqueue(server_action::reply("ok"));
  anthropic_model model(anthropic_for(server));
  run(model.complete(request));
  return server.requests().at(0).json().as_object();
}

TEST(anthropic_tools, the_request_carries_tools_and_each_tool_choice) {
  const auto body = sent_anthropic_body(tool_request());
  EXPECT_EQ(body.at("tools"), json::parse(R"([
      {"name":"get_weather","description":"The weather in a city.",
       "input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
      {"name":"calendar.list","input_schema":{"type":"object"}}])"))
      << "strict is OpenAI's; input_schema is required";
  EXPECT_FALSE(body.contains("tool_choice"));

  EXPECT_EQ(sent_anthropic_body(tool_request(tool_choice::automatic())).at("tool_choice"),
            json::parse(R"({"type":"auto"})"));
  EXPECT_EQ(sent_anthropic_body(tool_request(tool_choice::no_tools())).at("tool_choice"),
            json::parse(R"({"type":"none"})"));
  EXPECT_EQ(sent_anthropic_body(tool_request(tool_choice::any_tool())).at("tool_choice"),
            json::parse(R"({"type":"any"})"));
  EXPECT_EQ(sent_anthropic_body(tool_request(tool_choice::named_tool("get_weather"))).at("tool_choice"),
            json::parse(R"({"type":"tool","name":"get_weather"})"));

  chat_request serial = tool_request();
  serial.parallel_tool_calls = false;
  EXPECT_EQ(sent_anthropic_body(serial).at("tool_choice"),
            json::parse(R"({"type":"auto","disable_parallel_tool_use":true})"));
}

TEST(anthropic_tools, parallel_calls_are_read_with_ids_names_and_arguments) {
  loopback_model_server server;
  server.enqueue(server_action::tool_calls(two_calls, "Checking."));
  anthropic_model model(anthropic_for(server));
  const auto result = run(model.complete(tool_request()));
  EXPECT_EQ(result.stop, stop_reason::tool_calls);
  EXPECT_EQ(result.finish_reason, "tool_use");
  EXPECT_EQ(result.text, "Checking.");
  // tool_use.input is an object: serialized to text for tool_call::arguments.
  const std::vector<tool_call> expected = {{"call_a", "get_weather", R"({"city":"Oslo"})"},
                                           {"call_b", "calendar.list", "{}"}};
  EXPECT_EQ(result.tool_calls, expected);
}

TEST(anthropic_tools, the_follow_up_carries_tool_use_and_tool_result_blocks) {
  const auto body = sent_anthropic_body(follow_up_request());
  EXPECT_EQ(body.at("system"), "You check the weather.");
  EXPECT_EQ(body.at("messages"), json::parse(R"([
      {"role":"user","content":"Weather in Oslo and Bergen?"},
      {"role":"assistant","content":[
        {"type":"text","text":"Checking both."},
        {"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Oslo"}},
        {"type":"tool_use","id":"call_2","name":"get_weather","input":{"city":"Bergen"}}]},
      {"role":"user","content":[
        {"type":"tool_result","tool_use_id":"call_1","content":"sunny, 21 C"},
        {"type":"tool_result","tool_use_id":"call_2","content":"weather service unavailable","is_error":true},
        {"type":"text","text":"Summarise."}]}])"))
      << "consecutive results share one user turn, and the next user message joins it";
}

TEST(anthropic_tools, arguments_that_are_not_an_object_cannot_be_sent_back) {
  loopback_model_server server;
  anthropic_model model(anthropic_for(server));
  chat_request request = tool_request();
  chat_message assistant{chat_role::assistant, ""};
  assistant.tool_calls = {{"call_1", "get_weather", "{\"city\": "}};  // a cut-off text from another model
  request.messages.push_back(assistant);
  try {
    run(model.complete(request));
    FAIL() << "sent";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("tool call 'call_1' are not a JSON object"));
  }
  EXPECT_EQ(server.request_count(), 0u);

  request.messages.back().tool_calls[0].arguments = "";  // no arguments: {}
  server.enqueue(server_action::reply("ok"));
  run(model.complete(request));
  EXPECT_EQ(server.requests().at(0).json().at("messages").at(1).at("content").at(0).at("input"), json::object{});
}

model_error anthropic_error_for(const std::string& content) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(
      200, R"({"content":)" + content + R"(,"stop_reason":"tool_use","model":"c","usage":{}})"));
  anthropic_model model(anthropic_for(server));
  const auto error = error_of([&] { run(model.complete(tool_request())); });
  if (!error) throw std::runtime_error("no error for " + content.substr(0, 200));
  return *error;
}

std::string tool_use(const std::string& id, const std::string& name, const std::string& input) {
  return R"({"type":"tool_use","id":")" + id + R"(","name":")" + name + R"(","input":)" + input + "}";
}

TEST(anthropic_tools, malformed_calls_are_clear_errors) {
  const auto expect_error = [](const std::string& content, const std::string& what) {
    const auto error = anthropic_error_for(content);
    EXPECT_EQ(error.errc(), model_errc::invalid_response) << content;
    EXPECT_THAT(error.what(), HasSubstr(what)) << content;
  };
  expect_error(R"([{"type":"tool_use","name":"get_weather","input":{}}])", "tool call 0 has no id");
  expect_error(R"([{"type":"tool_use","id":"t1","input":{}}])", "tool call 0 ('t1') has no tool name");
  expect_error("[" + tool_use("t1", "get weather", "{}") + "]", "names the tool 'get weather', not a valid tool name");
  expect_error("[" + tool_use("t1", "get_weather", "\"Oslo\"") + "]", "tool call 0 ('t1') has an input that is not an object");
  expect_error(R"([{"type":"tool_use","id":"t1","name":"get_weather"}])", "tool call 0 ('t1') has no input");

  std::string many = "[";
  for (std::size_t i = 0; i <= protocol::max_tool_calls_per_turn; ++i)
    many += (i ? "," : "") + tool_use("t" + std::to_string(i), "get_weather", "{}");
  expect_error(many + "]", "65 tool calls in one answer, more than the 64 allowed");

  const std::string huge = R"({"text":")" + std::string(protocol::max_tool_arguments_bytes, 'a') + "\"}";
  expect_error("[" + tool_use("t1", "get_weather", huge) + "]", "bytes of arguments, more than the 1048576 allowed");
}

TEST(anthropic_tools, structured_output_with_tools_forces_its_own_tool_beside_them) {
  loopback_model_server server;
  // The forced tool's block is the answer; another tool's block is a call.
  server.enqueue(server_action::raw_body(200, R"({"content":[
      {"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Oslo"}},
      {"type":"tool_use","id":"t2","name":"plan","input":{"day":"Monday"}}],
      "stop_reason":"tool_use","model":"c"})"));
  anthropic_model model(anthropic_for(server));
  chat_request request = tool_request(tool_choice::no_tools());
  request.format.type = response_format::kind::json_schema;
  request.format.name = "plan";
  request.format.schema = json::parse(R"({"type":"object","properties":{"day":{"type":"string"}}})");
  const auto result = run(model.complete(request));
  EXPECT_EQ(result.text, R"({"day":"Monday"})");
  EXPECT_EQ(result.stop, stop_reason::complete);
  ASSERT_EQ(result.tool_calls.size(), 1u);
  EXPECT_EQ(result.tool_calls[0].name, "get_weather");

  const auto body = server.requests().at(0).json().as_object();
  const auto& tools = body.at("tools").as_array();
  ASSERT_EQ(tools.size(), 3u);
  EXPECT_EQ(tools[2].at("name"), "plan");
  EXPECT_EQ(body.at("tool_choice"), json::parse(R"({"type":"tool","name":"plan"})")) << "the final answer is forced";

  request.tools.push_back({"plan", "", nullptr, false});
  EXPECT_THROW(model.render_request(request), std::invalid_argument) << "a tool may not take the answer's name";
}

TEST(tool_names, the_accepted_alphabet_and_length) {
  EXPECT_TRUE(is_valid_tool_name("get_weather"));
  EXPECT_TRUE(is_valid_tool_name("github/list-issues:v2.1"));
  EXPECT_TRUE(is_valid_tool_name(std::string(128, 'a')));
  EXPECT_FALSE(is_valid_tool_name(std::string(129, 'a')));
  EXPECT_FALSE(is_valid_tool_name(""));
  EXPECT_FALSE(is_valid_tool_name("a b"));
  EXPECT_FALSE(is_valid_tool_name("caf\xc3\xa9"));
  EXPECT_FALSE(is_valid_tool_name("x\n"));
}

}  // namespace
}  // namespace switchboard::models
