// Tool calls through the models that never open a socket: the scripted
// model, record/replay and the caching model with its file store; and the
// request hash, which keys the last two and must tell tool requests apart.
#include <switchboard/models/tool_call.hpp>

#include "model_test_support.hpp"

#include <switchboard/models/caching_model.hpp>
#include <switchboard/models/file_cache_store.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/models/replay_model.hpp>
#include <switchboard/models/request_hash.hpp>
#include <switchboard/models/scripted_model.hpp>

#include <boost/json/parse.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace switchboard::models {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using test::run;
using test::temp_dir;

const std::vector<tool_call> calls = {{"call_1", "get_weather", R"({"city": "Oslo"})"},
                                      {"call_2", "calendar.list", "{}"}};

chat_request tool_request() {
  chat_request request = test::user_request("Weather in Oslo?");
  request.tools = {{"get_weather", "The weather in a city.",
                    json::parse(R"({"type":"object","properties":{"city":{"type":"string"}}})"), true},
                   {"calendar.list", "", nullptr, false}};
  request.tool_choice = tool_choice::any_tool();
  return request;
}

// The request that follows `calls`: the assistant's turn and both results.
chat_request follow_up() {
  chat_request request = tool_request();
  chat_message assistant{chat_role::assistant, ""};
  assistant.tool_calls = calls;
  request.messages.push_back(assistant);
  for (const auto& call : calls) {
    chat_message result{chat_role::tool, "result of " + call.id};
    result.tool_call_id = call.id;
    request.messages.push_back(result);
  }
  return request;
}

// --- scripted ----------------------------------------------------------------

TEST(scripted_tool_calls, a_scripted_turn_of_calls_comes_back_as_given) {
  scripted_model model({scripted_response::tool_calls(calls, "Checking."), scripted_response::text("Sunny.")});
  const auto turn = run(model.complete(tool_request()));
  EXPECT_EQ(turn.tool_calls, calls);
  EXPECT_EQ(turn.text, "Checking.");
  EXPECT_EQ(turn.stop, stop_reason::tool_calls);
  EXPECT_EQ(turn.finish_reason, "tool_calls");
  const auto answer = run(model.complete(follow_up()));
  EXPECT_TRUE(answer.tool_calls.empty());
  EXPECT_EQ(answer.text, "Sunny.");

  // The requests are recorded whole: tools, choice and the tool turns.
  const auto second = model.request(1);
  ASSERT_EQ(second.tools.size(), 2u);
  EXPECT_EQ(second.tool_choice->type, tool_choice::kind::required);
  EXPECT_EQ(second.messages.at(1).tool_calls, calls);
  EXPECT_EQ(second.messages.at(3).role, chat_role::tool);
  EXPECT_EQ(second.messages.at(3).tool_call_id, "call_2");
}

// --- record / replay -----------------------------------------------------------

TEST(replay_tool_calls, recorded_calls_replay_with_their_stop) {
  temp_dir dir;
  const auto file = dir.path() / "tools.jsonl";
  chat_result stop_beside_calls;  // an OpenAI-compatible server that says "stop" beside its calls
  stop_beside_calls.tool_calls = calls;
  stop_beside_calls.finish_reason = "stop";
  stop_beside_calls.stop = stop_reason::tool_calls;
  scripted_model inner({scripted_response::result(stop_beside_calls), scripted_response::text("Sunny.")});
  {
    record_model recorder(inner, file);
    run(recorder.complete(tool_request()));
    run(recorder.complete(follow_up()));
  }
  replay_model replay(file);
  EXPECT_EQ(replay.size(), 2u);
  const auto turn = run(replay.complete(tool_request()));
  EXPECT_EQ(turn.tool_calls, calls);
  EXPECT_EQ(turn.stop, stop_reason::tool_calls);
  EXPECT_EQ(turn.finish_reason, "stop");
  EXPECT_EQ(run(replay.complete(follow_up())).text, "Sunny.");

  chat_request other_tools = tool_request();
  other_tools.tools.pop_back();
  try {
    run(replay.complete(other_tools));
    FAIL() << "replayed an answer to another request";
  } catch (const model_error& e) {
    EXPECT_EQ(e.errc(), model_errc::unknown_request);
    EXPECT_THAT(e.what(), HasSubstr("1 tool(s)"));
  }
}

