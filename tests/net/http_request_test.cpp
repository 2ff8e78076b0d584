// http_client::request(), the general request, against the network layer's
// own server (http_server.hpp) on 127.0.0.1 port 0: methods, the response
// headers asked for, bodies and their limits, every status as an answer,
// retry scopes, event streams on GET (with the head before the first byte
// and a reader that stops once it has its answer), cancellation, and
// errors that say what went wrong without the URL (net_error::reason()).
#include <switchboard/net/error.hpp>
#include <switchboard/net/http_client.hpp>
#include <switchboard/net/http_options.hpp>
#include <switchboard/net/http_server.hpp>
#include <switchboard/net/request_budget.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace switchboard::net {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// An http_server on its own thread, recording what it was sent; `answer`
// decides each response (called with the request and its 1-based number).
class test_server {
 public:
  using answer_fn = std::function<asio::awaitable<server_response>(server_request&, int)>;

  explicit test_server(answer_fn answer, server_options options = {})
      : answer_(std::move(answer)),
        server_(io_.get_executor(), std::move(options), [this](server_request& r) { return handle(r); }) {
    server_.start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~test_server() {
    server_.stop();
    work_.reset();
    io_.stop();
    thread_.join();
  }

  std::uint16_t port() const { return server_.port(); }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/api"; }
  std::vector<server_request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  asio::awaitable<server_response> handle(server_request& r) {
    int number = 0;
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(r);
      number = static_cast<int>(requests_.size());
    }
    co_return co_await answer_(r, number);
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  answer_fn answer_;
  http_server server_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<server_request> requests_;
};

http_options options_for(const test_server& server) {
  http_options options;
  options.base_url = server.base_url();
  options.retry.initial_backoff = 1ms;
  options.retry.max_backoff = 5ms;
  options.retry.jitter = 0;
  return options;
}

template <class T>
T run(asio::awaitable<T> operation) {
  asio::io_context io;
  auto result = asio::co_spawn(io, std::move(operation), asio::use_future);
  io.run();
  return result.get();
}

template <class F>
net_error failure_of(F f) {
  try {
    f();
  } catch (const net_error& e) {
    return e;
  }
  throw std::logic_error("the request did not fail");
}

server_response reply(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
  server_response r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// Events as they arrive: what head() and begin() saw, every data byte.
class recording_stream final : public body_stream {
 public:
  void head(int s, std::span<const response_header> h) override {
    status = s;
    headers.assign(h.begin(), h.end());
  }
  void begin() override { ++begun; }
  void data(std::string_view bytes) override { received += bytes; }
  std::optional<std::string> end() override {
    ended = true;
    return std::nullopt;
  }
  bool wants_more() const noexcept override {
    return stop_after.empty() || received.find(stop_after) == std::string::npos;
  }

  int status = 0;
  std::vector<response_header> headers;
  int begun = 0;
  std::string received;
  bool ended = false;
  std::string stop_after;  // set: wants no more once this has arrived
};

TEST(HttpRequest, GetReturnsStatusTheHeadersAskedForAndTheBody) {
  test_server server([](server_request&, int) -> asio::awaitable<server_response> {
    co_return reply(200, R"({"items":[1,2]})", {{"X-Total-Count", "2"}, {"ETag", "\"v7\""}});
  });
  http_client client(options_for(server), "svc");
  const std::array<http_header, 1> headers{{{"X-Trace", "t-1", false}}};
  const std::array<std::string_view, 2> wanted{"x-total-count", "Content-Type"};
  http_request request;
  request.method = http_method::get;
  request.path = "/items?limit=2";
  request.headers = headers;
  request.response_headers = wanted;
  const http_result result = run(client.request(request));
  EXPECT_EQ(result.status, 200);
  EXPECT_EQ(result.body, R"({"items":[1,2]})");
  EXPECT_FALSE(result.streamed);
  ASSERT_EQ(result.headers.size(), 2u);  // ETag was not asked for
  EXPECT_EQ(result.header("X-Total-Count"), "2");
  EXPECT_EQ(result.header("content-type"), "application/json");
  EXPECT_FALSE(result.header("etag"));

  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].target, "/api/items?limit=2");
  EXPECT_EQ(seen[0].header("x-trace"), "t-1");
  EXPECT_FALSE(seen[0].header("content-length")) << "a GET without a body says no length";
  EXPECT_FALSE(seen[0].header("content-type"));
  EXPECT_EQ(seen[0].header("accept-encoding"), "identity");
}

