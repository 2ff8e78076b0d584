// The Streamable HTTP transport against a scripted MCP server in this
// process, on the network layer's own HTTP server (net/http_server.hpp):
// the session's headers and DELETE on close, SSE answers with what comes
// before them, Retry-After, resumes with Last-Event-ID and their limit,
// session ids and expiry, error statuses, cancellation, TLS verification,
// and hostile servers that stall, truncate or flood. Every error is an
// mcp_error naming the server.
#include <switchboard/mcp/client.hpp>

#include <switchboard/net/http_server.hpp>
#include <switchboard/testing/temp_dir.hpp>

#include "../support/src/self_signed_certificate.hpp"
#include "mcp_peers.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace net = switchboard::net;
namespace sbm = switchboard::mcp;
using namespace std::chrono_literals;
using switchboard::test::mcp::run;

using response_hook = std::function<asio::awaitable<std::optional<net::server_response>>(
    net::server_request&, const json::object& message, int nth)>;

net::server_response json_answer(const json::value& id, json::object result,
                                 std::vector<std::pair<std::string, std::string>> headers = {}) {
  net::server_response r;
  r.headers = std::move(headers);
  r.body = json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  return r;
}

net::server_response status_answer(int status, std::string body,
                                   std::vector<std::pair<std::string, std::string>> headers = {}) {
  net::server_response r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  r.headers.emplace_back("Content-Type", "text/plain");
  return r;
}

std::string event(const json::value& message, std::string_view id = {}) {
  std::string out;
  if (!id.empty()) out += "id: " + std::string(id) + "\n";
  return out + "data: " + json::serialize(message) + "\n\n";
}

json::object text_result(std::string_view text) {
  return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
}

// An MCP server over Streamable HTTP on its own thread: initialize (session
// "s-1"), ping, tools/list and notifications as the spec says; `hook` may
// answer any request first (it gets the request, its JSON-RPC message and
// how many requests of that method came so far, this one included).
class scripted_server {
 public:
  explicit scripted_server(response_hook hook = {}, net::server_options options = {})
      : hook_(std::move(hook)),
        tls_(!options.tls_certificate_file.empty()),
        server_(io_.get_executor(), std::move(options), [this](net::server_request& r) { return handle(r); }) {
    server_.start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~scripted_server() {
    server_.stop();
    work_.reset();
    io_.stop();
    thread_.join();
  }

  std::string url() const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(server_.port()) + "/mcp";
  }
  std::vector<net::server_request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  // The requests with this HTTP method, or with this JSON-RPC method.
  std::vector<net::server_request> requests(std::string_view method) const {
    std::vector<net::server_request> out;
    for (auto& r : requests()) {
      if (r.method == method) {
        out.push_back(r);
        continue;
      }
      boost::system::error_code ec;
      const auto v = json::parse(r.body, ec);
      const json::string_view wanted(method.data(), method.size());
      if (!ec && v.is_object() && v.as_object().contains("method") && v.at("method") == wanted) {
        out.push_back(r);
      }
    }
    return out;
  }

 private:
  asio::awaitable<net::server_response> handle(net::server_request& r) {
    int nth = 0;
    json::object message;
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(r);
    }
    if (r.method == "DELETE") co_return status_answer(200, "");
    if (r.method == "GET") {
      if (hook_) {
        if (auto answer = co_await hook_(r, message, 0)) co_return std::move(*answer);
      }
      co_return status_answer(405, "no stream here");
    }
    boost::system::error_code ec;
    auto parsed = json::parse(r.body, ec);
    if (ec || !parsed.is_object()) co_return status_answer(400, "not JSON");
    message = std::move(parsed.as_object());
    const auto* method = message.if_contains("method");
    const auto* id = message.if_contains("id");
    if (!method || !id) co_return status_answer(202, "");  // a notification or a response
    const std::string name(method->as_string());
    {
      std::lock_guard lock(mutex_);
      nth = ++counts_[name];
    }
    if (hook_) {
      if (auto answer = co_await hook_(r, message, nth)) co_return std::move(*answer);
    }
    if (name == "initialize") {
      co_return json_answer(*id,
                            json::object{{"protocolVersion", "2025-11-25"},
                                         {"capabilities", json::object{}},
                                         {"serverInfo", json::object{{"name", "scripted"}, {"version", "1"}}}},
                            {{"Mcp-Session-Id", "s-1"}});
    }
    if (name == "ping") co_return json_answer(*id, json::object{});
    if (name == "tools/list") {
      co_return json_answer(*id, json::object{{"tools", json::array{json::object{
                                                            {"name", "t"},
                                                            {"inputSchema", json::object{{"type", "object"}}}}}}});
    }
    net::server_response r2;
    r2.body = json::serialize(json::object{
        {"jsonrpc", "2.0"}, {"id", *id}, {"error", json::object{{"code", -32601}, {"message", "no such method"}}}});
    co_return r2;
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  response_hook hook_;
  bool tls_;
  net::http_server server_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<net::server_request> requests_;
  std::map<std::string, int> counts_;
};

