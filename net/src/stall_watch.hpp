// The idle timeout of a streamed answer: closes the socket when no byte
// arrived for a while, which ends the pending read (like io_deadline does at
// a deadline). Lazy: touch() only stores the time of the last byte, and the
// timer, when it fires early, re-arms itself for the rest of the silence —
// a stream of many small pieces costs one clock read per read, not a timer
// operation. Internal.
//
// Thread-safety: start(), touch() and stop() from the coroutine reading the
// socket; the expiry runs on `handler_executor` and never touches the
// socket after stop() returned.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <memory>

namespace switchboard::net {

class stall_watch {
 public:
  stall_watch(const boost::asio::any_io_executor& handler_executor, std::chrono::milliseconds idle);
  ~stall_watch();
  stall_watch(const stall_watch&) = delete;
  stall_watch& operator=(const stall_watch&) = delete;

  // Watches `socket` from now on.
  void start(boost::asio::ip::tcp::socket& socket);
  // Bytes arrived just now.
  void touch() noexcept;
  void stop();
  // The silence lasted `idle` and the socket was closed.
  bool stalled() const noexcept;
  std::chrono::milliseconds idle() const noexcept { return idle_; }

 private:
  struct state;
  std::shared_ptr<state> state_;
  std::chrono::milliseconds idle_;
};

}  // namespace switchboard::net
