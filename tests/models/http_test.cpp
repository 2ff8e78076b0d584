// The HTTP transport of the model clients (http_options.hpp), exercised
// through openai_model against real loopback servers: retries, deadlines,
// TLS, the keep-alive pool, cancellation, size caps and secret hygiene.
#include <switchboard/models/http_options.hpp>

#include "canned_server_support.hpp"
#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <switchboard/models/anthropic_model.hpp>
#include <switchboard/models/openai_model.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <exception>
#include <thread>

namespace switchboard::models {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using testing::loopback_model_server;
using testing::server_action;
using test::canned_server;
using test::error_of;
using test::run;

openai_options options_for(const loopback_model_server& server) { return test::openai_for(server, "gpt-test"); }

using test::ask;
using test::ask_in_sequence;
using test::options_at;

TEST(HttpTransport, SuccessfulExchangeMapsTheAnswer) {
  loopback_model_server server;
  server.enqueue(server_action::reply(R"({"city":"Oslo"})"));
  openai_model model(options_for(server));
  const auto result = ask(model);
  EXPECT_EQ(result.text, R"({"city":"Oslo"})");
  EXPECT_EQ(result.finish_reason, "stop");
  EXPECT_EQ(result.usage.prompt_tokens, 11);
  EXPECT_EQ(result.usage.completion_tokens, 7);
  EXPECT_EQ(result.model, "gpt-test");
  EXPECT_NE(result.raw_body.find("chatcmpl-loopback"), std::string::npos);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/chat/completions");
  EXPECT_EQ(requests[0].header("Authorization"), std::string("Bearer ") + test::secret_key);
  EXPECT_EQ(requests[0].header("Content-Type"), "application/json");
  EXPECT_EQ(requests[0].header("Host"), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(requests[0].header("Accept"), "application/json");
  EXPECT_EQ(requests[0].header("User-Agent"), "switchboard/0.1");
  EXPECT_EQ(requests[0].header("Accept-Encoding"), "identity");  // the client decodes no compression
}

TEST(HttpTransport, HeaderWithALineBreakIsRefusedAndNothingIsSent) {
  loopback_model_server server;
  server.enqueue(server_action::reply("{}"));
  auto options = options_for(server);
  options.api_key = std::string(test::secret_key) + "\r\nX-Injected: yes";
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::not_configured);
  EXPECT_NE(std::string(error->what()).find("Authorization"), std::string::npos) << error->what();
  EXPECT_EQ(std::string(error->what()).find(test::secret_key), std::string::npos) << error->what();
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpTransport, FencedJsonIsPassedThroughAsText) {
  loopback_model_server server;
  server.enqueue(server_action::fenced_json(R"({"a":1})"));
  openai_model model(options_for(server));
  EXPECT_EQ(ask(model).text, "Here is the result:\n```json\n{\"a\":1}\n```\n");
}

TEST(HttpTransport, ChunkedResponsesAreReassembled) {
  loopback_model_server server;
  server.enqueue(server_action::reply(std::string(5000, 'c')).with_chunked());
  openai_model model(options_for(server));
  EXPECT_EQ(ask(model).text, std::string(5000, 'c'));
}

std::string completion_json(const std::string& text) {
  return R"({"choices":[{"message":{"role":"assistant","content":")" + text +
         R"("},"finish_reason":"stop"}],"model":"m"})";
}

TEST(HttpTransport, BodyEndingWithTheConnectionIsReadInFull) {
  // No Content-Length, no chunking: the body is everything until the close,
  // here far larger than one read.
  const std::string text(20000, 'z');
  canned_server server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" +
                       completion_json(text));
  openai_model model(options_at(server.url("http")));
  EXPECT_EQ(ask(model).text, text);
}

TEST(HttpTransport, ConnectionClosedBeforeTheBodyEndsIsConnectionLost) {
  const std::string body = completion_json("cut short");
  canned_server server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                       std::to_string(body.size() + 100) + "\r\n\r\n" + body);
  auto options = options_at(server.url("http"));
  options.http.retry.max_attempts = 1;
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::connection_lost);
  EXPECT_NE(std::string(error->what()).find("connection lost mid-response"), std::string::npos) << error->what();
}

