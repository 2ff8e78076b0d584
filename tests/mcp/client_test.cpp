// The MCP client against real servers: the reference server
// (@modelcontextprotocol/server-everything) over stdio and Streamable HTTP,
// and misbehaving_server.mjs for every error path.
#include <switchboard/mcp/client.hpp>

#include <switchboard/testing/hang_guard.hpp>

#include "mcp_peers.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace sbm = switchboard::mcp;
using namespace switchboard::test::mcp;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

std::vector<std::string> names(const std::vector<sbm::tool_description>& tools) {
  std::vector<std::string> out;
  for (const auto& t : tools) out.push_back(t.name);
  return out;
}

template <class F>
using body_result = typename std::invoke_result_t<F, sbm::client&>::value_type;

template <class F>
asio::awaitable<body_result<F>> connected(sbm::server_config config, F body) {
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
}

// Connects, runs `body` with the client, closes; rethrows what body threw.
template <class F>
body_result<F> with_client(sbm::server_config config, F body) {
  return run(connected(std::move(config), std::move(body)));
}

// The mcp_error `f` throws (a failure when it throws none).
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

json::value object_arguments(std::string_view text) { return json::parse(text); }

TEST(McpEverything, StdioInitializesListsAndCallsTools) {
  require_peers();
  const auto result = with_client(everything_stdio(), [](sbm::client& c) -> asio::awaitable<std::string> {
    EXPECT_TRUE(c.protocol_version() == "2025-11-25" || c.protocol_version() == "2025-06-18") << c.protocol_version();
    EXPECT_FALSE(c.server_info().empty());
    const auto tools = co_await c.list_tools();
    const auto n = names(tools);
    EXPECT_NE(std::ranges::find(n, "echo"), n.end());
    EXPECT_NE(std::ranges::find(n, "get-sum"), n.end());
    const auto sum = std::ranges::find(tools, "get-sum", &sbm::tool_description::name);
    EXPECT_EQ(sum->read_only_hint, true);
    EXPECT_EQ(sum->idempotent_hint, true);
    EXPECT_EQ(sum->input_schema.at("type"), "object");
    const auto echoed = co_await c.call_tool("echo", object_arguments(R"({"message":"hello mcp"})"));
    EXPECT_FALSE(echoed.is_error);
    EXPECT_NE(echoed.text.find("hello mcp"), std::string::npos) << echoed.text;
    const auto structured =
        co_await c.call_tool("get-structured-content", object_arguments(R"({"location":"Chicago"})"));
    EXPECT_TRUE(structured.structured && structured.structured->as_object().contains("temperature"));
    const auto summed = co_await c.call_tool("get-sum", object_arguments(R"({"a":2,"b":40})"));
    co_return summed.text;
  });
  EXPECT_NE(result.find("42"), std::string::npos) << result;
  EXPECT_TRUE(no_children_left()) << "close() must stop and reap the server";
}

TEST(McpEverything, StdioNonTextContentIsSummarizedAndProgressIsAccepted) {
  require_peers();
  const auto text = with_client(everything_stdio(), [](sbm::client& c) -> asio::awaitable<std::string> {
    const auto image = co_await c.call_tool("get-tiny-image", json::object{});
    EXPECT_NE(image.text.find("[image image/png"), std::string::npos) << image.text;
    // Sends notifications/progress (our calls carry a progressToken).
    const auto done =
        co_await c.call_tool("trigger-long-running-operation", object_arguments(R"({"duration":1,"steps":4})"));
    co_return done.text;
  });
  EXPECT_NE(text.find("completed"), std::string::npos) << text;
}

