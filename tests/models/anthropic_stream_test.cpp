// Anthropic message streaming against the loopback server: the request
// asks for a stream, the streamed answer equals the same answer sent whole
// (text, tool_use calls, the forced structured-output tool, usage, stop
// reason), cuts anywhere change nothing, and a stall, a stream without
// message_stop or a transient error event is retried with a restart.
#include "../../models/src/anthropic_stream.hpp"

#include "http_test_support.hpp"
#include "model_test_support.hpp"
#include "stream_test_support.hpp"

#include <switchboard/models/anthropic_model.hpp>
#include <switchboard/net/error.hpp>

#include <boost/json/parse.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::models {
namespace {

using ::testing::HasSubstr;
using switchboard::testing::loopback_model_server;
using switchboard::testing::server_action;
using test::error_of;
using test::recording_sink;
using test::run;

const std::string unicode_text = "Gr\xC3\xBC\xC3\x9F" "e aus K\xC3\xB6ln \xF0\x9F\x8C\x8D, \xE6\x97\xA5\xE6\x9C\xAC!";

anthropic_options anthropic_for(const loopback_model_server& server) {
  anthropic_options options;
  options.http = test::fast_http(server, "");
  options.api_key = test::secret_key;
  options.model = "claude-test";
  return options;
}

server_action calls_action() {
  return server_action::tool_calls({{"toolu_1", "calendar.lookup", R"({"day":"2025-05-01","who":"J\u00fcrgen"})"},
                                    {"toolu_2", "weather", R"({"city":"K\u00f6ln","days":[1,2]})"}},
                                   "Let me check.");
}

chat_request structured_request() {
  chat_request request = test::user_request("plan it", "claude-test");
  request.format.type = response_format::kind::json_schema;
  request.format.name = "plan";
  request.format.schema = boost::json::parse(R"({"type":"object","properties":{"day":{"type":"string"}}})");
  return request;
}

std::pair<chat_result, chat_result> both_ways(server_action action, recording_sink& sink,
                                              chat_request request = test::user_request("hi", "claude-test")) {
  loopback_model_server server;
  server.enqueue(action);
  server.enqueue(std::move(action).streamed());
  anthropic_model model(anthropic_for(server));
  const chat_result whole = run(model.complete(request));
  request.stream = &sink;
  const chat_result streamed = run(model.complete(request));
  EXPECT_EQ(server.requests().at(1).json().at("stream"), true);
  EXPECT_EQ(server.requests().at(1).header("Accept"), "text/event-stream");
  return {streamed, whole};
}

TEST(anthropic_stream, streamed_text_equals_the_whole_answer) {
  recording_sink sink;
  auto [streamed, whole] = both_ways(server_action::reply(unicode_text).with_delta_bytes(3), sink);
  test::expect_same_answer(streamed, whole);
  EXPECT_EQ(streamed.text, unicode_text);
  EXPECT_EQ(streamed.stop, stop_reason::complete);
  EXPECT_EQ(sink.text, unicode_text);
  EXPECT_TRUE(sink.all_whole_utf8);
}

TEST(anthropic_stream, streamed_tool_calls_equal_the_whole_answer) {
  recording_sink sink;
  auto [streamed, whole] = both_ways(calls_action().with_delta_bytes(4), sink);
  test::expect_same_answer(streamed, whole);
  ASSERT_EQ(streamed.tool_calls.size(), 2u);
  EXPECT_EQ(streamed.stop, stop_reason::tool_calls);
  EXPECT_EQ(sink.text, "Let me check.");
  ASSERT_EQ(sink.calls.size(), 2u);
  EXPECT_EQ(sink.calls[0].id, "toolu_1");
  EXPECT_EQ(sink.calls[1].name, "weather");
  // The sink sees the arguments as the model wrote them; the result holds them re-serialized.
  EXPECT_EQ(boost::json::parse(sink.calls[1].arguments), boost::json::parse(streamed.tool_calls[1].arguments));
}

TEST(anthropic_stream, a_structured_answer_through_the_forced_tool_equals_the_whole_answer) {
  recording_sink sink;
  auto [streamed, whole] =
      both_ways(server_action::reply(R"({"day": "Montag \u2013 fr\u00fch"})").with_delta_bytes(3), sink,
                structured_request());
  test::expect_same_answer(streamed, whole);
  EXPECT_EQ(streamed.stop, stop_reason::complete);
  EXPECT_EQ(boost::json::parse(sink.text), boost::json::parse(streamed.text));
}

TEST(anthropic_stream, cuts_at_every_byte_change_nothing) {
  for (server_action base : {server_action::reply(unicode_text), calls_action()}) {
    server_action action = std::move(base).with_crlf().with_delta_bytes(4);
    const std::string events = testing::render_event_stream(action, "/v1/messages", R"({"model":"claude-test"})");
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < events.size(); ++i) every.push_back(i);
    recording_sink sink;
    auto [streamed, whole] = both_ways(std::move(action).with_split_at(every), sink);
    test::expect_same_answer(streamed, whole);
    EXPECT_TRUE(sink.all_whole_utf8);
    EXPECT_EQ(sink.text, whole.text);
  }
}

