// A TCP server on 127.0.0.1 for the transport tests that needs to send what
// loopback_model_server never does: any response head (Content-Type,
// Content-Encoding), bytes that are not HTTP at all (a TLS alert), or a
// plain-HTTP answer to a TLS ClientHello, as proxies and servers on the
// wrong port do. Every connection is answered with the same bytes, then
// closed.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace switchboard::models::test {

class canned_server {
 public:
  // `response` is written as is once the request has arrived: a whole HTTP
  // request (head and Content-Length body), or any first bytes that are not
  // text (a TLS ClientHello).
  explicit canned_server(std::string response)
      : response_(std::move(response)), acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    boost::asio::co_spawn(io_, accept_loop(), boost::asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~canned_server() {
    io_.stop();
    thread_.join();
  }
  canned_server(const canned_server&) = delete;
  canned_server& operator=(const canned_server&) = delete;

  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  std::string url(const std::string& scheme, const std::string& path = "/v1") const {
    return scheme + "://127.0.0.1:" + std::to_string(port()) + path;
  }
  std::size_t connections() const { return connections_; }
  // What each connection sent before it was answered.
  std::vector<std::string> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  boost::asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (ec) co_return;
      ++connections_;
      boost::asio::co_spawn(io_, answer(std::move(socket)), boost::asio::detached);
    }
  }

  static bool request_complete(const std::string& received) {
    if (!received.empty() && static_cast<unsigned char>(received[0]) == 0x16) return true;  // a ClientHello
    const auto end_of_head = received.find("\r\n\r\n");
    if (end_of_head == std::string::npos) return false;
    std::size_t length = 0;
    const auto field = received.find("Content-Length: ");
    if (field != std::string::npos && field < end_of_head) length = std::stoul(received.substr(field + 16));
    return received.size() >= end_of_head + 4 + length;
  }

  boost::asio::awaitable<void> answer(boost::asio::ip::tcp::socket socket) {
    constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);
    std::string received;
    char chunk[4096];
    while (!request_complete(received)) {
      auto [ec, n] = co_await socket.async_read_some(boost::asio::buffer(chunk), use_tuple);
      if (ec) co_return;
      received.append(chunk, n);
    }
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(received);
    }
    co_await boost::asio::async_write(socket, boost::asio::buffer(response_), use_tuple);
    boost::system::error_code ignored;
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  }

  const std::string response_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<std::size_t> connections_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> requests_;
};

// An HTTP/1.1 response with `status_line` ("200 OK"), the extra `headers`
// (each "Name: value\r\n") and `body`, closing the connection.
inline std::string http_response_bytes(const std::string& status_line, const std::string& headers,
                                       const std::string& body) {
  return "HTTP/1.1 " + status_line + "\r\n" + headers + "Content-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace switchboard::models::test
