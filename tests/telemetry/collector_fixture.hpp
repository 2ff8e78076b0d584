#pragma once
// Shared by the exporter's tests: a collector on 127.0.0.1 (net::http_server
// on an io_context of its own) whose handler the test writes — one that
// answers, stalls, fails or asks to be called later — and a record of what
// it received, decoded.
//
// No test asserts how fast anything happened from above: counts and what the
// collector saw are asserted; a hang guard ends a test that waits forever.
#include <switchboard/net/http_server.hpp>
#include <switchboard/telemetry/otlp_exporter.hpp>
#include <switchboard/telemetry/tracer.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace switchboard::telemetry::collector_testing {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// One request as the collector saw it.
struct received_request {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::steady_clock::time_point at;

  std::optional<std::string> header(std::string_view lowercase_name) const {
    for (const auto& [name, value] : headers)
      if (name == lowercase_name) return value;
    return std::nullopt;
  }
  // The names of the spans in the body (an ExportTraceServiceRequest).
  std::vector<std::string> span_names() const {
    std::vector<std::string> names;
    const boost::json::value request = boost::json::parse(body);
    for (const auto& resource_spans : request.at("resourceSpans").as_array())
      for (const auto& scope_spans : resource_spans.at("scopeSpans").as_array())
        for (const auto& one : scope_spans.at("spans").as_array())
          names.emplace_back(one.at("name").as_string());
    return names;
  }
};

class request_log {
 public:
  void add(const net::server_request& request) {
    std::scoped_lock lock(mutex_);
    requests_.push_back(received_request{request.method, request.path, request.headers, request.body,
                                         std::chrono::steady_clock::now()});
  }
  std::vector<received_request> requests() const {
    std::scoped_lock lock(mutex_);
    return requests_;
  }
  std::size_t count() const {
    std::scoped_lock lock(mutex_);
    return requests_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<received_request> requests_;
};

// A collector: an http_server on two threads of its own. Declare it after
// everything its handler uses.
class collector {
 public:
  explicit collector(net::request_handler handler, net::server_options options = {}) {
    server_.emplace(io_.get_executor(), std::move(options), std::move(handler));
    server_->start();
    for (auto& thread : threads_) thread = std::thread([this] { io_.run(); });
  }
  ~collector() {
    server_->stop();
    io_.stop();
    for (auto& thread : threads_) thread.join();
    server_.reset();
  }
  collector(const collector&) = delete;
  collector& operator=(const collector&) = delete;

  std::uint16_t port() const { return server_->port(); }
  std::string traces_url(std::string_view scheme = "http") const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port()) + "/v1/traces";
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::optional<net::http_server> server_;
  std::array<std::thread, 2> threads_;
};

inline net::server_response answer(int status, std::string body = "{}",
                                   std::vector<std::pair<std::string, std::string>> headers = {}) {
  net::server_response response;
  response.status = status;
  response.body = std::move(body);
  response.headers = std::move(headers);
  return response;
}

// Answers every request with `status` after recording it.
inline net::request_handler answering(request_log& log, int status) {
  return [&log, status](net::server_request& request) -> asio::awaitable<net::server_response> {
    log.add(request);
    co_return answer(status);
  };
}

// Records the request, then never answers (until the collector stops).
inline net::request_handler stalling(request_log& log) {
  return [&log](net::server_request& request) -> asio::awaitable<net::server_response> {
    log.add(request);
    asio::steady_timer forever(co_await asio::this_coro::executor, std::chrono::hours(1));
    co_await forever.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return answer(200);
  };
}

// A port on 127.0.0.1 that nobody listens on: bound by the system, then
// released.
inline std::uint16_t free_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

// Exporter options for tests: nothing waits for the schedule (flushes do
// the sending), back-off is short.
inline otlp_exporter_options test_options(std::string endpoint) {
  otlp_exporter_options options;
  options.endpoint = std::move(endpoint);
  options.schedule_delay = std::chrono::hours(1);
  options.initial_backoff = 10ms;
  options.max_backoff = 50ms;
  options.timeout = 5s;
  return options;
}

// A finished span named `name`, ready for on_end().
inline span_data finished_span(std::string name) {
  span_data data;
  data.context.trace_id = random_trace_id();
  data.context.span_id = random_span_id();
  data.context.trace_flags = sampled_flag;
  data.name = std::move(name);
  data.start_time_unix_nano = now_unix_nano();
  data.end_time_unix_nano = data.start_time_unix_nano + 1000;
  return data;
}

}  // namespace switchboard::telemetry::collector_testing
