// The keep-alive pool of one client: idle connections, a cap on open
// connections, and a FIFO of requests waiting for one. Internal.
//
// Thread-safety: all members may be called concurrently.
#pragma once

#include "connection.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace switchboard::net {

class connection_pool {
 public:
  using clock = std::chrono::steady_clock;

  connection_pool(std::size_t max_connections, std::chrono::milliseconds idle_timeout);
  ~connection_pool();

  // An idle connection on the caller's execution context, or nullptr meaning
  // "open a new one" (a slot under the cap is reserved for it: give it back
  // with release(nullptr, false) if opening fails). Waits for a free slot
  // while the cap is reached. Throws boost::system::system_error:
  // beast::error::timeout when `deadline` passes first,
  // asio::error::operation_aborted when the awaiting coroutine is cancelled.
  boost::asio::awaitable<std::unique_ptr<connection>> acquire(clock::time_point deadline);

  // Returns a connection (or a reserved slot when `c` is null). Reusable
  // connections go back to the idle list or to the first waiter; the others
  // are closed.
  void release(std::unique_ptr<connection> c, bool reusable);

  std::size_t open_connections() const;
  std::size_t idle_connections() const;

  // Called when `ctx` shuts down (an io_context being destroyed): its idle
  // connections and waiters go away while its services still work.
  void drop_context(boost::asio::execution_context* ctx);

 private:
  struct waiter;
  void watch_context(boost::asio::execution_context* ctx);
  void drop_expired_locked(clock::time_point now);
  bool grant_first_waiter_locked(std::unique_ptr<connection>& c);

  const std::size_t max_connections_;
  const std::chrono::milliseconds idle_timeout_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<connection>> idle_;  // most recently used last
  std::size_t open_ = 0;                           // idle + in use + being opened
  std::deque<std::shared_ptr<waiter>> waiters_;
  std::vector<boost::asio::execution_context*> watched_;  // guarded by the global registry mutex
  std::atomic<boost::asio::execution_context*> last_watched_{nullptr};  // fast path of watch_context
};

}  // namespace switchboard::net
