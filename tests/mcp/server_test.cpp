// The MCP server session (server.hpp) without a transport: messages handed
// to receive(), what it sends captured, a provider of test tools.
#include <switchboard/mcp/server.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace switchboard::mcp {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using ::testing::HasSubstr;

// echo: returns its arguments; ask: elicits an answer and returns the reply;
// wait: runs until stopped; steps: three progress lines; boom: throws.
class test_tools final : public tool_provider {
 public:
  explicit test_tools(asio::any_io_executor executor) : executor_(std::move(executor)) {}

  std::vector<exposed_tool> list_tools() const override {
    std::vector<exposed_tool> tools;
    for (const char* name : {"echo", "ask", "wait", "steps", "boom"})
      tools.push_back({name, "", std::string("the ") + name + " tool", json::object{{"type", "object"}}, {}, {}});
    return tools;
  }

  asio::awaitable<json::object> call_tool(std::string name, json::object arguments, tool_call& call) override {
    if (name == "echo") co_return structured_result("echoed", std::move(arguments));
    if (name == "boom") throw std::runtime_error("the boom tool broke");
    if (name == "steps") {
      for (int i = 1; i <= 3; ++i) call.progress("step " + std::to_string(i));
      co_return text_result("stepped");
    }
    if (name == "ask") {
      can_elicit = call.can_elicit();
      auto asking = call.elicit("What now?", json::object{{"type", "object"}});
      const elicitation_reply reply = co_await std::move(asking);
      co_return structured_result(reply.action, reply.content);
    }
    // wait
    asio::steady_timer timer(executor_, asio::steady_timer::time_point::max());
    call.on_stop([&](stop_reason reason) {
      stopped_with = reason;
      timer.cancel();
    });
    auto waiting = timer.async_wait(asio::as_tuple(asio::use_awaitable));
    co_await std::move(waiting);
    co_return text_result("stopped");
  }

  std::optional<stop_reason> stopped_with;
  std::optional<bool> can_elicit;

 private:
  asio::any_io_executor executor_;
};

class server_session_test : public ::testing::Test {
 protected:
  void make(server_limits limits = {}) {
    tools_ = std::make_shared<test_tools>(io_.get_executor());
    session_ = server_session::make(io_.get_executor(), tools_, {"switchboard", "9.9.9", ""},
                                    [this](std::string message, const json::value& related) {
                                      sent_.push_back(json::parse(message));
                                      related_.push_back(related);
                                    }, limits);
  }
  void SetUp() override { make(); }

  // Hands `text` to the session and runs what became ready.
  void receive(std::string_view text) {
    session_->receive(text);
    io_.poll();
    io_.restart();
  }
  void initialize(bool elicitation = false) {
    json::object capabilities;
    if (elicitation) capabilities["elicitation"] = json::object{};
    receive(json::serialize(json::object{
        {"jsonrpc", "2.0"},
        {"id", 0},
        {"method", "initialize"},
        {"params", json::object{{"protocolVersion", "2025-06-18"}, {"capabilities", capabilities}}}}));
    sent_.clear();
    related_.clear();
  }
  void call(json::value id, std::string_view tool, json::object arguments = {}, json::object meta = {}) {
    json::object params{{"name", tool}, {"arguments", std::move(arguments)}};
    if (!meta.empty()) params["_meta"] = std::move(meta);
    receive(json::serialize(
        json::object{{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"method", "tools/call"}, {"params", params}}));
  }
  // The one message sent since the last take(), removed.
  json::object take() {
    EXPECT_EQ(sent_.size(), 1u) << json::serialize(json::value_from(sent_));
    if (sent_.empty()) return {};
    json::object message = sent_.front().as_object();
    sent_.erase(sent_.begin());
    return message;
  }
  std::int64_t error_code(const json::object& message) {
    const auto* error = message.if_contains("error");
    return error ? error->at("code").to_number<std::int64_t>() : 0;
  }

  asio::io_context io_;
  std::shared_ptr<test_tools> tools_;
  std::shared_ptr<server_session> session_;
  std::vector<json::value> sent_;
  std::vector<json::value> related_;  // the request each message was sent for
};

TEST_F(server_session_test, initialize_answers_the_clients_revision_when_known_and_the_latest_otherwise) {
  receive(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})");
  const auto known = take();
  EXPECT_EQ(known.at("id"), 1);
  EXPECT_EQ(known.at("result").at("protocolVersion"), "2025-06-18");
  EXPECT_EQ(known.at("result").at("capabilities"), json::parse(R"({"tools":{"listChanged":false}})"));
  EXPECT_EQ(known.at("result").at("serverInfo").at("version"), "9.9.9");

  make();
  receive(R"({"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"1999-01-01"}})");
  const auto unknown = take();
  EXPECT_EQ(unknown.at("id"), "a");
  EXPECT_EQ(unknown.at("result").at("protocolVersion"), "2025-11-25");
}

