// The HTTP client on its own, against the loopback server: what it returns,
// how its failures read as net_error (code, status, server message,
// retryability), how it counts attempts in a request budget, and that a
// body_stream can fail an attempt as transient. The model clients' own tests
// (tests/models/http_test.cpp, http_tls_test.cpp, transport_errors_test.cpp)
// cover TLS, pooling, deadlines and diagnosis through the model layer.
#include <switchboard/net/http_client.hpp>

#include <switchboard/net/error.hpp>
#include <switchboard/net/http_options.hpp>
#include <switchboard/net/request_budget.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

namespace switchboard::net {
namespace {

using testing::loopback_model_server;
using testing::server_action;

constexpr std::string_view body = R"({"model":"m","messages":[]})";

http_options fast_options(const loopback_model_server& server) {
  http_options options;
  options.base_url = server.base_url() + "/v1";
  options.retry.initial_backoff = std::chrono::milliseconds(1);
  options.retry.max_backoff = std::chrono::milliseconds(5);
  options.retry.jitter = 0;
  return options;
}

template <class T>
T run(boost::asio::awaitable<T> operation) {
  boost::asio::io_context io;
  auto result = boost::asio::co_spawn(io, std::move(operation), boost::asio::use_future);
  io.run();
  return result.get();
}

http_response post(http_client& client, request_budget* budget = nullptr, body_stream* stream = nullptr) {
  const std::array<http_header, 1> headers{{{"Authorization", "Bearer sk-net-SECRET-42", true}}};
  return run(client.post_json("/chat/completions", body, headers, budget, stream));
}

net_error post_failure(http_client& client, request_budget* budget = nullptr) {
  try {
    post(client, budget);
  } catch (const net_error& e) {
    return e;
  }
  throw std::logic_error("the request did not fail");
}

TEST(HttpClient, PostsJsonAndReturnsTheAnswer) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, R"({"ok":true})"));
  http_client client(fast_options(server), "svc");
  const http_response response = post(client);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, R"({"ok":true})");
  EXPECT_FALSE(response.streamed);
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].target, "/v1/chat/completions");
  EXPECT_EQ(server.requests()[0].body, body);
  EXPECT_EQ(server.requests()[0].header("authorization"), "Bearer sk-net-SECRET-42");
}

TEST(HttpClient, AClientErrorIsNotRetriedAndCarriesTheServersMessage) {
  loopback_model_server server;
  server.enqueue(server_action::error(400, "the model field is missing"));
  server.set_default(server_action::raw_body(200, "{}"));
  http_client client(fast_options(server), "svc");
  const net_error e = post_failure(client);
  EXPECT_EQ(e.errc(), net_errc::http_status);
  EXPECT_EQ(e.code(), make_error_code(net_errc::http_status));
  EXPECT_EQ(e.http_status(), 400);
  EXPECT_EQ(e.server_message(), "the model field is missing");
  EXPECT_FALSE(e.retryable());
  EXPECT_NE(std::string(e.what()).find("svc: POST"), std::string::npos) << e.what();
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(HttpClient, AServerErrorIsRetriedWithinTheBudgetWhichCountsEveryAttempt) {
  loopback_model_server server;
  server.set_default(server_action::error(503, "busy"));
  http_client client(fast_options(server), "svc");
  request_budget budget;
  budget.max_attempts = 2;
  const net_error e = post_failure(client, &budget);
  EXPECT_EQ(e.errc(), net_errc::http_status);
  EXPECT_EQ(e.http_status(), 503);
  EXPECT_TRUE(e.retryable());
  EXPECT_EQ(budget.attempts, 2);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(HttpClient, ABudgetWhoseDeadlinePassedSendsNothing) {
  loopback_model_server server;
  server.set_default(server_action::raw_body(200, "{}"));
  http_client client(fast_options(server), "svc");
  request_budget budget;
  budget.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  EXPECT_EQ(post_failure(client, &budget).errc(), net_errc::timeout);
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpClient, ASuccessThatIsNotJsonIsAnInvalidResponse) {
  loopback_model_server server;
  server.set_default(server_action::raw_body(200, "<html><body>Sign in</body></html>")
                         .with_header("Content-Type", "text/html"));
  http_client client(fast_options(server), "svc");
  const net_error e = post_failure(client);
  EXPECT_EQ(e.errc(), net_errc::invalid_response);
  EXPECT_FALSE(e.retryable());
}

TEST(HttpClient, ALostConnectionIsRetryableAndRetried) {
  loopback_model_server server;
  server.enqueue(server_action::close_connection());
  server.enqueue(server_action::raw_body(200, R"({"second":true})"));
  http_client client(fast_options(server), "svc");
  EXPECT_EQ(post(client).body, R"({"second":true})");
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(HttpClient, OptionsItCannotUseAreRefusedNamingTheUrl) {
  http_options credentials;
  credentials.base_url = "https://user:pass@example.test/v1";
  try {
    http_client client(credentials, "svc");
    FAIL() << "credentials in the base URL were accepted";
  } catch (const net_error& e) {
    EXPECT_EQ(e.errc(), net_errc::invalid_options);
    EXPECT_NE(std::string(e.what()).find("svc: base URL"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("pass@"), std::string::npos) << e.what();
  }
  http_options not_http;
  not_http.base_url = "ftp://example.test/v1";
  try {
    http_client client(not_http, "svc");
    FAIL() << "an ftp base URL was accepted";
  } catch (const net_error& e) {
    EXPECT_EQ(e.errc(), net_errc::invalid_options);
  }
}

// A stream that refuses the first attempt's bytes as transient, as a model
// stream does when the server reports it is overloaded mid-stream.
class refusing_once final : public body_stream {
 public:
  void begin() override { ++begun; }
  void data(std::string_view bytes) override {
    if (begun == 1) throw net_error(net_errc::http_status, "overloaded mid-stream", 529, "overloaded", true);
    received += bytes;
  }
  std::optional<std::string> end() override { return std::nullopt; }
  int begun = 0;
  std::string received;
};

TEST(HttpClient, AStreamThatFailsAnAttemptAsTransientIsRetried) {
  loopback_model_server server;
  server.set_default(server_action::reply("hello").streamed());  // an event stream, both times
  http_client client(fast_options(server), "svc");
  refusing_once stream;
  const http_response response = post(client, nullptr, &stream);
  EXPECT_TRUE(response.streamed);
  EXPECT_EQ(stream.begun, 2);
  EXPECT_NE(stream.received.find("data: [DONE]"), std::string::npos) << stream.received;  // the retry's stream, whole
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(NetError, NamesEveryCode) {
  for (int code = 1; code <= static_cast<int>(net_errc::invalid_options); ++code) {
    EXPECT_NE(to_string(static_cast<net_errc>(code)), "unknown") << code;
    EXPECT_EQ(make_error_code(static_cast<net_errc>(code)).category().name(), std::string("switchboard.net"));
  }
}

}  // namespace
}  // namespace switchboard::net
