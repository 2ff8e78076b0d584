// Helpers of the server's tests: awaiting a coroutine from a test, an
// agent_server on an io_context of its own, blocking HTTP requests (plain
// Beast) and server-sent events read back, and the workflows served (the
// scheduling sample as shipped, a gated test workflow).
#pragma once

#include <switchboard/server/agent_server.hpp>
#include <switchboard/testing/temp_dir.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace switchboard::server::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace json = boost::json;
namespace fs = std::filesystem;
using switchboard::testing::temp_dir;

// The developer's model and search-path settings must not reach the
// tests: the sample runs rule-based, and finds only what the tests name.
inline const bool environment_isolated = [] {
  for (const char* name : {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                           "SWITCHBOARD_MODEL", "SWITCHBOARD_PROVIDER", "SWITCHBOARD_OUTPUT_MODE",
                           "SWITCHBOARD_SCHEMA_PATH", "SWITCHBOARD_PLUGIN_PATH", "SWITCHBOARD_PROMPT_PATH"})
    ::unsetenv(name);
  return true;
}();

// Runs `op` to completion on an io_context of its own; its result (or
// exception).
template <class T>
T await(asio::awaitable<T> op) {
  asio::io_context io;
  auto done = asio::co_spawn(io, std::move(op), asio::use_future);
  io.run();
  return done.get();
}

// ---------------------------------------------------------------- HTTP

struct reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  json::value json() const {
    boost::system::error_code ec;
    auto v = json::parse(body, ec);
    if (ec) ADD_FAILURE() << "not JSON (" << ec.message() << "): " << body;
    return v;
  }
  std::string header(const std::string& lowercase_name) const {
    const auto it = headers.find(lowercase_name);
    return it == headers.end() ? std::string{} : it->second;
  }
  // "HTTP 404: {...}" for a failure message.
  std::string describe() const { return "HTTP " + std::to_string(status) + ": " + body; }
};

using header_list = std::vector<std::pair<std::string, std::string>>;

// One request on a connection of its own (the server closes a connection
// after a stream; a fresh one per request keeps the tests independent of
// keep-alive). Blocks until the whole answer is read (a stream: until the
// server ends it).
inline reply request(std::uint16_t port, http::verb method, const std::string& target, const std::string& body = {},
                     const header_list& headers = {}) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty() || method == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  for (const auto& [name, value] : headers) req.set(name, value);
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  http::read(stream, buffer, parser);
  const auto& res = parser.get();
  reply r;
  r.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers.emplace(std::move(name), std::string(field.value()));
  }
  r.body = res.body();
  boost::system::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return r;
}

inline reply get(std::uint16_t port, const std::string& target, const header_list& headers = {}) {
  return request(port, http::verb::get, target, {}, headers);
}
inline reply post(std::uint16_t port, const std::string& target, const json::value& body,
                  const header_list& headers = {}) {
  return request(port, http::verb::post, target, json::serialize(body), headers);
}
inline reply del(std::uint16_t port, const std::string& target, const header_list& headers = {}) {
  return request(port, http::verb::delete_, target, {}, headers);
}

// One server-sent event as the server framed it.
struct sse_event {
  std::string event;
  std::string data;
  std::string id;
  json::value json() const {
    boost::system::error_code ec;
    auto v = json::parse(data, ec);
    if (ec) ADD_FAILURE() << "event " << event << " (id " << id << "): data is not JSON: " << data;
    return v;
  }
};

// The events of an event-stream body; comments (heartbeats) skipped.
// Fails the test on a line the framing does not allow.
inline std::vector<sse_event> parse_sse(const std::string& body) {
  std::vector<sse_event> out;
  sse_event current;
  bool any = false;
  std::size_t start = 0;
  while (start < body.size()) {
    auto end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(start, end - start);
    start = end + 1;
    if (line.empty()) {
      if (any) out.push_back(std::move(current));
      current = {};
      any = false;
      continue;
    }
    if (line.front() == ':') continue;
    const auto colon = line.find(": ");
    if (colon == std::string::npos) {
      ADD_FAILURE() << "an event-stream line without 'name: value': " << line;
      continue;
    }
    const auto name = line.substr(0, colon);
    const auto value = line.substr(colon + 2);
    any = true;
    if (name == "event") current.event = value;
    else if (name == "data") current.data += value;
    else if (name == "id") current.id = value;
    else ADD_FAILURE() << "an unknown event-stream field: " << line;
  }
  if (any) ADD_FAILURE() << "the stream ends inside an event: " << current.event;
  return out;
}

// ---------------------------------------------------------------- workflows

// The scheduling sample as shipped: bookings wait for the user's approval,
// vague requests ask a question.
inline const fs::path scheduling_workflow = fs::path(SWITCHBOARD_SOURCE_DIR) / "examples" / "scheduling" /
                                            "workflow.json";