TEST(HttpTransport, RateLimitHonoursRetryAfter) {
  loopback_model_server server;
  server.enqueue(server_action::rate_limited(1));
  server.enqueue(server_action::reply("after the wait"));
  test::retry_log retries;
  auto options = options_for(server);
  options.http.retry.on_retry = retries.observer();
  openai_model model(options);
  EXPECT_EQ(ask(model).text, "after the wait");

  ASSERT_EQ(retries.events.size(), 1u);
  EXPECT_EQ(retries.events[0].http_status, 429);
  EXPECT_TRUE(retries.events[0].from_retry_after);
  EXPECT_EQ(retries.events[0].delay, 1000ms);  // not the 1 ms backoff
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  // The second request cannot have been sent before the Retry-After passed.
  EXPECT_GE(requests[1].received_at - requests[0].received_at, 1000ms);
}

TEST(HttpTransport, RetryAfterLongerThanTheClientWaitsFailsAtOnce) {
  loopback_model_server server;
  server.enqueue(server_action::rate_limited(3600, "come back in an hour"));
  openai_model model(options_for(server));
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->http_status(), 429);
  EXPECT_EQ(error->provider_message(), "come back in an hour");
  EXPECT_NE(std::string(error->what()).find("Retry-After 3600s"), std::string::npos);
  EXPECT_EQ(server.request_count(), 1u);
}

TEST(HttpTransport, ServerErrorThenSuccessIsRetriedWithBackoff) {
  loopback_model_server server;
  server.enqueue(server_action::error(500, "overloaded"));
  server.enqueue(server_action::error(503, "still overloaded"));
  server.enqueue(server_action::reply("ok"));
  test::retry_log retries;
  auto options = options_for(server);
  options.http.retry.on_retry = retries.observer();
  options.http.retry.initial_backoff = 2ms;
  options.http.retry.max_backoff = 1000ms;
  openai_model model(options);
  EXPECT_EQ(ask(model).text, "ok");
  ASSERT_EQ(retries.events.size(), 2u);
  EXPECT_EQ(retries.events[0].reason, "http 500");
  EXPECT_EQ(retries.events[0].delay, 2ms);  // jitter 0: initial backoff
  EXPECT_EQ(retries.events[1].delay, 4ms);  // then doubled
  EXPECT_FALSE(retries.events[0].from_retry_after);
  EXPECT_EQ(server.request_count(), 3u);
}

TEST(HttpTransport, RetriesStopAtMaxAttemptsWithTheLastError) {
  loopback_model_server server;
  server.set_default(server_action::error(502, "bad gateway"));
  auto options = options_for(server);
  options.http.retry.max_attempts = 3;
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::http_status);
  EXPECT_EQ(error->http_status(), 502);
  EXPECT_EQ(error->provider_message(), "bad gateway");
  EXPECT_TRUE(error->retryable());
  EXPECT_EQ(server.request_count(), 3u);
}

TEST(HttpTransport, ClientErrorsAreNeverRetriedAndCarryTheProviderMessage) {
  for (const int status : {400, 401, 404, 422}) {
    loopback_model_server server;
    server.set_default(server_action::error(status, "problem " + std::to_string(status)));
    openai_model model(options_for(server));
    const auto error = error_of([&] { ask(model); });
    ASSERT_TRUE(error) << status;
    EXPECT_EQ(error->errc(), model_errc::http_status);
    EXPECT_EQ(error->http_status(), status);
    EXPECT_EQ(error->provider_message(), "problem " + std::to_string(status));
    EXPECT_FALSE(error->retryable());
    EXPECT_NE(std::string(error->what()).find("HTTP " + std::to_string(status)), std::string::npos);
    EXPECT_NE(std::string(error->what()).find("/v1/chat/completions"), std::string::npos);
    EXPECT_EQ(server.request_count(), 1u) << status;
  }
}