TEST(McpEverything, StreamableHttpKeepsItsSessionAcrossRequests) {
  require_peers();
  everything_http server;
  ASSERT_TRUE(server.ready()) << "server-everything did not listen on " << server.port;
  sbm::server_config config;
  config.name = "remote";
  config.url = server.url();
  config.request_timeout = 20s;
  const auto text = with_client(config, [](sbm::client& c) -> asio::awaitable<std::string> {
    EXPECT_EQ(c.protocol_version(), "2025-11-25");
    const auto tools = co_await c.list_tools();
    EXPECT_GE(tools.size(), 5u);
    co_await c.ping();
    const auto first = co_await c.call_tool("get-sum", object_arguments(R"({"a":1,"b":2})"));
    EXPECT_NE(first.text.find("3"), std::string::npos);
    // Progress notifications arrive on the POST's SSE stream before the answer.
    const auto longer =
        co_await c.call_tool("trigger-long-running-operation", object_arguments(R"({"duration":1,"steps":3})"));
    EXPECT_NE(longer.text.find("completed"), std::string::npos) << longer.text;
    co_return (co_await c.call_tool("echo", object_arguments(R"({"message":"over http"})"))).text;
  });
  EXPECT_NE(text.find("over http"), std::string::npos) << text;
}

TEST(McpMisbehaving, ListsToolsAcrossPages) {
  require_peers();
  const auto n = with_client(misbehaving(), [](sbm::client& c) -> asio::awaitable<std::vector<std::string>> {
    co_return names(co_await c.list_tools());
  });
  EXPECT_EQ(n.size(), 12u);
  EXPECT_NE(std::ranges::find(n, "delete_all"), n.end());  // from the second page
}

TEST(McpMisbehaving, EndlessPagesAreCut) {
  require_peers();
  const auto e = error_of([] {
    with_client(misbehaving({"--endless-pages"}), [](sbm::client& c) -> asio::awaitable<bool> {
      co_await c.list_tools();
      co_return true;
    });
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::too_many_tools);
  EXPECT_NE(std::string(e.what()).find("MCP server 'bad'"), std::string::npos) << e.what();
}

TEST(McpMisbehaving, ASlowCallTimesOutAndTheServerIsToldItWasCancelled) {
  require_peers();
  auto config = misbehaving();
  // Every request of the session has this timeout: room for a Node server
  // on a loaded machine to initialize and answer the follow-up call, while
  // `slow` never answers at all.
  config.request_timeout = 3s;
  const auto seen = with_client(config, [](sbm::client& c) -> asio::awaitable<std::string> {
    try {
      co_await c.call_tool("slow", json::object{});
      ADD_FAILURE() << "slow answered";
    } catch (const sbm::mcp_error& e) {
      EXPECT_EQ(e.errc(), sbm::mcp_errc::timeout);
      EXPECT_NE(std::string(e.what()).find("MCP server 'bad': tools/call timed out after 3000 ms"), std::string::npos)
          << e.what();
    }
    co_return (co_await c.call_tool("cancelled", json::object{})).text;
  });
  EXPECT_EQ(seen, "[2]");  // request 1 was initialize, 2 the slow call
}

TEST(McpMisbehaving, CancellingTheAwaitingCoroutineSendsNotificationsCancelled) {
  require_peers();
  const auto seen = with_client(misbehaving(), [](sbm::client& c) -> asio::awaitable<std::string> {
    asio::cancellation_signal signal;
    asio::steady_timer timer(co_await asio::this_coro::executor, 100ms);
    bool aborted = false;
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, c.call_tool("slow", json::object{}),
                   asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, sbm::call_result) {
                     try {
                       if (e) std::rethrow_exception(e);
                     } catch (const boost::system::system_error& err) {
                       aborted = err.code() == asio::error::operation_aborted;
                     }
                   }));
    co_await timer.async_wait(asio::use_awaitable);
    signal.emit(asio::cancellation_type::terminal);
    timer.expires_after(100ms);
    co_await timer.async_wait(asio::use_awaitable);
    EXPECT_TRUE(aborted);
    co_return (co_await c.call_tool("cancelled", json::object{})).text;
  });
  EXPECT_EQ(seen, "[2]");
}

