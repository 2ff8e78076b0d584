// The Streamable HTTP transport against hostile MCP servers: one that
// stalls, truncates its answer, sends one too large, floods headers or
// events, or answers with neither JSON nor a stream. Every failure is an
// mcp_error naming the server, and the session goes on where it can.
#include "scripted_mcp_server.hpp"

namespace {

using namespace switchboard::test::mcp_http;

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
