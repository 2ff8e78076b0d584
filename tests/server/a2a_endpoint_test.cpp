// The A2A server on a task that is working (the gated test workflow holds
// its run in a step until the test opens the gate): the task reads as
// working, a message to it is refused, CancelTask cancels the run, a
// SubscribeToTask stream follows it to the end. The SDK-driven round trips
// on the sample are in tests/a2a_peers (ctest -L a2a_server).
#include "server_test_support.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace switchboard::server::testing {
namespace {

using ::testing::HasSubstr;

class a2a_working_task_test : public ::testing::Test {
 protected:
  a2a_working_task_test() {
    server::serve_options o;
    o.workflows = {gated_settings(dir_.path())};
    o.store_url = "memory";
    server_.emplace(std::move(o));
  }
  ~a2a_working_task_test() override { open_gate(); }

  void open_gate() const { std::ofstream(dir_.path() / "open") << "open\n"; }
  void wait_for_gate_calls(int n) const {
    while (lines_in(dir_.path() / "gate.log") < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  reply rpc(std::string_view method, json::object params) {
    return post(server_->port(), "/a2a/gated",
                json::object{{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", std::move(params)}},
                {{"A2A-Version", "1.0"}});
  }
  json::value result(std::string_view method, json::object params) {
    const auto r = rpc(method, std::move(params));
    EXPECT_EQ(r.status, 200) << r.describe();
    const auto body = r.json();
    EXPECT_TRUE(body.as_object().contains("result")) << r.describe();
    return body.as_object().contains("result") ? body.at("result") : json::value();
  }
  std::int64_t error_code(std::string_view method, json::object params) {
    const auto body = rpc(method, std::move(params)).json();
    const auto* error = body.as_object().if_contains("error");
    return error ? error->at("code").as_int64() : 0;
  }
  static json::object message(std::string text, std::string task_id = {}) {
    json::object m{{"messageId", "m-" + text}, {"role", "ROLE_USER"},
                   {"parts", json::array{json::object{{"text", std::move(text)}}}}};
    if (!task_id.empty()) m["taskId"] = std::move(task_id);
    return json::object{{"message", std::move(m)}};
  }
  // A task started with returnImmediately, held in its gate step.
  std::string start_working_task() {
    auto params = message("go");
    params["configuration"] = json::object{{"returnImmediately", true}};
    const auto started = result("SendMessage", std::move(params));
    EXPECT_EQ(started.at("task").at("status").at("state"), "TASK_STATE_WORKING");
    wait_for_gate_calls(1);
    return std::string(started.at("task").at("id").as_string());
  }

  const switchboard::testing::hang_guard guard_{"an A2A working task test"};
  temp_dir dir_{"sb-server-a2a"};
  std::optional<running_server> server_;
  int id_ = 0;
};

TEST_F(a2a_working_task_test, a_working_task_is_working_refuses_messages_and_is_cancelled) {
  const auto id = start_working_task();
  EXPECT_EQ(result("GetTask", {{"id", id}}).at("status").at("state"), "TASK_STATE_WORKING");
  EXPECT_EQ(error_code("SendMessage", message("more", id)), -32004);

  const auto cancelled = result("CancelTask", {{"id", id}});
  EXPECT_EQ(cancelled.at("status").at("state"), "TASK_STATE_CANCELED");
  EXPECT_EQ(result("GetTask", {{"id", id}}).at("status").at("state"), "TASK_STATE_CANCELED");
  EXPECT_EQ(error_code("CancelTask", {{"id", id}}), -32002);
  EXPECT_EQ(error_code("SubscribeToTask", {{"id", id}}), -32004);
}

// The raw bytes of a SubscribeToTask stream: read until its first event has
// come (the task, working), then the gate opens, then until the server
// closes the connection (the task ended).
std::string subscribe_then_open(std::uint16_t port, const std::string& id, const std::function<void()>& open) {
  namespace beast = boost::beast;
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  const std::string body = json::serialize(json::object{
      {"jsonrpc", "2.0"}, {"id", 1}, {"method", "SubscribeToTask"}, {"params", json::object{{"id", id}}}});
  const std::string request = "POST /a2a/gated HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
                              "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  asio::write(socket, asio::buffer(request));
  std::string received;
  bool opened = false;
  for (;;) {
    char chunk[4096];
    boost::system::error_code ec;
    const auto n = socket.read_some(asio::buffer(chunk), ec);
    received.append(chunk, n);
    if (!opened && received.find("TASK_STATE_WORKING") != std::string::npos) {
      open();
      opened = true;
    }
    if (ec) break;
  }
  return received;
}

TEST_F(a2a_working_task_test, a_subscription_follows_a_working_task_to_its_end) {
  const auto id = start_working_task();
  const auto stream = subscribe_then_open(server_->port(), id, [this] { open_gate(); });
  EXPECT_THAT(stream, HasSubstr("text/event-stream"));
  EXPECT_THAT(stream, HasSubstr("\"task\":{\"id\":\"" + id));
  EXPECT_THAT(stream, HasSubstr("\"statusUpdate\""));
  EXPECT_THAT(stream, HasSubstr("TASK_STATE_COMPLETED"));
  EXPECT_EQ(result("GetTask", {{"id", id}}).at("status").at("state"), "TASK_STATE_COMPLETED");
}

TEST_F(a2a_working_task_test, bad_requests_are_json_rpc_errors_naming_what_is_wrong) {
  EXPECT_EQ(error_code("NoSuchMethod", {}), -32601);
  EXPECT_EQ(error_code("GetTask", {}), -32602);
  EXPECT_EQ(error_code("ListTasks", {{"pageSize", 1000}}), -32602);
  EXPECT_EQ(error_code("ListTasks", {{"status", "working"}}), -32602);
  EXPECT_EQ(error_code("CreateTaskPushNotificationConfig", {}), -32003);
  const auto malformed = request(server_->port(), boost::beast::http::verb::post, "/a2a/gated", "{not json",
                                 {{"A2A-Version", "1.0"}});
  EXPECT_EQ(malformed.json().at("error").at("code"), -32700);
  const auto old = post(server_->port(), "/a2a/gated",
                        json::object{{"jsonrpc", "2.0"}, {"id", "x"}, {"method", "GetTask"}, {"params", {}}},
                        {{"A2A-Version", "0.3"}});
  EXPECT_EQ(old.json().at("error").at("code"), -32009);
  EXPECT_EQ(old.json().at("id"), "x");
  EXPECT_EQ(get(server_->port(), "/a2a/nope/.well-known/agent-card.json").status, 404);
  EXPECT_EQ(get(server_->port(), "/a2a/gated").status, 405);
}

}  // namespace
}  // namespace switchboard::server::testing