sbm::server_config config_for(const scripted_server& server) {
  sbm::server_config c;
  c.name = "scripted";
  c.url = server.url();
  c.request_timeout = 5s;
  return c;
}

template <class F>
using body_result = typename std::invoke_result_t<F, sbm::client&>::value_type;

// Connects, runs `body` with the client, closes; rethrows what body threw.
template <class F>
body_result<F> with_client(sbm::server_config config, F body) {
  return run([](sbm::server_config config, F body) -> asio::awaitable<body_result<F>> {
    auto client = co_await sbm::client::connect(std::move(config));
    std::exception_ptr error;
    std::optional<body_result<F>> out;
    try {
      out.emplace(co_await body(*client));
    } catch (...) {
      error = std::current_exception();
    }
    co_await client->close();
    if (error) std::rethrow_exception(error);
    co_return std::move(*out);
  }(std::move(config), std::move(body)));
}

template <class F>
sbm::mcp_error error_of(F f) {
  try {
    f();
  } catch (const sbm::mcp_error& e) {
    return e;
  }
  ADD_FAILURE() << "no mcp_error";
  return sbm::mcp_error(sbm::mcp_errc::closed, "none");
}

// The mcp_error of calling `tool` on a server scripted by `hook`.
sbm::mcp_error call_error(response_hook hook, std::string tool = "t",
                          std::chrono::milliseconds timeout = 5s) {
  scripted_server server(std::move(hook));
  auto config = config_for(server);
  config.request_timeout = timeout;
  return error_of([&] {
    with_client(config, [&](sbm::client& c) -> asio::awaitable<bool> {
      co_await c.call_tool(tool, json::object{});
      co_return true;
    });
  });
}

bool is_call(const json::object& message) { return message.at("method") == "tools/call"; }

// Waits, without blocking the client's io_context, until `ready` (at most
// 20 s: a bound on a hang, not a measurement).
template <class F>
asio::awaitable<bool> eventually(F ready) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (int i = 0; i < 2'000; ++i) {
    if (ready()) co_return true;
    timer.expires_after(10ms);
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_return ready();
}

TEST(McpHttpTransport, SendsTheSessionsHeadersAndDeletesTheSessionOnClose) {
  scripted_server server;
  with_client(config_for(server), [&server](sbm::client& c) -> asio::awaitable<bool> {
    co_await c.ping();
    // notifications/initialized travels on an exchange of its own.
    EXPECT_TRUE(co_await eventually([&] { return !server.requests("notifications/initialized").empty(); }));
    co_return true;
  });
  const auto all = server.requests();
  ASSERT_GE(all.size(), 4u);
  const auto& initialize = all.front();
  EXPECT_EQ(initialize.method, "POST");
  EXPECT_EQ(initialize.target, "/mcp");
  EXPECT_EQ(initialize.header("accept"), "application/json, text/event-stream");
  EXPECT_EQ(initialize.header("content-type"), "application/json");
  EXPECT_FALSE(initialize.header("mcp-session-id"));
  const auto pings = server.requests("ping");
  ASSERT_EQ(pings.size(), 1u);
  EXPECT_EQ(pings[0].header("mcp-session-id"), "s-1");
  EXPECT_EQ(pings[0].header("mcp-protocol-version"), "2025-11-25");
  ASSERT_EQ(server.requests("notifications/initialized").size(), 1u);
  const auto deletes = server.requests("DELETE");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].header("mcp-session-id"), "s-1");
  EXPECT_EQ(all.back().method, "DELETE");
}