TEST_F(server_session_test, elicitation_is_offered_only_when_the_client_declares_it_for_forms) {
  initialize(false);
  EXPECT_FALSE(session_->client_can_elicit());
  make();
  initialize(true);
  EXPECT_TRUE(session_->client_can_elicit());
  make();
  receive(R"({"jsonrpc":"2.0","id":1,"method":"initialize",
              "params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}}}})");
  EXPECT_FALSE(session_->client_can_elicit());
}

TEST_F(server_session_test, requests_before_initialize_are_refused_but_ping_is_answered) {
  receive(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  const auto refused = take();
  EXPECT_EQ(error_code(refused), rpc_code::invalid_request);
  EXPECT_THAT(std::string(refused.at("error").at("message").as_string()), HasSubstr("not initialized"));
  receive(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  EXPECT_EQ(take().at("result"), json::object{});
}

TEST_F(server_session_test, bad_messages_get_the_json_rpc_error_that_names_them) {
  initialize();
  const std::vector<std::pair<std::string, int>> cases = {
      {"{nope", rpc_code::parse_error},
      {std::string(200, '[') + std::string(200, ']'), rpc_code::parse_error},  // past the depth limit
      {"[]", rpc_code::invalid_request},
      {"42", rpc_code::invalid_request},
      {R"({"id":1,"method":"ping"})", rpc_code::invalid_request},
      {R"({"jsonrpc":"1.0","id":1,"method":"ping"})", rpc_code::invalid_request},
      {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", rpc_code::invalid_request},
      {R"({"jsonrpc":"2.0","id":1,"method":7})", rpc_code::invalid_request},
      {R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})", rpc_code::invalid_params},
      {R"({"jsonrpc":"2.0","id":1,"method":"resources/list"})", rpc_code::method_not_found},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})", rpc_code::invalid_params},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}})", rpc_code::invalid_params},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}})",
       rpc_code::invalid_params},
      {R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
       rpc_code::invalid_request},
  };
  for (const auto& [text, code] : cases) {
    receive(text);
    EXPECT_EQ(error_code(take()), code) << text;
  }
  // Notifications are never answered, even malformed ones.
  receive(R"({"jsonrpc":"2.0","method":"notifications/whatever","params":[1]})");
  receive(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":1}}})");
  EXPECT_TRUE(sent_.empty());
  receive(R"({"jsonrpc":"2.0","id":9,"method":"ping"})");
  EXPECT_EQ(take().at("id"), 9);
}

TEST_F(server_session_test, an_oversized_message_is_refused_without_being_parsed) {
  make({.max_message_bytes = 64, .max_calls_in_flight = 4});
  initialize();
  receive(R"({"jsonrpc":"2.0","id":1,"method":"ping","padding":")" + std::string(100, 'x') + "\"}");
  const auto refused = take();
  EXPECT_EQ(refused.at("id"), nullptr);
  EXPECT_EQ(error_code(refused), rpc_code::invalid_request);
  EXPECT_THAT(std::string(refused.at("error").at("message").as_string()), HasSubstr("larger than 64 bytes"));
}