TEST(HttpTransport, ConflictAndRequestTimeoutStatusesAreRetried) {
  loopback_model_server server;
  server.enqueue(server_action::error(408, "request timeout"));
  server.enqueue(server_action::error(409, "conflict"));
  server.enqueue(server_action::reply("ok"));
  openai_model model(options_for(server));
  EXPECT_EQ(ask(model).text, "ok");
  EXPECT_EQ(server.request_count(), 3u);
}

TEST(HttpTransport, StallPastTheDeadlineIsATimeout) {
  loopback_model_server server;
  server.set_default(server_action::stall());
  auto options = options_for(server);
  options.http.request_timeout = 150ms;
  options.http.retry.max_attempts = 2;
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::timeout);
  EXPECT_NE(std::string(error->what()).find("150 ms"), std::string::npos);
  EXPECT_EQ(server.request_count(), 2u);  // timeouts are retried, up to max_attempts
}

TEST(HttpTransport, TimeoutsAreNotRetriedWhenThePolicySaysSo) {
  loopback_model_server server;
  server.set_default(server_action::stall());
  auto options = options_for(server);
  options.http.request_timeout = 100ms;
  options.http.retry.retry_timeouts = false;
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::timeout);
  EXPECT_EQ(server.request_count(), 1u);
}

TEST(HttpTransport, ResetMidBodyIsConnectionLostAndRetried) {
  loopback_model_server server;
  server.enqueue(server_action::reset_mid_body());
  server.enqueue(server_action::reply("second try"));
  openai_model model(options_for(server));
  EXPECT_EQ(ask(model).text, "second try");
  EXPECT_EQ(server.accepted_connections(), 2u);  // the broken connection was not reused

  server.set_default(server_action::reset_mid_body());
  auto options = options_for(server);
  options.http.retry.max_attempts = 1;
  openai_model single(options);
  const auto error = error_of([&] { ask(single); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::connection_lost);
  EXPECT_TRUE(error->retryable());
}

TEST(HttpTransport, OversizedBodyIsRejectedAndNotRetried) {
  for (const bool chunked : {false, true}) {
    loopback_model_server server;
    server.set_default(server_action::oversized(64 * 1024).with_chunked(chunked));
    auto options = options_for(server);
    options.http.max_response_bytes = 16 * 1024;
    openai_model model(options);
    const auto error = error_of([&] { ask(model); });
    ASSERT_TRUE(error) << chunked;
    EXPECT_EQ(error->errc(), model_errc::response_too_large);
    EXPECT_NE(std::string(error->what()).find("16384 bytes"), std::string::npos);
    EXPECT_EQ(server.request_count(), 1u);
  }
}

TEST(HttpTransport, InvalidJsonBodyIsAnInvalidResponse) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, "<html>not json</html>"));
  openai_model model(options_for(server));
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::invalid_response);
  EXPECT_NE(std::string(error->what()).find("an HTML page (Content-Type application/json), not the provider's JSON"),
            std::string::npos)
      << error->what();
}

TEST(HttpTransport, KeepAliveConnectionsAreReused) {
  loopback_model_server server;
  server.set_default(server_action::reply("again"));
  openai_model model(options_for(server));
  EXPECT_EQ(run(ask_in_sequence(model, 5)), "againagainagainagainagain");
  EXPECT_EQ(server.request_count(), 5u);
  EXPECT_EQ(server.accepted_connections(), 1u);
}

TEST(HttpTransport, ServerClosingAnIdleConnectionIsNotAnError) {
  loopback_model_server server;
  server.enqueue(server_action::reply("one"));
  server.enqueue(server_action::close_connection());  // the pooled connection dies
  server.enqueue(server_action::reply("two"));
  auto options = options_for(server);
  options.http.retry.max_attempts = 1;  // the reconnect must not count as a retry
  openai_model model(options);
  EXPECT_EQ(run(ask_in_sequence(model, 2)), "onetwo");
  EXPECT_EQ(server.accepted_connections(), 2u);
}