TEST(McpHttpTransport, AnSseAnswerDeliversWhatComesBeforeItAndEndsTheExchangeOnceAnswered) {
  scripted_server server([](net::server_request&, const json::object& m,
                            int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    net::server_response r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    const json::value id = m.at("id");
    // (The events are made before any co_await: g++ 12 mishandles
    // initializer lists inside a co_await expression.)
    const std::string events =
        ": a comment first\n\n" +
        event(json::object{{"jsonrpc", "2.0"},
                           {"method", "notifications/progress"},
                           {"params", json::object{{"progressToken", id}, {"progress", 1}}}}) +
        event(json::object{{"jsonrpc", "2.0"}, {"id", "s1"}, {"method", "ping"}}) +
        event(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", text_result("streamed")}});
    r.stream = [events](net::response_stream& out) -> asio::awaitable<void> {
      co_await out.write(events);
      // The stream stays open: the client has its answer and stops reading.
      asio::steady_timer timer(co_await asio::this_coro::executor);
      for (int i = 0; i < 1200; ++i) {
        if (!co_await out.write(": still here\n\n")) co_return;
        timer.expires_after(50ms);
        co_await timer.async_wait(asio::use_awaitable);
      }
    };
    co_return r;
  });
  const auto text = with_client(config_for(server), [&server](sbm::client& c) -> asio::awaitable<std::string> {
    auto result = co_await c.call_tool("t", json::object{});
    // The server's ping is answered with a POST of its own (before close(),
    // which ends every exchange still in flight).
    EXPECT_TRUE(co_await eventually([&] {
      for (const auto& r : server.requests("POST"))
        if (r.body.find("\"s1\"") != std::string::npos && r.body.find("result") != std::string::npos) return true;
      return false;
    }));
    co_return result.text;
  });
  EXPECT_EQ(text, "streamed");
}

TEST(McpHttpTransport, A503WithRetryAfterIsRetriedAndALongRetryAfterIsNotWaitedFor) {
  scripted_server server([](net::server_request&, const json::object& m,
                            int nth) -> asio::awaitable<std::optional<net::server_response>> {
    if (m.at("method") == "ping" && nth == 1) co_return status_answer(503, "busy", {{"Retry-After", "0"}});
    if (is_call(m)) co_return status_answer(429, "slow down", {{"Retry-After", "3600"}});
    co_return std::nullopt;
  });
  const auto e = error_of([&] {
    with_client(config_for(server), [](sbm::client& c) -> asio::awaitable<bool> {
      co_await c.ping();  // answered on the second attempt
      co_await c.call_tool("t", json::object{});
      co_return true;
    });
  });
  EXPECT_EQ(server.requests("ping").size(), 2u);
  EXPECT_EQ(server.requests("tools/call").size(), 1u);
  EXPECT_EQ(e.errc(), sbm::mcp_errc::http_status) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': HTTP 429: 'slow down'"), std::string::npos) << e.what();
}

// An event stream that breaks after one event with an id, on the POST and
// on every GET that resumes it.
response_hook breaking_streams() {
  return [](net::server_request& r, const json::object& m,
            int) -> asio::awaitable<std::optional<net::server_response>> {
    if (r.method == "POST" && !is_call(m)) co_return std::nullopt;
    net::server_response answer;
    // "e1" on the POST, then one more on each GET: "e2", "e3", ...
    const auto last = r.header("last-event-id");
    const std::string next = "e" + std::to_string(last ? std::stoi(std::string(last->substr(1))) + 1 : 1);
    const std::string bytes = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nretry: 1\n" +
                              event(json::object{{"jsonrpc", "2.0"},
                                                 {"method", "notifications/message"},
                                                 {"params", json::object{{"level", "info"}, {"data", next}}}},
                                    next);
    answer.raw = [bytes](net::raw_connection& c) -> asio::awaitable<bool> {
      co_await c.write(bytes);
      c.reset();
      co_return false;
    };
    co_return answer;
  };
}

TEST(McpHttpTransport, ABrokenStreamIsResumedWithLastEventIdAtMostThreeTimes) {
  scripted_server server(breaking_streams());
  const auto e = error_of([&] {
    with_client(config_for(server), [](sbm::client& c) -> asio::awaitable<bool> {
      co_await c.call_tool("t", json::object{});
      co_return true;
    });
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::connection_lost) << e.what();
  EXPECT_NE(std::string(e.what()).find(
                "MCP server 'scripted': the response stream ended before the answer (resumed 3 times)"),
            std::string::npos)
      << e.what();
  const auto gets = server.requests("GET");
  ASSERT_EQ(gets.size(), 3u);
  EXPECT_EQ(gets[0].header("last-event-id"), "e1");
  EXPECT_EQ(gets[1].header("last-event-id"), "e2");
  EXPECT_EQ(gets[2].header("last-event-id"), "e3");
  EXPECT_EQ(gets[0].header("accept"), "text/event-stream");
  EXPECT_EQ(gets[0].header("mcp-session-id"), "s-1");
}

TEST(McpHttpTransport, AnInvalidSessionIdIsRefused) {
  scripted_server server([](net::server_request&, const json::object& m,
                            int) -> asio::awaitable<std::optional<net::server_response>> {
    if (m.at("method") != "initialize") co_return std::nullopt;
    co_return json_answer(m.at("id"), json::object{{"protocolVersion", "2025-11-25"}},
                          {{"Mcp-Session-Id", "has space"}});
  });
  const auto e = error_of([&] {
    with_client(config_for(server), [](sbm::client&) -> asio::awaitable<bool> { co_return true; });
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::protocol_error) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': sent an invalid Mcp-Session-Id 'has space'"),
            std::string::npos)
      << e.what();
}

TEST(McpHttpTransport, A404AfterTheSessionBeganMeansItExpired) {
  const auto e = call_error([](net::server_request&, const json::object& m,
                               int) -> asio::awaitable<std::optional<net::server_response>> {
    if (is_call(m)) co_return status_answer(404, "unknown session");
    co_return std::nullopt;
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::session_expired) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': the session expired (HTTP 404)"), std::string::npos);
}

TEST(McpHttpTransport, AnErrorStatusQuotesItsBodyWithTheConfiguredHeadersRedacted) {
  scripted_server server([](net::server_request& r, const json::object& m,
                            int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    co_return status_answer(500, "you sent " + std::string(r.header("authorization").value_or("nothing")));
  });
  auto config = config_for(server);
  config.headers["Authorization"] = "Bearer mcp-SECRET-token-12345";
  const auto e = error_of([&] {
    with_client(config, [](sbm::client& c) -> asio::awaitable<bool> {
      co_await c.call_tool("t", json::object{});
      co_return true;
    });
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::http_status) << e.what();
  const std::string what = e.what();
  EXPECT_NE(what.find("MCP server 'scripted': HTTP 500: 'you sent "), std::string::npos) << what;
  EXPECT_NE(what.find("[redacted]"), std::string::npos) << what;
  EXPECT_EQ(what.find("SECRET"), std::string::npos) << what;
  // The header went with every request.
  EXPECT_EQ(server.requests("tools/call").at(0).header("authorization"), "Bearer mcp-SECRET-token-12345");
}

TEST(McpHttpTransport, CancellingACallOverHttpTellsTheServerAndKeepsTheSession) {
  scripted_server server([](net::server_request&, const json::object& m,
                            int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    asio::steady_timer never(co_await asio::this_coro::executor, 10min);
    co_await never.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return std::nullopt;
  });
  const bool aborted = with_client(config_for(server), [&server](sbm::client& c) -> asio::awaitable<bool> {
    asio::cancellation_signal signal;
    bool aborted = false;
    bool done = false;
    asio::co_spawn(co_await asio::this_coro::executor, c.call_tool("t", json::object{}),
                   asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, sbm::call_result) {
                     done = true;
                     try {
                       if (e) std::rethrow_exception(e);
                     } catch (const boost::system::system_error& err) {
                       aborted = err.code() == asio::error::operation_aborted;
                     }
                   }));
    asio::steady_timer timer(co_await asio::this_coro::executor, 100ms);
    co_await timer.async_wait(asio::use_awaitable);
    signal.emit(asio::cancellation_type::terminal);
    while (!done) {
      timer.expires_after(10ms);
      co_await timer.async_wait(asio::use_awaitable);
    }
    co_await c.ping();  // the session goes on
    EXPECT_TRUE(co_await eventually([&] { return !server.requests("notifications/cancelled").empty(); }));
    co_return aborted;
  });
  EXPECT_TRUE(aborted);
  const auto cancelled = server.requests("notifications/cancelled");
  ASSERT_EQ(cancelled.size(), 1u);
  EXPECT_EQ(json::parse(cancelled[0].body).at("params").at("requestId"), 2);
}

TEST(McpHttpTransport, TlsIsVerifiedUnlessTurnedOff) {
  switchboard::testing::temp_dir dir("mcp-tls");
  const auto certificate = switchboard::testing::detail::make_self_signed_certificate({"127.0.0.1"});
  net::server_options options;
  options.tls_certificate_file = dir.write("cert.pem", certificate.certificate_pem).string();
  options.tls_private_key_file = dir.write("key.pem", certificate.private_key_pem).string();
  scripted_server server({}, options);
  auto config = config_for(server);
  ASSERT_EQ(config.url.rfind("https://", 0), 0u);
  const auto e = error_of([&] {
    with_client(config, [](sbm::client&) -> asio::awaitable<bool> { co_return true; });
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::connect_failed) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': cannot connect"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("TLS verification"), std::string::npos) << e.what();
  EXPECT_TRUE(server.requests().empty()) << "nothing is sent to an unverified server";

  config.verify_peer = false;
  const auto tools = with_client(config, [](sbm::client& c) -> asio::awaitable<std::size_t> {
    co_return (co_await c.list_tools()).size();
  });
  EXPECT_EQ(tools, 1u);
}

// ---------------------------------------------------------------- hostile servers

TEST(McpHttpHostile, AServerThatStallsIsTimedOutAndTheSessionGoesOn) {
  scripted_server server([](net::server_request&, const json::object& m,
                            int nth) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m) || nth > 1) co_return std::nullopt;
    asio::steady_timer never(co_await asio::this_coro::executor, 10min);
    co_await never.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return std::nullopt;
  });
  auto config = config_for(server);
  config.request_timeout = 1s;
  const auto e = error_of([&] {
    with_client(config, [](sbm::client& c) -> asio::awaitable<bool> {
      std::exception_ptr first;
      try {
        co_await c.call_tool("t", json::object{});
      } catch (const sbm::mcp_error&) {
        first = std::current_exception();
      }
      co_await c.ping();  // the stalled exchange is gone, the session is not
      if (first) std::rethrow_exception(first);
      co_return true;
    });
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::timeout) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': tools/call timed out after 1000 ms"), std::string::npos)
      << e.what();
}

TEST(McpHttpHostile, ATruncatedAnswerIsAConnectionLost) {
  const auto e = call_error([](net::server_request&, const json::object& m,
                               int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    net::server_response r;
    r.raw = [](net::raw_connection& c) -> asio::awaitable<bool> {
      co_await c.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"");
      co_return false;  // closed here
    };
    co_return r;
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::connection_lost) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': reading the response failed"), std::string::npos)
      << e.what();
}

TEST(McpHttpHostile, AJsonAnswerOverTheLimitIsTooLarge) {
  const auto e = call_error([](net::server_request&, const json::object& m,
                               int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    co_return json_answer(m.at("id"), text_result(std::string(5 << 20, 'x')));
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::message_too_large) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': sent a response over 4194304 bytes"), std::string::npos)
      << e.what();
}

TEST(McpHttpHostile, AnEventOverTheLimitIsTooLarge) {
  const auto e = call_error([](net::server_request&, const json::object& m,
                               int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    net::server_response r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    r.stream = [](net::response_stream& out) -> asio::awaitable<void> {
      const std::string piece(64 * 1024, 'x');
      co_await out.write("data: ");
      for (int i = 0; i < 80; ++i)  // 5 MiB in one event, and no end
        if (!co_await out.write(piece)) co_return;
    };
    co_return r;
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::message_too_large) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': sent an event over 4194304 bytes"), std::string::npos)
      << e.what();
}

TEST(McpHttpHostile, AFloodOfHeadersIsAProtocolError) {
  const auto e = call_error([](net::server_request&, const json::object& m,
                               int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    net::server_response r;
    r.raw = [](net::raw_connection& c) -> asio::awaitable<bool> {
      std::string head = "HTTP/1.1 200 OK\r\n";
      for (int i = 0; i < 5'000; ++i) head += "X-Flood-" + std::to_string(i) + ": yes\r\n";
      co_await c.write(head);
      co_return false;
    };
    co_return r;
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::protocol_error) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': malformed HTTP response"), std::string::npos)
      << e.what();
}

TEST(McpHttpHostile, AFloodOfEventsIsReadAndTheAnswerAfterItArrives) {
  scripted_server server([](net::server_request&, const json::object& m,
                            int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    net::server_response r;
    r.headers = {{"Content-Type", "text/event-stream"}};
    const json::value id = m.at("id");
    const std::string answer =
        event(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", text_result("after the flood")}});
    r.stream = [answer](net::response_stream& out) -> asio::awaitable<void> {
      std::string batch;
      for (int i = 0; i < 2'000; ++i) {
        batch += event(json::object{{"jsonrpc", "2.0"},
                                    {"method", "notifications/message"},
                                    {"params", json::object{{"level", "debug"}, {"data", i}}}});
        if (batch.size() > 16 * 1024) {
          if (!co_await out.write(batch)) co_return;
          batch.clear();
        }
      }
      batch += answer;
      co_await out.write(batch);
    };
    co_return r;
  });
  const auto text = with_client(config_for(server), [](sbm::client& c) -> asio::awaitable<std::string> {
    co_return (co_await c.call_tool("t", json::object{})).text;
  });
  EXPECT_EQ(text, "after the flood");
}

TEST(McpHttpHostile, AHugeErrorBodyIsCutAndQuoted) {
  const auto e = call_error([](net::server_request&, const json::object& m,
                               int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    co_return status_answer(500, std::string(8 << 20, 'e'));
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::http_status) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': HTTP 500: 'eeee"), std::string::npos) << e.what();
  EXPECT_LT(std::string(e.what()).size(), 1'000u) << "a short excerpt";
}

TEST(McpHttpHostile, AnAnswerThatIsNeitherJsonNorAStreamIsAProtocolError) {
  const auto e = call_error([](net::server_request&, const json::object& m,
                               int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(m)) co_return std::nullopt;
    net::server_response r;
    r.headers = {{"Content-Type", "text/html"}};
    r.body = "<html>login</html>";
    co_return r;
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::protocol_error) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'scripted': answered with Content-Type 'text/html'"),
            std::string::npos)
      << e.what();
}

}  // namespace

// Tracing: a call made under a trace context names it (W3C traceparent and
// tracestate), so the server's spans join the run's trace under the
// execute_tool span; the session's other requests and untraced calls carry
// none.
TEST(McpHttpTransport, ACallWithATraceContextSendsItAsTraceparentAndOnlyThatCall) {
  scripted_server server([](net::server_request&, const json::object& message, int) -> asio::awaitable<std::optional<net::server_response>> {
    if (!is_call(message)) co_return std::nullopt;
    co_return json_answer(message.at("id"), text_result("done"));
  });
  switchboard::telemetry::span_context trace;
  for (std::uint8_t i = 0; i < 16; ++i) trace.trace_id.bytes[i] = static_cast<std::uint8_t>(0xa0 + i);
  for (std::uint8_t i = 0; i < 8; ++i) trace.span_id.bytes[i] = static_cast<std::uint8_t>(0x10 + i);
  trace.trace_flags = switchboard::telemetry::sampled_flag;
  trace.trace_state = "vendor=abc";
  with_client(config_for(server), [&](sbm::client& c) -> asio::awaitable<bool> {
    auto traced = c.call_tool("t", json::object{}, trace);
    co_await std::move(traced);
    auto untraced = c.call_tool("t", json::object{});
    co_await std::move(untraced);
    co_return true;
  });
  const auto calls = server.requests("tools/call");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].header("traceparent"), "00-a0a1a2a3a4a5a6a7a8a9aaabacadaeaf-1011121314151617-01");
  EXPECT_EQ(calls[0].header("tracestate"), "vendor=abc");
  EXPECT_FALSE(calls[1].header("traceparent"));
  EXPECT_FALSE(calls[1].header("tracestate"));
  for (const auto& r : server.requests("initialize")) EXPECT_FALSE(r.header("traceparent"));
  for (const auto& r : server.requests("tools/list")) EXPECT_FALSE(r.header("traceparent"));
}