TEST(HttpRequest, AllResponseHeadersComeInLowerCase) {
  test_server server([](server_request&, int) -> asio::awaitable<server_response> {
    co_return reply(201, "{}", {{"Location", "/items/9"}, {"X-Request-Id", "r-1"}});
  });
  http_client client(options_for(server), "svc");
  http_request request;
  request.method = http_method::post;
  request.path = "/items";
  request.body = R"({"name":"nine"})";
  request.all_response_headers = true;
  const http_result result = run(client.request(request));
  EXPECT_EQ(result.status, 201);
  EXPECT_EQ(result.header("location"), "/items/9");
  EXPECT_EQ(result.header("x-request-id"), "r-1");
  EXPECT_TRUE(result.header("content-length"));
  for (const auto& h : result.headers) {
    for (char c : h.name) EXPECT_FALSE(c >= 'A' && c <= 'Z') << h.name;
  }
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].body, R"({"name":"nine"})");
  EXPECT_EQ(seen[0].header("content-type"), "application/json");
}

TEST(HttpRequest, DeleteAnsweredWithAnErrorStatusIsAResultNotAnError) {
  test_server server([](server_request&, int) -> asio::awaitable<server_response> {
    co_return reply(405, R"({"detail":"sessions are not deleted here"})", {{"Allow", "GET, POST"}});
  });
  http_client client(options_for(server), "svc");
  const std::array<std::string_view, 1> wanted{"allow"};
  http_request request;
  request.method = http_method::delete_;
  request.path = "/sessions/1";
  request.response_headers = wanted;
  const http_result result = run(client.request(request));
  EXPECT_EQ(result.status, 405);
  EXPECT_EQ(result.body, R"({"detail":"sessions are not deleted here"})");
  EXPECT_FALSE(result.truncated);
  EXPECT_EQ(result.header("allow"), "GET, POST");
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].method, "DELETE");
  EXPECT_EQ(server.requests()[0].target, "/api/sessions/1");
}