// Settings of the sample with its calendar in `state_dir`.
inline host::workflow_settings scheduling_settings(const fs::path& state_dir) {
  host::workflow_settings s;
  s.workflow_file = scheduling_workflow;
  s.loader.plugin_dirs = {fs::path(SWITCHBOARD_PLUGIN_DIR)};
  s.loader.state_dir = state_dir;
  return s;
}

// A workflow "gated": node `first` (agent count) then `wait` (agent gate,
// which waits until `dir`/open exists) then the end. Written in `dir`.
inline host::workflow_settings gated_settings(const fs::path& dir) {
  const auto file = dir / "gated" / "workflow.json";
  fs::create_directories(file.parent_path());
  json::object workflow{
      {"name", "gated"},
      {"entry", "first"},
      {"plugins", json::array{json::object{{"name", SWITCHBOARD_GATE_PLUGIN},
                                           {"config", json::object{{"dir", dir.string()}}}}}},
      {"nodes", json::object{
                    {"first", json::object{{"type", "agent"}, {"agent", "count"},
                                           {"routes", json::array{json::object{{"when", "otherwise"}, {"to", "wait"}}}}}},
                    {"wait", json::object{{"type", "agent"}, {"agent", "gate"},
                                          {"routes", json::array{json::object{{"when", "otherwise"}, {"to", "done"}}}}}},
                    {"done", json::object{{"type", "end"}}}}}};
  std::ofstream(file) << json::serialize(workflow);
  host::workflow_settings s;
  s.workflow_file = file;
  s.loader.state_dir = dir / "state";
  fs::create_directories(s.loader.state_dir);
  return s;
}

// Lines in `file` (0 when it does not exist).
inline int lines_in(const fs::path& file) {
  std::ifstream in(file);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// POST /threads: the new thread's id ("" and a test failure when refused).
inline std::string new_thread_on(std::uint16_t port) {
  const auto r = post(port, "/threads", json::object{});
  EXPECT_EQ(r.status, 200) << r.describe();
  return r.status == 200 ? std::string(r.json().at("thread_id").as_string()) : std::string{};
}

// POST /threads/{id}/runs on the gated workflow: the run's id.
inline std::string start_gated_on(std::uint16_t port, const std::string& thread) {
  const auto r = post(port, "/threads/" + thread + "/runs",
                      json::object{{"assistant_id", "gated"}, {"input", json::object{{"n", 1}}}});
  EXPECT_EQ(r.status, 200) << r.describe();
  return r.status == 200 ? std::string(r.json().at("run_id").as_string()) : std::string{};
}

// GET `target`, expected 200: its JSON.
inline json::value get_json(std::uint16_t port, const std::string& target) {
  const auto r = get(port, target);
  EXPECT_EQ(r.status, 200) << target << ": " << r.describe();
  return r.json();
}

// ---------------------------------------------------------------- the server

// An agent_server on an io_context of its own, run by `threads` threads
// (serve's default is 2). Not thread-safe: one test thread drives it.
class running_server {
 public:
  explicit running_server(server::serve_options options, int threads = 2)
      : io_(threads), work_(asio::make_work_guard(io_)) {
    options.http.address = "127.0.0.1";
    options.http.port = 0;
    if (options.heartbeat == std::chrono::milliseconds(std::chrono::seconds(10)))
      options.heartbeat = std::chrono::milliseconds(100);
    server_ = std::make_unique<server::agent_server>(io_.get_executor(), std::move(options));
    for (int i = 0; i < threads; ++i) pool_.emplace_back([this] { io_.run(); });
    try {
      asio::co_spawn(io_, server_->start(), asio::use_future).get();
    } catch (...) {
      shut_down_ = true;
      stop();
      throw;
    }
    port_ = server_->port();
  }
  ~running_server() {
    if (server_) stop();
  }
  running_server(const running_server&) = delete;
  running_server& operator=(const running_server&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  server::agent_server& server() { return *server_; }

  // shutdown(grace), then the io_context stopped (as `switchboard serve`
  // does at SIGTERM) and the server destroyed.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10)) {
    if (!server_) return;
    if (!shut_down_) shutdown(grace);
    work_.reset();
    io_.stop();
    for (auto& t : pool_) t.join();
    pool_.clear();
    server_.reset();
  }
  // shutdown(grace) only: the server object and its io_context stay.
  void shutdown(std::chrono::milliseconds grace) {
    shut_down_ = true;
    asio::co_spawn(io_, server_->shutdown(grace), asio::use_future).get();
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::unique_ptr<server::agent_server> server_;
  std::vector<std::thread> pool_;
  std::uint16_t port_ = 0;
  bool shut_down_ = false;
};

}  // namespace switchboard::server::testing
