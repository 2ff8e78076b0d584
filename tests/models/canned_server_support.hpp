// A server on 127.0.0.1 for the transport tests that needs to send what
// loopback_model_server never does: any response head (Content-Type,
// Content-Encoding), a body that ends with the connection or before its
// Content-Length, or bytes that are not HTTP at all (a TLS alert). Every
// request is answered with the same bytes, then the connection is closed.
// It is the network layer's server, the bytes written through its raw hook.
//
// A connection that does not speak HTTP (a TLS ClientHello to an http port)
// never reaches the answer: the server hangs up on it, or, with
// `answers_not_http`, answers 400 in plain HTTP as nginx, Go, Python and Node
// do.
#pragma once

#include <switchboard/net/http_server.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace switchboard::models::test {

class canned_server {
 public:
  // `response` is written as is once a request has arrived.
  explicit canned_server(std::string response, bool answers_not_http = false) : response_(std::move(response)) {
    net::server_options options;
    options.answer_malformed_requests = answers_not_http;
    server_.emplace(io_.get_executor(), options, [this](net::server_request& request) { return answer(request); });
    server_->start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~canned_server() {
    server_->stop();
    boost::asio::post(io_, [this] { io_.stop(); });
    thread_.join();
  }
  canned_server(const canned_server&) = delete;
  canned_server& operator=(const canned_server&) = delete;

  unsigned short port() const { return server_->port(); }
  std::string url(const std::string& scheme, const std::string& path = "/v1") const {
    return scheme + "://127.0.0.1:" + std::to_string(port()) + path;
  }
  std::size_t connections() const { return server_->accepted_connections(); }
  // The requests answered.
  std::vector<net::server_request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  static boost::asio::awaitable<bool> write_and_close(net::raw_connection& connection, std::string bytes) {
    co_await connection.write(bytes);
    co_return false;
  }

  boost::asio::awaitable<net::server_response> answer(net::server_request& request) {
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    net::server_response response;
    response.raw = [this](net::raw_connection& connection) { return write_and_close(connection, response_); };
    co_return response;
  }

  const std::string response_;
  boost::asio::io_context io_;
  std::optional<net::http_server> server_;  // destroyed before io_
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<net::server_request> requests_;
};

// An HTTP/1.1 response with `status_line` ("200 OK"), the extra `headers`
// (each "Name: value\r\n") and `body`, closing the connection.
inline std::string http_response_bytes(const std::string& status_line, const std::string& headers,
                                       const std::string& body) {
  return "HTTP/1.1 " + status_line + "\r\n" + headers + "Content-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace switchboard::models::test