TEST(anthropic_stream, a_stall_is_retried_and_the_sink_restarts) {
  loopback_model_server server;
  const std::string events =
      testing::render_event_stream(server_action::reply(unicode_text).streamed(), "/v1/messages", "{}");
  server.enqueue(server_action::reply(unicode_text).streamed().with_delta_bytes(4).with_stall_after(
      events.size() * 2 / 3, std::chrono::seconds(5)));
  server.enqueue(server_action::reply(unicode_text).streamed());
  auto options = anthropic_for(server);
  options.http.stream_idle_timeout = std::chrono::milliseconds(200);
  anthropic_model model(options);
  recording_sink sink;
  auto request = test::user_request("hi", "claude-test");
  request.stream = &sink;
  EXPECT_EQ(run(model.complete(request)).text, unicode_text);
  EXPECT_EQ(sink.restarts, 1);
  EXPECT_EQ(sink.text, unicode_text);
}

TEST(anthropic_stream, a_stream_without_message_stop_is_never_an_answer) {
  loopback_model_server server;
  server.set_default(server_action::reply("half").streamed().without_terminator());
  auto options = anthropic_for(server);
  options.http.retry.max_attempts = 2;
  anthropic_model model(options);
  recording_sink sink;
  auto request = test::user_request("hi", "claude-test");
  request.stream = &sink;
  const auto error = error_of([&] { run(model.complete(request)); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::connection_lost);
  EXPECT_THAT(error->what(), HasSubstr("message_stop"));
  EXPECT_EQ(sink.restarts, 1);
}

// The reader fed one byte at a time: cuts inside UTF-8 sequences, JSON and
// line ends reach it directly, whatever TCP coalesced in the tests above.
TEST(anthropic_stream, the_reader_fed_byte_by_byte_reads_what_it_reads_whole) {
  for (server_action base : {server_action::reply(unicode_text), calls_action()}) {
    const server_action action = std::move(base).with_crlf().with_delta_bytes(3);
    const std::string events = testing::render_event_stream(action, "/v1/messages", R"({"model":"claude-test"})");
    const auto read = [&](std::size_t step, recording_sink& sink) {
      detail::anthropic_stream reader(&sink, {}, {});
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

std::optional<model_error> read_error(std::string_view stream, detail::anthropic_reading how = {}) {
  detail::anthropic_stream reader(nullptr, how, {});
  return error_of([&] {
    reader.begin();
    reader.data(stream);
    if (auto problem = reader.end()) throw model_error(model_errc::connection_lost, *problem);
    (void)reader.result();
  });
}

TEST(anthropic_stream, error_events_and_broken_blocks) {
  // Overloaded is the server's passing state: the stream fails the attempt
  // as transient, for the network layer to retry.
  detail::anthropic_stream overloaded(nullptr, {}, {});
  overloaded.begin();
  try {
    overloaded.data(
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
    FAIL() << "an overloaded_error event was accepted";
  } catch (const net::net_error& e) {
    EXPECT_TRUE(e.retryable()) << "overloaded: the attempt is retried";
    EXPECT_EQ(e.errc(), net::net_errc::http_status);
    EXPECT_EQ(e.http_status(), 529);
    EXPECT_EQ(e.server_message(), "Overloaded");
  }

  // Any other error event ends the call.
  auto error = read_error(
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}\n\n");
  ASSERT_TRUE(error);
  EXPECT_FALSE(error->retryable());
  EXPECT_EQ(error->errc(), model_errc::http_status);
  EXPECT_EQ(error->provider_message(), "bad");

  error = read_error(R"(data: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}})"
                     "\n\n");
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("never started"));

  error = read_error(
      R"(data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}})"
      "\n\n"
      R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"[1,"}})"
      "\n\n"
      R"(data: {"type":"content_block_stop","index":0})"
      "\n\n");
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("not JSON"));

  error = read_error(
      R"(data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}})"
      "\n\ndata: {\"type\":\"message_stop\"}\n\n");
  ASSERT_TRUE(error);
  EXPECT_THAT(error->what(), HasSubstr("never ended"));
}

}  // namespace
}  // namespace switchboard::models
