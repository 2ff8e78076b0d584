#include "lease_keeper.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

namespace switchboard::orchestrator::detail {

namespace asio = boost::asio;

lease_keeper::lease_keeper(const asio::any_io_executor& executor, std::shared_ptr<checkpoint_store> store,
                           std::string owner, std::chrono::milliseconds lease, std::shared_ptr<spdlog::logger> logger)
    : strand_(asio::make_strand(executor)),
      store_(std::move(store)),
      owner_(std::move(owner)),
      lease_(lease),
      logger_(std::move(logger)) {}

void lease_keeper::hold() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->holders_++ == 0 && self->timer_ == nullptr) {
      asio::co_spawn(self->strand_, self->keep(), asio::detached);
    }
  });
}

void lease_keeper::release() {
  asio::post(strand_, [self = shared_from_this()] {
    if (--self->holders_ == 0 && self->timer_ != nullptr) self->timer_->cancel();
  });
}

// Renews a few times per lease while a run holds one. The coroutine holds
// the keeper (its frame keeps `self`), so the store outlives the renewals.
// A release() that cancels the timer and a hold() that comes before this
// coroutine resumes wake it early: it then waits for the renewal that is
// due, instead of renewing at once (a store's renew() walks its runs, and
// runs that start and end one after another did that once per run).
asio::awaitable<void> lease_keeper::keep() {
  auto self = shared_from_this();
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer_ = &timer;
  auto due = std::chrono::steady_clock::now() + lease_ / 3;
  while (holders_ > 0) {
    timer.expires_at(due);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (holders_ == 0) break;
    if (std::chrono::steady_clock::now() < due) continue;  // woken early: not due yet
    due = std::chrono::steady_clock::now() + lease_ / 3;
    try {
      co_await store_->renew(owner_, lease_);
    } catch (const std::exception& e) {
      logger_->warn("cannot renew the leases of owner {}: {}", owner_, e.what());
    }
  }
  timer_ = nullptr;
}

}  // namespace switchboard::orchestrator::detail
