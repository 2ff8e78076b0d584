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
asio::awaitable<void> lease_keeper::keep() {
  auto self = shared_from_this();
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer_ = &timer;
  while (holders_ > 0) {
    timer.expires_after(lease_ / 3);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (holders_ == 0) break;
    try {
      co_await store_->renew(owner_, lease_);
    } catch (const std::exception& e) {
      logger_->warn("cannot renew the leases of owner {}: {}", owner_, e.what());
    }
  }
  timer_ = nullptr;
}

}  // namespace switchboard::orchestrator::detail
