// OpenAI-compatible streaming against the loopback server: the request asks
// for a stream with usage, the streamed answer equals the same answer sent
// whole (text, tool calls, usage, finish reason), the sink gets whole UTF-8
// characters whatever the cuts, and a stall or a stream without [DONE] is
// retried (the sink told to restart) or fails — never accepted half-read.
#include "../../models/src/openai_stream.hpp"

#include "http_test_support.hpp"
#include "model_test_support.hpp"
#include "stream_test_support.hpp"

#include <switchboard/models/caching_model.hpp>
#include <switchboard/models/openai_model.hpp>
#include <switchboard/models/request_hash.hpp>
#include <switchboard/models/scripted_model.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::models {
namespace {

using ::testing::HasSubstr;
using switchboard::testing::loopback_model_server;
using switchboard::testing::scripted_tool_call;
using switchboard::testing::server_action;
using test::error_of;
using test::recording_sink;
using test::run;

const std::string unicode_text = "Gr\xC3\xBC\xC3\x9F" "e aus K\xC3\xB6ln \xF0\x9F\x8C\x8D, \xE6\x97\xA5\xE6\x9C\xAC!";

server_action calls_action() {
  return server_action::tool_calls({{"call_1", "calendar.lookup", R"({"day":"2025-05-01","who":"J\u00fcrgen"})"},
                                    {"call_2", "weather", R"({"city":"K\u00f6ln"})"}},
                                   "Let me check.");
}

// The same action answered whole and streamed (sink attached).
std::pair<chat_result, chat_result> both_ways(server_action action, recording_sink& sink) {
  loopback_model_server server;
  server.enqueue(action);
  server.enqueue(std::move(action).streamed());
  openai_model model(test::openai_for(server, "gpt-test"));
  const chat_result whole = run(model.complete(test::user_request("hi")));
  auto request = test::user_request("hi");
  request.stream = &sink;
  const chat_result streamed = run(model.complete(request));
  EXPECT_EQ(server.requests().at(1).header("Accept"), "text/event-stream");
  return {streamed, whole};
}

TEST(openai_stream, the_request_asks_for_a_stream_with_usage) {
  recording_sink sink;
  auto request = test::user_request("hi");
  openai_model model(test::openai_for(loopback_model_server(), "gpt-test"));
  EXPECT_THAT(model.render_request(request), ::testing::Not(HasSubstr("stream")));
  request.stream = &sink;
  EXPECT_THAT(model.render_request(request), HasSubstr(R"("stream":true,"stream_options":{"include_usage":true})"));
}

TEST(openai_stream, streamed_text_equals_the_whole_answer) {
  recording_sink sink;
  auto [streamed, whole] = both_ways(server_action::reply(unicode_text).with_delta_bytes(3), sink);
  test::expect_same_answer(streamed, whole);
  EXPECT_EQ(streamed.text, unicode_text);
  EXPECT_EQ(sink.text, unicode_text);
  EXPECT_GT(sink.text_deltas.size(), 5u);
  EXPECT_TRUE(sink.all_whole_utf8);
  EXPECT_EQ(sink.restarts, 0);
  EXPECT_THAT(streamed.raw_body, HasSubstr("data: [DONE]"));
}

TEST(openai_stream, streamed_tool_calls_equal_the_whole_answer) {
  recording_sink sink;
  auto [streamed, whole] = both_ways(calls_action().with_delta_bytes(5), sink);
  test::expect_same_answer(streamed, whole);
  ASSERT_EQ(streamed.tool_calls.size(), 2u);
  EXPECT_EQ(streamed.stop, stop_reason::tool_calls);
  EXPECT_EQ(sink.calls, streamed.tool_calls);
  EXPECT_EQ(sink.text, "Let me check.");
}

TEST(openai_stream, a_truncated_finish_and_usage_survive_streaming) {
  server_action action = server_action::reply("cut off here");
  action.finish_reason = "length";
  action.prompt_tokens = 123;
  action.completion_tokens = 456;
  recording_sink sink;
  auto [streamed, whole] = both_ways(action, sink);
  test::expect_same_answer(streamed, whole);
  EXPECT_EQ(streamed.stop, stop_reason::truncated);
  EXPECT_EQ(streamed.usage.completion_tokens, 456);
}

// Every byte its own chunk and write: cuts inside UTF-8 sequences, inside
// JSON strings and between the CR and LF of a line end.
TEST(openai_stream, cuts_at_every_byte_change_nothing) {
  for (server_action base : {server_action::reply(unicode_text), calls_action()}) {
    server_action action = std::move(base).with_crlf().with_delta_bytes(4);
    const std::string events = testing::render_event_stream(action, "/v1/chat/completions", R"({"model":"gpt-test"})");
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < events.size(); ++i) every.push_back(i);
    recording_sink sink;
    auto [streamed, whole] = both_ways(std::move(action).with_split_at(every), sink);
    test::expect_same_answer(streamed, whole);
    EXPECT_TRUE(sink.all_whole_utf8);
    EXPECT_EQ(sink.text, whole.text);
    EXPECT_EQ(sink.calls, whole.tool_calls);
  }
}

