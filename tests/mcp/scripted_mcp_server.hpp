// The scripted MCP server of the Streamable HTTP transport's tests (an MCP
// server on the network layer's HTTP server, on its own thread, whose
// answers a test scripts), and the helpers the tests share.
#pragma once

#include <switchboard/mcp/client.hpp>

#include <switchboard/net/http_server.hpp>
#include <switchboard/testing/temp_dir.hpp>

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

namespace switchboard::test::mcp_http {

namespace asio = boost::asio;
namespace json = boost::json;
namespace net = switchboard::net;
namespace sbm = switchboard::mcp;
using namespace std::chrono_literals;
using switchboard::test::mcp::run;

using response_hook = std::function<asio::awaitable<std::optional<net::server_response>>(
    net::server_request&, const json::object& message, int nth)>;

inline net::server_response json_answer(const json::value& id, json::object result,
                                 std::vector<std::pair<std::string, std::string>> headers = {}) {
  net::server_response r;
  r.headers = std::move(headers);
  r.body = json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  return r;
}

inline net::server_response status_answer(int status, std::string body,
                                   std::vector<std::pair<std::string, std::string>> headers = {}) {
  net::server_response r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  r.headers.emplace_back("Content-Type", "text/plain");
  return r;
}

inline std::string event(const json::value& message, std::string_view id = {}) {
  std::string out;
  if (!id.empty()) out += "id: " + std::string(id) + "\n";
  return out + "data: " + json::serialize(message) + "\n\n";
}

inline json::object text_result(std::string_view text) {
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

inline sbm::server_config config_for(const scripted_server& server) {
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
inline sbm::mcp_error call_error(response_hook hook, std::string tool = "t",
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

inline bool is_call(const json::object& message) { return message.at("method") == "tools/call"; }

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

}  // namespace switchboard::test::mcp_http
