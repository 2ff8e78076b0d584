#pragma once
// Shared by the HTTP server's tests (http_server_test.cpp, http_server_tls_test.cpp): the HTTP server
// (http_server.hpp) over real sockets on 127.0.0.1, port 0:
// what a handler sees of a request and what a client sees of the answer,
// keep-alive, the limits a client cannot exceed (head, body, slow or idle
// clients, connections), a handler that throws, streamed responses and a
// client that stops reading one, stop(), TLS, and the errors of the
// constructor. The clients are plain blocking Beast sockets, so that they can
// misbehave byte by byte; the project's http_client where a client that
// trusts the certificate is needed.
//
// No test asserts how fast anything happened: the timeouts are set small so
// that the tests run fast, and a hang guard ends a test that waits forever.
#include <switchboard/net/http_server.hpp>

#include <switchboard/net/error.hpp>
#include <switchboard/net/http_client.hpp>
#include <switchboard/net/http_options.hpp>
#include <switchboard/testing/hang_guard.hpp>
#include <switchboard/testing/temp_dir.hpp>

#include "self_signed_certificate.hpp"  // tests/support/src

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace switchboard::net {
namespace server_testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

using response = http::response<http::string_body>;

// An http_server on an io_context of its own, run by two threads (the
// server's connections run in parallel on strands). Declare it after
// everything its handler uses: it stops before those go away.
class running_server {
 public:
  running_server(server_options options, request_handler handler) {
    server_.emplace(io_.get_executor(), std::move(options), std::move(handler));
    server_->start();
    for (auto& thread : threads_) thread = std::thread([this] { io_.run(); });
  }
  ~running_server() {
    server_->stop();
    io_.stop();
    for (auto& thread : threads_) thread.join();
    server_.reset();
  }
  running_server(const running_server&) = delete;
  running_server& operator=(const running_server&) = delete;

  http_server* operator->() { return &*server_; }
  std::uint16_t port() const { return server_->port(); }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::optional<http_server> server_;
  std::array<std::thread, 2> threads_;
};

// What the handler saw, from the server's threads.
class recorder {
 public:
  void add(const server_request& request) {
    std::scoped_lock lock(mutex_);
    requests_.push_back(request);
  }
  std::vector<server_request> requests() const {
    std::scoped_lock lock(mutex_);
    return requests_;
  }
  std::size_t count() const {
    std::scoped_lock lock(mutex_);
    return requests_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<server_request> requests_;
};

// Options and responses are built field by field: designated initializers
// that skip members warn under -Wextra (-Wmissing-field-initializers).
template <class Edit>
inline server_options options_with(Edit edit) {
  server_options options;
  edit(options);
  return options;
}

inline server_response answer_with(int status, std::string body,
                            std::vector<std::pair<std::string, std::string>> headers = {}, bool close = false) {
  server_response answer;
  answer.status = status;
  answer.body = std::move(body);
  answer.headers = std::move(headers);
  answer.close = close;
  return answer;
}

// Records the request and answers 200 with {"path": <decoded path>}.
inline request_handler recording_handler(recorder& seen) {
  return [&seen](server_request& request) -> asio::awaitable<server_response> {
    seen.add(request);
    co_return answer_with(200, boost::json::serialize(boost::json::object{{"path", request.path}}));
  };
}

inline std::string detail_of(const response& answer) {
  const boost::json::value body = boost::json::parse(answer.body());
  return std::string(body.at("detail").as_string());
}

// Waits (without a bound: the hang guard is the bound) until `done` holds.
template <class Predicate>
inline void wait_until(Predicate done) {
  while (!done()) std::this_thread::sleep_for(2ms);
}

class HttpServer : public ::testing::Test {
 protected:
  HttpServer()
      : guard_(std::string("HttpServer.") + ::testing::UnitTest::GetInstance()->current_test_info()->name(),
               std::chrono::seconds(60)) {}

  tcp::socket connect(std::uint16_t port) {
    tcp::socket socket(client_io_);
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    return socket;
  }

  static void send(tcp::socket& socket, std::string_view bytes) { asio::write(socket, asio::buffer(bytes)); }

  static http::request<http::string_body> make_request(http::verb verb, std::string_view target,
                                                       std::string body = {}) {
    http::request<http::string_body> request{verb, target, 11};
    request.set(http::field::host, "127.0.0.1");
    request.body() = std::move(body);
    request.prepare_payload();
    return request;
  }

  static response read_response(tcp::socket& socket, beast::flat_buffer& buffer) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(16 * 1024 * 1024);
    http::read(socket, buffer, parser);
    return parser.release();
  }

  static response exchange(tcp::socket& socket, beast::flat_buffer& buffer,
                           const http::request<http::string_body>& request) {
    http::write(socket, request);
    return read_response(socket, buffer);
  }

  // One GET on a connection of its own.
  response get(std::uint16_t port, std::string_view target) {
    auto socket = connect(port);
    beast::flat_buffer buffer;
    return exchange(socket, buffer, make_request(http::verb::get, target));
  }

  // The server closed the connection: nothing more to read, then EOF (or a
  // reset, when the server closed with bytes of ours unread).
  static ::testing::AssertionResult closed_by_server(tcp::socket& socket, beast::flat_buffer& buffer) {
    if (buffer.size() > 0)
      return ::testing::AssertionFailure() << buffer.size() << " more bytes were sent before the close";
    std::array<char, 256> bytes{};
    boost::system::error_code ec;
    const std::size_t n = socket.read_some(asio::buffer(bytes), ec);
    if (ec == asio::error::eof || ec == asio::error::connection_reset) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "the connection is open: read " << n << " bytes ("
                                         << std::string_view(bytes.data(), n) << "), " << ec.message();
  }

  // Everything the server sends until it closes.
  static std::string read_until_closed(tcp::socket& socket) {
    std::string out;
    std::array<char, 4096> bytes{};
    boost::system::error_code ec;
    while (!ec) out.append(bytes.data(), socket.read_some(asio::buffer(bytes), ec));
    return out;
  }

  testing::hang_guard guard_;
  asio::io_context client_io_;
};

// --- requests and responses -------------------------------------------------

}  // namespace server_testing
}  // namespace switchboard::net