TEST(HttpRequest, AnErrorBodyIsCutAtItsLimitAndASuccessBodyOverItsLimitFails) {
  test_server server([](server_request& r, int) -> asio::awaitable<server_response> {
    if (r.path == "/api/error") co_return reply(500, std::string(100'000, 'e'));
    co_return reply(200, std::string(5'000, 'x'));
  });
  auto options = options_for(server);
  options.retry.max_attempts = 1;
  http_client client(options, "svc");
  http_request request;
  request.path = "/error";
  request.max_error_body_bytes = 1'000;
  const http_result cut = run(client.request(request));
  EXPECT_EQ(cut.status, 500);
  EXPECT_EQ(cut.body, std::string(1'000, 'e'));
  EXPECT_TRUE(cut.truncated);

  request.path = "/big";
  request.max_body_bytes = 4'096;
  const net_error e = failure_of([&] { run(client.request(request)); });
  EXPECT_EQ(e.errc(), net_errc::response_too_large);
  EXPECT_EQ(e.reason(), "response body exceeds the limit of 4096 bytes");
  EXPECT_NE(std::string(e.what()).find("svc: GET http://127.0.0.1:"), std::string::npos) << e.what();
}

TEST(HttpRequest, RetryScopesDecideWhatIsSentAgain) {
  // Each path answers 503 (Retry-After: 0) once, then 200.
  std::mutex mutex;
  std::map<std::string, int> seen;
  test_server server([&](server_request& r, int) -> asio::awaitable<server_response> {
    int count = 0;
    {
      std::lock_guard lock(mutex);
      count = ++seen[r.path];
    }
    if (count == 1) co_return reply(503, R"({"detail":"busy"})", {{"Retry-After", "0"}});
    co_return reply(200, R"({"ok":true})");
  });
  http_client client(options_for(server), "svc");
  http_request request;
  request.method = http_method::post;
  request.body = "{}";
  request.path = "/transient";
  EXPECT_EQ(run(client.request(request)).status, 200);
  request.path = "/unprocessed";
  request.retry = retry_scope::unprocessed;  // a 503 was not acted on
  EXPECT_EQ(run(client.request(request)).status, 200);
  request.path = "/none";
  request.retry = retry_scope::none;
  const http_result first = run(client.request(request));
  EXPECT_EQ(first.status, 503);
  EXPECT_EQ(first.body, R"({"detail":"busy"})");
  std::lock_guard lock(mutex);
  EXPECT_EQ(seen["/api/transient"], 2);
  EXPECT_EQ(seen["/api/unprocessed"], 2);
  EXPECT_EQ(seen["/api/none"], 1);
}

TEST(HttpRequest, TheLastRetriedStatusIsReturnedWhenNoAttemptIsLeft) {
  test_server server([](server_request&, int) -> asio::awaitable<server_response> {
    co_return reply(502, "bad gateway");
  });
  http_client client(options_for(server), "svc");
  request_budget budget;
  budget.max_attempts = 2;
  http_request request;
  request.budget = &budget;
  const http_result result = run(client.request(request));
  EXPECT_EQ(result.status, 502);
  EXPECT_EQ(result.body, "bad gateway");
  EXPECT_EQ(budget.attempts, 2);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(HttpRequest, AConnectionLostAfterTheRequestWasSentIsNotSentAgainUnlessTransient) {
  test_server server([](server_request&, int) -> asio::awaitable<server_response> {
    server_response r;
    r.raw = [](raw_connection& c) -> asio::awaitable<bool> {
      co_await c.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cut");
      c.reset();
      co_return false;
    };
    co_return r;
  });
  http_client client(options_for(server), "svc");
  http_request request;
  request.method = http_method::post;
  request.body = R"({"start":"work"})";
  request.retry = retry_scope::unprocessed;
  const net_error e = failure_of([&] { run(client.request(request)); });
  EXPECT_EQ(e.errc(), net_errc::connection_lost);
  EXPECT_TRUE(e.retryable()) << "transient in itself, but not sent again";
  EXPECT_EQ(e.reason().rfind("connection lost mid-response", 0), 0u) << e.reason();
  EXPECT_EQ(server.requests().size(), 1u);

  request.retry = retry_scope::transient;
  failure_of([&] { run(client.request(request)); });
  EXPECT_EQ(server.requests().size(), 1u + 3u);  // the policy's three attempts
}

TEST(HttpRequest, AnUnreachableServerIsRetriedUnderUnprocessedAndTheReasonSaysSo) {
  std::uint16_t port = 0;
  {
    test_server gone([](server_request&, int) -> asio::awaitable<server_response> { co_return reply(200, "{}"); });
    port = gone.port();
  }
  http_options options;
  options.base_url = "http://127.0.0.1:" + std::to_string(port);
  options.retry.initial_backoff = 1ms;
  options.retry.jitter = 0;
  http_client client(options, "svc");
  http_request request;
  request.method = http_method::post;
  request.body = "{}";
  request.retry = retry_scope::unprocessed;
  const net_error e = failure_of([&] { run(client.request(request)); });
  EXPECT_EQ(e.errc(), net_errc::connect_failed);
  EXPECT_EQ(e.reason().rfind("connect to 127.0.0.1:" + std::to_string(port) + " failed", 0), 0u) << e.reason();
  EXPECT_NE(e.reason().find("(after 3 attempts, the most allowed)"), std::string::npos) << e.reason();
  EXPECT_EQ(e.reason().find("svc:"), std::string::npos) << "the reason names no provider: " << e.reason();
}

TEST(HttpRequest, AnEventStreamOnGetGoesToTheStreamWithItsHeadFirst) {
  test_server server([](server_request& r, int) -> asio::awaitable<server_response> {
    server_response response;
    response.headers = {{"Content-Type", "text/event-stream"}, {"X-Stream", "s-1"}};
    const std::string from = std::string(r.header("last-event-id").value_or("none"));
    response.stream = [from](response_stream& out) -> asio::awaitable<void> {
      co_await out.write("id: 4\ndata: after " + from + "\n\n");
      co_await out.write("data: second\n\n");
    };
    co_return response;
  });
  http_client client(options_for(server), "svc");
  const std::array<http_header, 2> headers{{{"Accept", "text/event-stream", false}, {"Last-Event-ID", "3", false}}};
  const std::array<std::string_view, 1> wanted{"x-stream"};
  recording_stream stream;
  http_request request;
  request.path = "/events";
  request.headers = headers;
  request.response_headers = wanted;
  request.stream = &stream;
  const http_result result = run(client.request(request));
  EXPECT_EQ(result.status, 200);
  EXPECT_TRUE(result.streamed);
  EXPECT_TRUE(result.body.empty());
  ASSERT_EQ(result.headers.size(), 1u);
  EXPECT_EQ(result.header("x-stream"), "s-1");
  EXPECT_EQ(stream.status, 200);
  ASSERT_EQ(stream.headers.size(), 1u);
  EXPECT_EQ(stream.headers[0].name, "x-stream");
  EXPECT_EQ(stream.begun, 1);
  EXPECT_EQ(stream.received, "id: 4\ndata: after 3\n\ndata: second\n\n");
  EXPECT_TRUE(stream.ended);
  EXPECT_EQ(server.requests().at(0).header("accept"), "text/event-stream");
}

TEST(HttpRequest, AStreamThatHasItsAnswerEndsTheRequestThoughTheServerKeepsSending) {
  test_server server([](server_request&, int) -> asio::awaitable<server_response> {
    server_response response;
    response.headers = {{"Content-Type", "text/event-stream"}};
    response.stream = [](response_stream& out) -> asio::awaitable<void> {
      co_await out.write("data: the answer\n\n");
      // Then keep-alive comments for as long as the client listens.
      asio::steady_timer timer(co_await asio::this_coro::executor);
      for (int i = 0; i < 600; ++i) {
        if (!co_await out.write(": ping\n\n")) co_return;
        timer.expires_after(50ms);
        co_await timer.async_wait(asio::use_awaitable);
      }
    };
    co_return response;
  });
  http_client client(options_for(server), "svc");
  recording_stream stream;
  stream.stop_after = "the answer";
  http_request request;
  request.path = "/events";
  request.stream = &stream;
  const http_result result = run(client.request(request));
  EXPECT_TRUE(result.streamed);
  EXPECT_EQ(result.status, 200);
  EXPECT_FALSE(stream.ended) << "end() is not called when the reader stopped";
  EXPECT_NE(stream.received.find("the answer"), std::string::npos);
}

TEST(HttpRequest, CancellingAStreamInProgressEndsItAsCancelled) {
  test_server server([](server_request&, int) -> asio::awaitable<server_response> {
    server_response response;
    response.headers = {{"Content-Type", "text/event-stream"}};
    response.stream = [](response_stream& out) -> asio::awaitable<void> {
      co_await out.write("data: first\n\n");
      asio::steady_timer timer(co_await asio::this_coro::executor, 60s);  // then silence
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    };
    co_return response;
  });
  http_client client(options_for(server), "svc");
  recording_stream stream;
  http_request request;
  request.path = "/events";
  request.stream = &stream;
  asio::io_context io;
  asio::cancellation_signal signal;
  std::exception_ptr error;
  bool done = false;
  asio::co_spawn(io, client.request(request),
                 asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, http_result) {
                   error = e;
                   done = true;
                 }));
  // Cancel once the first event is in.
  asio::steady_timer poll(io);
  std::function<void()> check = [&] {
    if (stream.received.empty()) {
      poll.expires_after(5ms);
      poll.async_wait([&](boost::system::error_code) { check(); });
      return;
    }
    signal.emit(asio::cancellation_type::terminal);
  };
  check();
  io.run();
  ASSERT_TRUE(done);
  ASSERT_TRUE(error);
  const net_error e = failure_of([&] { std::rethrow_exception(error); });
  EXPECT_EQ(e.errc(), net_errc::cancelled);
  EXPECT_EQ(stream.received, "data: first\n\n");
}

TEST(HttpRequest, HeadersTheClientWritesItselfAreRefused) {
  test_server server([](server_request&, int) -> asio::awaitable<server_response> { co_return reply(200, "{}"); });
  http_client client(options_for(server), "svc");
  const std::array<http_header, 1> headers{{{"Content-Length", "0", false}}};
  http_request request;
  request.headers = headers;
  const net_error e = failure_of([&] { run(client.request(request)); });
  EXPECT_EQ(e.errc(), net_errc::invalid_options);
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpRequest, SecretHeadersAreRedactedFromReasons) {
  test_server server([](server_request& r, int) -> asio::awaitable<server_response> {
    server_response response;
    const std::string echoed = std::string(r.header("authorization").value_or(""));
    // Not HTTP: the error quotes how the answer starts.
    response.raw = [echoed](raw_connection& c) -> asio::awaitable<bool> {
      co_await c.write("HTTX " + echoed + "\r\n\r\n");
      co_return false;
    };
    co_return response;
  });
  http_client client(options_for(server), "svc");
  const std::array<http_header, 1> headers{{{"Authorization", "Bearer tok-SECRET-123456", true}}};
  http_request request;
  request.headers = headers;
  request.retry = retry_scope::none;
  const net_error e = failure_of([&] { run(client.request(request)); });
  EXPECT_EQ(e.errc(), net_errc::invalid_response) << e.what();
  EXPECT_NE(e.reason().find("[redacted]"), std::string::npos) << e.reason();
  EXPECT_EQ(std::string(e.what()).find("SECRET"), std::string::npos) << e.what();
  EXPECT_EQ(e.reason().find("SECRET"), std::string::npos) << e.reason();
}

TEST(HttpMethod, NamesEveryMethod) {
  EXPECT_EQ(to_string(http_method::get), "GET");
  EXPECT_EQ(to_string(http_method::post), "POST");
  EXPECT_EQ(to_string(http_method::put), "PUT");
  EXPECT_EQ(to_string(http_method::patch), "PATCH");
  EXPECT_EQ(to_string(http_method::delete_), "DELETE");
}

}  // namespace
}  // namespace switchboard::net