TEST(HttpTransport, ConnectionCapQueuesConcurrentRequests) {
  loopback_model_server server;
  server.set_default(server_action::reply("ok").with_latency(5ms));
  auto options = options_for(server);
  options.http.max_connections_per_host = 3;
  openai_model model(options);
  asio::io_context io;
  std::atomic<int> succeeded{0};
  for (int i = 0; i < 40; ++i) {
    asio::co_spawn(io, model.complete(test::user_request("q")), [&](std::exception_ptr e, chat_result r) {
      if (!e && r.text == "ok") ++succeeded;
    });
  }
  io.run();
  EXPECT_EQ(succeeded, 40);
  EXPECT_LE(server.accepted_connections(), 3u);
  EXPECT_GE(server.accepted_connections(), 1u);
}

TEST(HttpTransport, ModelIsSafeToShareAcrossThreads) {
  loopback_model_server server;
  server.set_default(server_action::reply("ok"));
  auto options = options_for(server);
  options.http.max_connections_per_host = 4;
  openai_model model(options);
  asio::io_context io;
  std::atomic<int> succeeded{0};
  for (int i = 0; i < 200; ++i) {
    asio::co_spawn(io, model.complete(test::user_request("q")), [&](std::exception_ptr e, chat_result) {
      if (!e) ++succeeded;
    });
  }
  std::thread helper([&] { io.run(); });
  io.run();
  helper.join();
  EXPECT_EQ(succeeded, 200);
  EXPECT_LE(server.accepted_connections(), 4u);
}

TEST(HttpTransport, ConnectionRefusedIsConnectFailed) {
  unsigned short closed_port = 0;
  {
    asio::io_context io;
    asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
    closed_port = probe.local_endpoint().port();
  }
  auto options = options_at("http://127.0.0.1:" + std::to_string(closed_port) + "/v1");
  options.http.retry.initial_backoff = 1ms;
  options.http.retry.max_attempts = 2;
  test::retry_log retries;
  options.http.retry.on_retry = retries.observer();
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::connect_failed);
  EXPECT_TRUE(error->retryable());
  ASSERT_EQ(retries.events.size(), 1u);
  EXPECT_EQ(retries.events[0].reason, "connect_failed");
}

TEST(HttpTransport, BadConfigurationIsReportedAtConstruction) {
  for (const std::string url : {"not a url", "ftp://example.com/v1", "http:///nohost"}) {
    openai_options options;
    options.http.base_url = url;
    const auto error = error_of([&] { openai_model model(options); });
    ASSERT_TRUE(error) << url;
    EXPECT_EQ(error->errc(), model_errc::not_configured);
    EXPECT_NE(std::string(error->what()).find(url), std::string::npos);
  }
  openai_options options;
  options.http.base_url = "https://127.0.0.1:1/v1";
  options.http.ca_file = "/nonexistent/ca.pem";
  const auto error = error_of([&] { openai_model model(options); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::not_configured);
  EXPECT_NE(std::string(error->what()).find("/nonexistent/ca.pem"), std::string::npos);
}

// ---------------------------------------------------------------- cancellation

TEST(HttpTransport, CancellationEndsAStalledRequestAndFreesTheConnection) {
  loopback_model_server server;
  server.enqueue(server_action::stall());
  server.set_default(server_action::reply("after cancel"));
  auto options = options_for(server);
  options.http.request_timeout = std::chrono::minutes(5);  // only the cancellation can end it
  options.http.max_connections_per_host = 1;
  openai_model model(options);

  asio::io_context io;
  asio::cancellation_signal signal;
  std::exception_ptr failure;
  bool finished = false;
  asio::co_spawn(io, model.complete(test::user_request("q")),
                 asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, chat_result) {
                   failure = e;
                   finished = true;
                 }));
  // Cancel once the server holds the request.
  asio::steady_timer poll(io);
  std::function<void()> cancel_when_stalled = [&] {
    if (server.request_count() >= 1) {
      signal.emit(asio::cancellation_type::terminal);
      return;
    }
    poll.expires_after(2ms);
    poll.async_wait([&](auto) { cancel_when_stalled(); });
  };
  cancel_when_stalled();
  io.run();

  ASSERT_TRUE(finished);
  ASSERT_TRUE(failure);
  try {
    std::rethrow_exception(failure);
  } catch (const model_error& e) {
    EXPECT_EQ(e.errc(), model_errc::cancelled);
    EXPECT_FALSE(e.retryable());
  }
  // The pool's only slot was given back, and the stalled connection closed.
  EXPECT_EQ(ask(model).text, "after cancel");
  EXPECT_EQ(server.accepted_connections(), 2u);
}

