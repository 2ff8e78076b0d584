// One pooled HTTP/1.1 connection, plain TCP or TLS over TCP. Used by one
// request at a time (the pool hands it out exclusively). Internal.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <memory>
#include <optional>

namespace switchboard::net {

// One deadline for a whole step (connect and handshake, or a request's write
// and read): when it passes, the socket is closed, which ends the pending
// operation and makes any later one fail at once. One timer per step instead
// of one per read and per write (Beast's tcp_stream) halves the timer work of
// a request.
//
// start() and stop() are called from the coroutine using the connection; the
// expiry runs on that coroutine's executor, so it never races with the
// coroutine's own use of the socket when that executor is a strand (or
// single-threaded), as for any Asio socket. Whatever the executor, an expiry
// never touches the socket after stop() returned.
class io_deadline {
 public:
  explicit io_deadline(const boost::asio::any_io_executor& ex);
  ~io_deadline();
  io_deadline(const io_deadline&) = delete;
  io_deadline& operator=(const io_deadline&) = delete;

  // Closes `socket` at `at` unless stop() comes first.
  void start(std::chrono::steady_clock::time_point at, boost::asio::ip::tcp::socket& socket,
             const boost::asio::any_io_executor& handler_executor);
  // After stop(), an expiry already on its way to run does nothing.
  void stop();
  // The deadline passed during the step (the socket is closed then).
  bool expired() const noexcept;

 private:
  struct state;
  boost::asio::steady_timer timer_;
  std::shared_ptr<state> state_;  // shared with the pending expiry handler
};

struct connection {
  // tls == nullptr: plain TCP.
  connection(const boost::asio::any_io_executor& ex, boost::asio::ssl::context* tls_context);

  boost::asio::ip::tcp::socket& socket() noexcept { return tls ? tls->next_layer() : *plain; }

  std::optional<boost::asio::ip::tcp::socket> plain;
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> tls;
  io_deadline deadline;
  boost::beast::flat_buffer buffer;                       // bytes read past a response
  boost::asio::execution_context* context = nullptr;      // whose reactor drives the socket
  std::chrono::steady_clock::time_point idle_since{};
  bool reused = false;                                    // served a request before
};

}  // namespace switchboard::net