TEST(McpMisbehaving, AServerThatCrashesMidCallIsNamedWithItsExitStatusAndStderr) {
  require_peers();
  const auto e = error_of([] {
    with_client(misbehaving(), [](sbm::client& c) -> asio::awaitable<bool> {
      std::optional<sbm::mcp_error> first;
      try {
        co_await c.call_tool("crash", json::object{});
      } catch (const sbm::mcp_error& e) {
        first = e;
      }
      // Later requests fail with the same cause, not by waiting for their
      // timeout (which would be mcp_errc::timeout).
      try {
        co_await c.call_tool("echo", json::object{});
        ADD_FAILURE() << "a request after the crash succeeded";
      } catch (const sbm::mcp_error& again) {
        EXPECT_EQ(again.errc(), sbm::mcp_errc::connection_lost);
      }
      if (first) throw *first;
      co_return true;
    });
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::connection_lost);
  const std::string what = e.what();
  EXPECT_NE(what.find("MCP server 'bad': the server exited with status 3"), std::string::npos) << what;
  EXPECT_NE(what.find("crashing on purpose"), std::string::npos) << what;
  EXPECT_TRUE(no_children_left());
}

struct bad_output_case {
  const char* tool;
  sbm::mcp_errc code;
  const char* message;
};

class McpMisbehavingOutput : public testing::TestWithParam<bad_output_case> {};

TEST_P(McpMisbehavingOutput, IsAClearErrorNamingTheServer) {
  require_peers();
  const auto& param = GetParam();
  // Each fails at once with its own code: a client that waited for more
  // would end with mcp_errc::timeout instead.
  const auto e = error_of([&] {
    with_client(misbehaving(), [&](sbm::client& c) -> asio::awaitable<bool> {
      co_await c.call_tool(param.tool, json::object{});
      co_return true;
    });
  });
  EXPECT_EQ(e.errc(), param.code) << e.what();
  EXPECT_NE(std::string(e.what()).find(std::string("MCP server 'bad': ") + param.message), std::string::npos)
      << e.what();
  EXPECT_TRUE(no_children_left());
}

INSTANTIATE_TEST_SUITE_P(
    Stdio, McpMisbehavingOutput,
    testing::Values(bad_output_case{"garbage", sbm::mcp_errc::protocol_error, "sent invalid JSON"},
                    bad_output_case{"not_rpc", sbm::mcp_errc::protocol_error, "sent a message without \"jsonrpc\""},
                    bad_output_case{"huge", sbm::mcp_errc::message_too_large, "sent a message over 4194304 bytes"},
                    bad_output_case{"no_such_tool", sbm::mcp_errc::server_error, "tools/call failed"}),
    [](const auto& info) { return std::string(info.param.tool); });

TEST(McpMisbehaving, NotificationsAndServerRequestsAreHandled) {
  require_peers();
  const auto replies = with_client(misbehaving(), [](sbm::client& c) -> asio::awaitable<std::string> {
    EXPECT_EQ(names(co_await c.list_tools()).size(), 12u);
    const auto r = co_await c.call_tool("chatty", json::object{});
    // list_changed: the next use lists again and sees the new tool.
    const auto n = names(co_await c.list_tools());
    EXPECT_NE(std::ranges::find(n, "added"), n.end());
    co_return r.text;
  });
  const auto v = json::parse(replies);
  EXPECT_EQ(v.at("s1").at("error").at("code"), -32601) << replies;  // sampling refused
  EXPECT_TRUE(v.at("s2").at("result").is_object()) << replies;     // ping answered
}

TEST(McpMisbehaving, IsErrorIsAResultNotAnException) {
  require_peers();
  const auto r = with_client(misbehaving(), [](sbm::client& c) -> asio::awaitable<sbm::call_result> {
    co_return co_await c.call_tool("fails", json::object{});
  });
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(r.text, "the tool failed on purpose");
}

TEST(McpMisbehaving, TheOlderRevisionIsAcceptedAndOthersRefused) {
  require_peers();
  const auto v = with_client(misbehaving({"--version", "2025-06-18"}), [](sbm::client& c) -> asio::awaitable<std::string> {
    co_return c.protocol_version();
  });
  EXPECT_EQ(v, "2025-06-18");
  const auto e = error_of([] {
    with_client(misbehaving({"--version", "2024-11-05"}), [](sbm::client&) -> asio::awaitable<bool> { co_return true; });
  });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::unsupported_version);
  EXPECT_NE(std::string(e.what()).find("speaks protocol revision '2024-11-05'"), std::string::npos) << e.what();
  EXPECT_TRUE(no_children_left()) << "a refused server is stopped";
}