openai_options stalling_options(const loopback_model_server& server) {
  auto options = test::openai_for(server, "gpt-test");
  options.http.stream_idle_timeout = std::chrono::milliseconds(200);
  return options;
}

TEST(openai_stream, a_stall_is_retried_and_the_sink_restarts) {
  loopback_model_server server;
  const std::string events = testing::render_event_stream(server_action::reply(unicode_text).streamed(),
                                                          "/v1/chat/completions", R"({"model":"gpt-test"})");
  // Stall in the middle of the text, after some deltas went out.
  server.enqueue(server_action::reply(unicode_text).streamed().with_delta_bytes(4).with_stall_after(
      events.size() / 2, std::chrono::seconds(5)));
  server.enqueue(server_action::reply(unicode_text).streamed());
  openai_model model(stalling_options(server));
  recording_sink sink;
  auto request = test::user_request("hi");
  request.stream = &sink;
  const chat_result result = run(model.complete(request));
  EXPECT_EQ(result.text, unicode_text);
  EXPECT_EQ(sink.restarts, 1);  // the stall was cut at the idle timeout, not waited out
  EXPECT_EQ(sink.text, unicode_text);  // what followed the restart
  EXPECT_EQ(server.request_count(), 2u);
}

TEST(openai_stream, a_stall_without_attempts_left_is_a_timeout) {
  loopback_model_server server;
  server.enqueue(server_action::reply("x").streamed().with_stall_after(30, std::chrono::seconds(5)));
  auto options = stalling_options(server);
  options.http.retry.max_attempts = 1;
  openai_model model(options);
  recording_sink sink;
  auto request = test::user_request("hi");
  request.stream = &sink;
  const auto error = error_of([&] { run(model.complete(request)); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::timeout);
  EXPECT_THAT(error->what(), HasSubstr("stalled"));
}

TEST(openai_stream, a_stall_before_the_head_is_a_stall_too) {
  loopback_model_server server;
  server.enqueue(server_action::stall(std::chrono::seconds(5)));
  server.enqueue(server_action::reply("after the stall").streamed());
  openai_model model(stalling_options(server));
  recording_sink sink;
  auto request = test::user_request("hi");
  request.stream = &sink;
  EXPECT_EQ(run(model.complete(request)).text, "after the stall");
  EXPECT_EQ(sink.restarts, 0);  // nothing was delivered before
}

TEST(openai_stream, a_stream_without_done_is_never_an_answer) {
  loopback_model_server server;
  server.enqueue(server_action::reply("half an answer").streamed().without_terminator());
  server.enqueue(server_action::reply("the whole answer").streamed());
  openai_model model(test::openai_for(server, "gpt-test"));
  recording_sink sink;
  auto request = test::user_request("hi");
  request.stream = &sink;
  EXPECT_EQ(run(model.complete(request)).text, "the whole answer");
  EXPECT_EQ(sink.restarts, 1);
  EXPECT_EQ(sink.text, "the whole answer");

  server.set_default(server_action::reply("half").streamed().without_terminator());
  const auto error = error_of([&] { run(model.complete(request)); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::connection_lost);
  EXPECT_THAT(error->what(), HasSubstr("[DONE]"));
  EXPECT_THAT(error->what(), HasSubstr("after 3 attempts"));
}

TEST(openai_stream, a_server_that_answers_whole_is_read_whole_and_delivered_once) {
  loopback_model_server server;
  server.enqueue(calls_action());
  openai_model model(test::openai_for(server, "gpt-test"));
  recording_sink sink;
  auto request = test::user_request("hi");
  request.stream = &sink;
  const chat_result result = run(model.complete(request));
  ASSERT_EQ(result.tool_calls.size(), 2u);
  EXPECT_EQ(sink.text_deltas, std::vector<std::string>{"Let me check."});
  EXPECT_EQ(sink.calls, result.tool_calls);
}

// The reader on its own: what a hostile or broken stream gets.
// The reader fed one byte at a time: cuts inside UTF-8 sequences, JSON and
// line ends reach it directly, whatever TCP coalesced in the tests above.
TEST(openai_stream, the_reader_fed_byte_by_byte_reads_what_it_reads_whole) {
  for (server_action base : {server_action::reply(unicode_text), calls_action()}) {
    const server_action action = std::move(base).with_crlf().with_delta_bytes(3);
    const std::string events = testing::render_event_stream(action, "/v1/chat/completions", R"({"model":"gpt-test"})");
    const auto read = [&](std::size_t step, recording_sink& sink) {
      detail::openai_stream reader(&sink, {});
      reader.begin();
      for (std::size_t i = 0; i < events.size(); i += step) reader.data(std::string_view(events).substr(i, step));
      EXPECT_FALSE(reader.end());
      return reader.result();
    };
    recording_sink whole_sink, byte_sink;
    const chat_result whole = read(events.size(), whole_sink);
    const chat_result bytewise = read(1, byte_sink);
    test::expect_same_answer(bytewise, whole);
    EXPECT_TRUE(byte_sink.all_whole_utf8);
    EXPECT_EQ(byte_sink.text, whole.text.empty() ? "" : whole_sink.text);
    EXPECT_EQ(byte_sink.calls, whole_sink.calls);
    EXPECT_FALSE(whole.text.empty());
  }
}

std::optional<model_error> read_error(std::string_view stream) {
  detail::openai_stream reader(nullptr, {});
  return error_of([&] {
    reader.begin();
    reader.data(stream);
    if (auto problem = reader.end()) throw model_error(model_errc::connection_lost, *problem);
    (void)reader.result();
  });
}

TEST(openai_stream, broken_streams_are_clear_errors) {
  auto error = read_error("data: {\"error\":{\"message\":\"model overloaded\"}}\n\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->provider_message(), "model overloaded");
  error = read_error("data: {not json\n\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::invalid_response);
  error = read_error(R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":100000000,"id":"x"}]}}]})"
                     "\n\n");
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("index 100000000"));
  error = read_error(R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]})"
                     "\n\ndata: [DONE]\n\n");
  ASSERT_TRUE(error);  // a call without id or name
  EXPECT_EQ(error->errc(), model_errc::invalid_response);
  error = read_error("data: " + std::string(5 << 20, 'x'));
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("longer than the limit"));
  EXPECT_FALSE(read_error("data: {\"choices\":[]}\n\ndata: [DONE]\n\n"));
}

TEST(stream_doubles, scripted_and_cached_answers_arrive_as_one_piece_and_the_hash_ignores_the_sink) {
  auto request = test::user_request("hi");
  const std::string hash = request_hash(request);
  recording_sink sink;
  request.stream = &sink;
  EXPECT_EQ(request_hash(request), hash);

  auto scripted = std::make_shared<scripted_model>(std::vector<scripted_response>{scripted_response::text("scripted")});
  caching_model cache(*scripted);
  EXPECT_EQ(run(cache.complete(request)).text, "scripted");  // a miss: the inner model delivers
  EXPECT_EQ(run(cache.complete(request)).text, "scripted");  // a hit: the cache delivers
  EXPECT_EQ(sink.text_deltas, (std::vector<std::string>{"scripted", "scripted"}));
}

}  // namespace
}  // namespace switchboard::models
