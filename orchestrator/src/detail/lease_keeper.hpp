// Keeps a hub's leases alive: while any of its runs holds a lease, one
// timer renews every lease of the hub's owner in its store a few times per
// lease, so a hub with a thousand runs in flight makes one renewal, not a
// thousand.
//
// Thread-safety: hold() and release() may be called from any thread; the
// count and the timer live on the keeper's own strand. The timer's
// coroutine keeps the keeper (and so the store) alive until it ends.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace spdlog { class logger; }

namespace switchboard::orchestrator::detail {

class lease_keeper : public std::enable_shared_from_this<lease_keeper> {
 public:
  lease_keeper(const boost::asio::any_io_executor& executor, std::shared_ptr<checkpoint_store> store,
               std::string owner, std::chrono::milliseconds lease, std::shared_ptr<spdlog::logger> logger);

  // A run now holds a lease: the first starts the renewal timer.
  void hold();
  // A run no longer does: the last stops the timer.
  void release();

 private:
  boost::asio::awaitable<void> keep();

  boost::asio::any_io_executor strand_;
  std::shared_ptr<checkpoint_store> store_;
  const std::string owner_;
  const std::chrono::milliseconds lease_;
  std::shared_ptr<spdlog::logger> logger_;
  int holders_ = 0;                             // on strand_
  boost::asio::steady_timer* timer_ = nullptr;  // on strand_, while keep() runs
};

}  // namespace switchboard::orchestrator::detail