TEST(McpMisbehaving, AServerIgnoringSigtermIsKilledAfterTheGracePeriods) {
  require_peers();
  const switchboard::testing::hang_guard guard("a server ignoring SIGTERM is killed");
  const auto start = clock_type::now();
  with_client(misbehaving({"--stubborn"}), [](sbm::client&) -> asio::awaitable<bool> { co_return true; });
  // Two grace periods of 300 ms were waited (timers never fire early), then
  // the server was killed.
  EXPECT_GE(clock_type::now() - start, 600ms);
  EXPECT_TRUE(no_children_left());
}

TEST(McpMisbehaving, ACommandThatCannotStartIsNamed) {
  sbm::server_config config;
  config.name = "nothing";
  config.command = {"/nonexistent/mcp-server"};
  const auto e = error_of([&] { with_client(config, [](sbm::client&) -> asio::awaitable<bool> { co_return true; }); });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::spawn_failed);
  EXPECT_NE(std::string(e.what()).find("MCP server 'nothing': cannot start '/nonexistent/mcp-server'"),
            std::string::npos)
      << e.what();
}

TEST(McpMisbehaving, DestroyingAnOpenClientKillsItsServer) {
  require_peers();
  run([](sbm::server_config config) -> asio::awaitable<bool> {
    auto c = co_await sbm::client::connect(std::move(config));
    c.reset();
    co_return true;
  }(misbehaving({"--stubborn"})));
  EXPECT_TRUE(no_children_left());
}

class McpMisbehavingHttp : public testing::Test {
 protected:
  void SetUp() override {
    require_peers();
    ASSERT_TRUE(server_.ready()) << "misbehaving_server.mjs did not start";
    config_.name = "bad";
    config_.url = server_.url();
    config_.request_timeout = 2s;
  }
  misbehaving_http server_;
  sbm::server_config config_;
};

TEST_F(McpMisbehavingHttp, SendsSessionAndVersionHeaders) {
  const auto text = with_client(config_, [](sbm::client& c) -> asio::awaitable<std::string> {
    co_return (co_await c.call_tool("headers", json::object{})).text;
  });
  const auto v = json::parse(text);
  EXPECT_EQ(v.at("session"), "session-1");
  EXPECT_EQ(v.at("version"), "2025-11-25");
  EXPECT_EQ(v.at("accept"), "application/json, text/event-stream");
}

TEST_F(McpMisbehavingHttp, ABrokenEventStreamIsResumedWithLastEventId) {
  const auto r = with_client(config_, [](sbm::client& c) -> asio::awaitable<sbm::call_result> {
    co_return co_await c.call_tool("resume", json::object{});
  });
  EXPECT_EQ(r.text, "resumed");
}

TEST_F(McpMisbehavingHttp, TimeoutsAndInvalidMessagesNameTheServer) {
  config_.request_timeout = 3s;  // for every request; `slow` never answers
  const auto timeout = error_of([&] {
    with_client(config_, [](sbm::client& c) -> asio::awaitable<bool> {
      co_await c.call_tool("slow", json::object{});
      co_return true;
    });
  });
  EXPECT_EQ(timeout.errc(), sbm::mcp_errc::timeout) << timeout.what();
  const auto garbage = error_of([&] {
    with_client(config_, [](sbm::client& c) -> asio::awaitable<bool> {
      co_await c.call_tool("garbage", json::object{});
      co_return true;
    });
  });
  EXPECT_EQ(garbage.errc(), sbm::mcp_errc::protocol_error) << garbage.what();
  EXPECT_NE(std::string(garbage.what()).find("MCP server 'bad': sent invalid JSON"), std::string::npos);
}

TEST(McpHttp, AnUnreachableServerIsAConnectError) {
  sbm::server_config config;
  config.name = "gone";
  config.url = "http://127.0.0.1:" + std::to_string(free_port()) + "/mcp";
  const auto e = error_of([&] { with_client(config, [](sbm::client&) -> asio::awaitable<bool> { co_return true; }); });
  EXPECT_EQ(e.errc(), sbm::mcp_errc::connect_failed) << e.what();
  EXPECT_NE(std::string(e.what()).find("MCP server 'gone': cannot connect"), std::string::npos) << e.what();
}

}  // namespace