TEST(replay_tool_calls, a_recording_with_a_malformed_call_is_refused) {
  temp_dir dir;
  const auto file = dir.path() / "bad.jsonl";
  const std::string hash(64, 'a');
  std::ofstream(file) << R"({"hash":")" << hash
                      << R"(","response":{"text":"","tool_calls":[{"id":"c1","name":"rm -rf","arguments":"{}"}]}})"
                      << "\n";
  try {
    replay_model replay(file);
    FAIL() << "loaded";
  } catch (const model_error& e) {
    EXPECT_EQ(e.errc(), model_errc::invalid_response);
    EXPECT_THAT(e.what(), HasSubstr("line 1: a tool call's name is not a valid tool name"));
  }
}

// --- caching -------------------------------------------------------------------

TEST(caching_tool_calls, calls_survive_the_memory_and_the_file_store) {
  temp_dir dir;
  scripted_model inner({scripted_response::tool_calls(calls)});
  caching_options options;
  options.store = std::make_shared<file_cache_store>(file_cache_options{dir.path()});
  {
    caching_model cache(inner, options);
    EXPECT_EQ(run(cache.complete(tool_request())).tool_calls, calls);
    EXPECT_EQ(run(cache.complete(tool_request())).tool_calls, calls) << "from memory";
  }
  caching_model fresh(inner, options);  // an empty memory: the file answers
  const auto stored = run(fresh.complete(tool_request()));
  EXPECT_EQ(stored.tool_calls, calls);
  EXPECT_EQ(stored.stop, stop_reason::tool_calls);
  EXPECT_EQ(inner.calls(), 1u);
  EXPECT_EQ(fresh.statistics().store_hits, 1u);
}

// --- request hash ----------------------------------------------------------------

TEST(request_hash_tools, every_tool_member_is_part_of_the_key) {
  const auto base = request_hash(follow_up());
  const auto differs = [&](const char* what, auto change) {
    chat_request request = follow_up();
    change(request);
    EXPECT_NE(request_hash(request), base) << what;
  };
  differs("no tools", [](chat_request& r) { r.tools.clear(); });
  differs("tool name", [](chat_request& r) { r.tools[0].name = "get_forecast"; });
  differs("tool description", [](chat_request& r) { r.tools[0].description = "Weather."; });
  differs("tool parameters", [](chat_request& r) { r.tools[1].parameters = json::parse(R"({"type":"object"})"); });
  differs("strict", [](chat_request& r) { r.tools[0].strict = false; });
  differs("tool choice", [](chat_request& r) { r.tool_choice = tool_choice::named_tool("get_weather"); });
  differs("no tool choice", [](chat_request& r) { r.tool_choice.reset(); });
  differs("parallel", [](chat_request& r) { r.parallel_tool_calls = false; });
  differs("call arguments", [](chat_request& r) { r.messages[1].tool_calls[0].arguments = R"({"city":"Oslo"})"; });
  differs("call id", [](chat_request& r) { r.messages[1].tool_calls[1].id = "call_3"; });
  differs("result id", [](chat_request& r) { r.messages[2].tool_call_id = "call_2"; });
  differs("error flag", [](chat_request& r) { r.messages[3].is_error = true; });
  differs("role", [](chat_request& r) { r.messages[3].role = chat_role::user; });

  chat_request reordered = follow_up();
  reordered.tools[0].parameters = json::parse(R"({"properties":{"city":{"type":"string"}},"type":"object"})");
  EXPECT_EQ(request_hash(reordered), base) << "key order inside a schema does not matter";
}

TEST(request_hash_tools, a_request_without_tools_keeps_its_canonical_form) {
  // Recordings made before tools existed must still match.
  const auto canonical = canonical_request(test::user_request("hi"));
  EXPECT_EQ(canonical, json::parse(R"({"format":"switchboard.chat_request/1","model":"gpt-test",
      "prompt_version":"","messages":[["user","hi"]],"temperature":null,"max_tokens":null,"seed":null,
      "stop":[],"response_format":{"type":"none"}})"));
}

}  // namespace
}  // namespace switchboard::models