TEST(HttpTransport, CancellationEndsTheWaitBeforeARetry) {
  loopback_model_server server;
  server.set_default(server_action::rate_limited(30));
  auto options = options_for(server);
  options.http.retry.max_retry_after = std::chrono::minutes(1);
  openai_model model(options);

  asio::io_context io;
  asio::cancellation_signal signal;
  std::exception_ptr failure;
  asio::co_spawn(io, model.complete(test::user_request("q")),
                 asio::bind_cancellation_slot(signal.slot(),
                                              [&](std::exception_ptr e, chat_result) { failure = e; }));
  asio::steady_timer poll(io);
  std::function<void()> cancel_when_waiting = [&] {
    if (server.request_count() >= 1) {
      // The 429 arrived; the client is sleeping 30 s before its retry.
      poll.expires_after(20ms);
      poll.async_wait([&](auto) { signal.emit(asio::cancellation_type::terminal); });
      return;
    }
    poll.expires_after(2ms);
    poll.async_wait([&](auto) { cancel_when_waiting(); });
  };
  cancel_when_waiting();
  io.run();
  ASSERT_TRUE(failure);
  const auto error = error_of([&] { std::rethrow_exception(failure); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::cancelled);
  EXPECT_EQ(server.request_count(), 1u);
}

// ---------------------------------------------------------------- secrets

TEST(HttpTransport, ApiKeysNeverAppearInLogsOrErrors) {
  test::captured_log log;
  loopback_model_server server;
  // A server that echoes the key back in its error message.
  server.enqueue(server_action::error(500, std::string("boom for key ") + test::secret_key));
  server.enqueue(server_action::rate_limited(0));
  server.enqueue(server_action::reset_mid_body());
  server.enqueue(server_action::reply("fine"));
  server.enqueue(server_action::error(401, std::string("Incorrect API key provided: ") + test::secret_key));
  auto options = options_for(server);
  options.http.retry.max_attempts = 4;
  openai_model model(options);
  EXPECT_EQ(ask(model).text, "fine");
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->http_status(), 401);
  EXPECT_EQ(std::string(error->what()).find(test::secret_key), std::string::npos) << error->what();
  EXPECT_EQ(error->provider_message().find(test::secret_key), std::string::npos);
  EXPECT_NE(error->provider_message().find("[redacted]"), std::string::npos);

  anthropic_options anthropic;
  anthropic.http = test::fast_http(server, "");
  anthropic.api_key = test::secret_key;
  anthropic.model = "claude-test";
  anthropic_model claude(anthropic);
  server.enqueue(server_action::error(403, std::string("key ") + test::secret_key + " is not allowed"));
  const auto anthropic_error = error_of([&] { run(claude.complete(test::user_request("q", ""))); });
  ASSERT_TRUE(anthropic_error);
  EXPECT_EQ(std::string(anthropic_error->what()).find(test::secret_key), std::string::npos);

  const std::string logged = log.text();
  EXPECT_FALSE(logged.empty());  // the retries were logged...
  EXPECT_EQ(logged.find(test::secret_key), std::string::npos) << logged;  // ...without the key
  EXPECT_EQ(logged.find("sk-test-SECRET"), std::string::npos);
}

}  // namespace
}  // namespace switchboard::models
