// The Streamable HTTP transport against a scripted MCP server in this
// process, on the network layer's own HTTP server (net/http_server.hpp):
// the session's headers and DELETE on close, SSE answers with what comes
// before them, Retry-After, resumes with Last-Event-ID and their limit,
// session ids and expiry, error statuses, cancellation, TLS verification
// (hostile servers: http_transport_hostile_test.cpp). Every error is an
// mcp_error naming the server.
#include "scripted_mcp_server.hpp"

#include "../support/src/self_signed_certificate.hpp"

namespace {

using namespace switchboard::test::mcp_http;

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