TEST_F(server_session_test, tools_list_shows_the_providers_tools) {
  initialize();
  receive(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  const auto tools = take().at("result").at("tools").as_array();
  ASSERT_EQ(tools.size(), 5u);
  EXPECT_EQ(tools[0], json::parse(R"({"name":"echo","description":"the echo tool","inputSchema":{"type":"object"}})"));
}

TEST_F(server_session_test, a_call_is_answered_with_its_result_under_its_own_id) {
  initialize();
  call("call-1", "echo", json::object{{"x", 1}});
  const auto answer = take();
  EXPECT_EQ(answer.at("id"), "call-1");
  EXPECT_EQ(answer.at("result").at("structuredContent"), json::parse(R"({"x":1})"));
  EXPECT_EQ(answer.at("result").at("content").at(0).at("text"), "echoed");
}

TEST_F(server_session_test, a_tool_that_throws_is_an_internal_error_naming_it) {
  initialize();
  call(3, "boom");
  const auto answer = take();
  EXPECT_EQ(error_code(answer), rpc_code::internal_error);
  EXPECT_THAT(std::string(answer.at("error").at("message").as_string()), HasSubstr("the boom tool broke"));
}

TEST_F(server_session_test, progress_is_sent_only_with_a_progress_token_and_counts_up) {
  initialize();
  call(1, "steps");
  EXPECT_EQ(take().at("result").at("content").at(0).at("text"), "stepped");
  call(2, "steps", {}, json::object{{"progressToken", "tok"}});
  ASSERT_EQ(sent_.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    const auto& params = sent_[static_cast<std::size_t>(i)].at("params");
    EXPECT_EQ(sent_[static_cast<std::size_t>(i)].at("method"), "notifications/progress");
    EXPECT_EQ(params.at("progressToken"), "tok");
    EXPECT_EQ(params.at("progress"), i + 1);
    EXPECT_EQ(params.at("message"), json::value("step " + std::to_string(i + 1)));
  }
  EXPECT_EQ(sent_[3].at("id"), 2);
  // Each belongs to the request: a transport with a stream per request routes them there.
  ASSERT_EQ(related_.size(), 5u);  // the first call's answer, then these four
  for (std::size_t i = 1; i < 5; ++i) EXPECT_EQ(related_[i], 2);
}

TEST_F(server_session_test, elicitation_asks_the_client_and_returns_its_answer) {
  initialize(true);
  call(5, "ask");
  const auto request = take();
  EXPECT_EQ(request.at("method"), "elicitation/create");
  EXPECT_EQ(request.at("params").at("message"), "What now?");
  EXPECT_EQ(related_.back(), 5);
  const auto id = request.at("id").as_int64();
  receive(json::serialize(json::object{
      {"jsonrpc", "2.0"}, {"id", id}, {"result", json::parse(R"({"action":"accept","content":{"answer":"yes"}})")}}));
  const auto answer = take();
  EXPECT_EQ(answer.at("id"), 5);
  EXPECT_EQ(answer.at("result").at("content").at(0).at("text"), "accept");
  EXPECT_EQ(answer.at("result").at("structuredContent"), json::parse(R"({"answer":"yes"})"));
}

TEST_F(server_session_test, an_elicitation_answered_with_an_error_or_nonsense_counts_as_cancel) {
  initialize(true);
  call(5, "ask");
  auto id = take().at("id").as_int64();
  receive(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"error":{"code":-1,"message":"no"}})");
  EXPECT_EQ(take().at("result").at("content").at(0).at("text"), "cancel");
  call(6, "ask");
  id = take().at("id").as_int64();
  receive(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":{"action":"sure"}})");
  EXPECT_EQ(take().at("result").at("content").at(0).at("text"), "cancel");
}

TEST_F(server_session_test, without_the_capability_nothing_is_asked) {
  initialize(false);
  call(5, "ask");
  const auto answer = take();
  EXPECT_EQ(answer.at("result").at("content").at(0).at("text"), "cancel");
  EXPECT_EQ(tools_->can_elicit, false);
}

TEST_F(server_session_test, a_cancelled_call_is_stopped_and_not_answered) {
  initialize();
  call(7, "wait");
  EXPECT_TRUE(sent_.empty());
  EXPECT_EQ(session_->calls_in_flight(), 1u);
  receive(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}})");
  EXPECT_EQ(tools_->stopped_with, stop_reason::cancelled);
  EXPECT_EQ(session_->calls_in_flight(), 0u);
  EXPECT_TRUE(sent_.empty());
}

TEST_F(server_session_test, closing_stops_every_call_and_ends_pending_questions) {
  initialize(true);
  call(1, "wait");
  call(2, "ask");
  take();  // the elicitation request
  session_->close();
  io_.poll();
  EXPECT_EQ(tools_->stopped_with, stop_reason::session_closed);
  EXPECT_EQ(session_->calls_in_flight(), 0u);
  EXPECT_TRUE(sent_.empty());  // nothing is sent after close
  receive(R"({"jsonrpc":"2.0","id":3,"method":"ping"})");
  EXPECT_TRUE(sent_.empty());
}

TEST_F(server_session_test, calls_in_flight_are_bounded_and_ids_are_not_reused_while_running) {
  make({.max_message_bytes = 4096, .max_calls_in_flight = 2});
  initialize();
  call(1, "wait");
  call(1, "wait");
  EXPECT_EQ(error_code(take()), rpc_code::invalid_request);
  call(2, "wait");
  call(3, "wait");
  EXPECT_EQ(error_code(take()), rpc_code::server_busy);
  EXPECT_EQ(session_->calls_in_flight(), 2u);
  session_->close();
  io_.poll();
}

}  // namespace
}  // namespace switchboard::mcp
