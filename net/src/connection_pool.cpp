#include "connection_pool.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>

#include <algorithm>

namespace switchboard::net {

namespace asio = boost::asio;

// A request waiting for a connection. The channel wakes it; `granted` and
// `conn` (guarded by the pool's mutex) say what it got.
struct connection_pool::waiter {
  waiter(const asio::any_io_executor& ex, asio::execution_context* ctx) : signal(ex, 1), context(ctx) {}
  asio::experimental::concurrent_channel<void(boost::system::error_code)> signal;
  asio::execution_context* context;
  bool granted = false;
  std::unique_ptr<connection> conn;  // granted with nullptr: a slot to open a new one
};

namespace {

// Tells pools when an execution context shuts down (an io_context being
// destroyed), so pooled sockets bound to it are closed before its services
// are destroyed, and a later context at the same address is not mistaken
// for it.
class context_watch_service final : public asio::execution_context::service {
 public:
  static inline asio::execution_context::id id;
  explicit context_watch_service(asio::execution_context& ctx) : service(ctx) {}

  void add(connection_pool* pool) { pools_.push_back(pool); }
  void remove(connection_pool* pool) { std::erase(pools_, pool); }

 private:
  void shutdown() override;
  std::vector<connection_pool*> pools_;  // guarded by registry_mutex()
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

void context_watch_service::shutdown() {
  std::lock_guard lock(registry_mutex());
  for (auto* pool : pools_) pool->drop_context(&context());
  pools_.clear();
}

}  // namespace

connection_pool::connection_pool(std::size_t max_connections, std::chrono::milliseconds idle_timeout)
    : max_connections_(std::max<std::size_t>(1, max_connections)), idle_timeout_(idle_timeout) {}

connection_pool::~connection_pool() {
  std::lock_guard lock(registry_mutex());
  for (auto* ctx : watched_) asio::use_service<context_watch_service>(*ctx).remove(this);
}

void connection_pool::watch_context(asio::execution_context* ctx) {
  if (last_watched_.load(std::memory_order_acquire) == ctx) return;
  std::lock_guard lock(registry_mutex());
  if (std::find(watched_.begin(), watched_.end(), ctx) == watched_.end()) {
    asio::use_service<context_watch_service>(*ctx).add(this);
    watched_.push_back(ctx);
  }
  last_watched_ = ctx;
}

void connection_pool::drop_context(asio::execution_context* ctx) {
  std::vector<std::unique_ptr<connection>> doomed;
  std::deque<std::shared_ptr<waiter>> abandoned;
  {
    std::lock_guard lock(mutex_);
    for (auto it = idle_.begin(); it != idle_.end();) {
      if ((*it)->context == ctx) {
        doomed.push_back(std::move(*it));
        it = idle_.erase(it);
        --open_;
      } else {
        ++it;
      }
    }
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if ((*it)->context == ctx) {
        abandoned.push_back(std::move(*it));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::erase(watched_, ctx);  // the caller holds the registry mutex
  last_watched_ = nullptr;
}

void connection_pool::drop_expired_locked(clock::time_point now) {
  const auto expired = [&](const std::unique_ptr<connection>& c) { return now - c->idle_since > idle_timeout_; };
  const auto removed = std::erase_if(idle_, expired);
  open_ -= removed;
}

asio::awaitable<std::unique_ptr<connection>> connection_pool::acquire(clock::time_point deadline) {
  const auto ex = co_await asio::this_coro::executor;
  auto* const ctx = &asio::query(ex, asio::execution::context);
  watch_context(ctx);

  std::shared_ptr<waiter> w;
  std::unique_ptr<connection> found;
  {
    std::lock_guard lock(mutex_);
    drop_expired_locked(clock::now());
    const auto same_context = std::find_if(idle_.rbegin(), idle_.rend(),
                                           [&](const auto& c) { return c->context == ctx; });
    if (same_context != idle_.rend()) {
      found = std::move(*same_context);
      idle_.erase(std::next(same_context).base());
    } else if (open_ < max_connections_) {
      ++open_;  // the caller opens a new connection in this slot
    } else if (!idle_.empty()) {
      idle_.erase(idle_.begin());  // an idle connection of another context gives up its slot
    } else {
      w = std::make_shared<waiter>(ex, ctx);
      waiters_.push_back(w);
    }
  }
  if (!w) co_return found;

  asio::steady_timer timer(ex);
  timer.expires_at(deadline);
  try {
    using namespace asio::experimental::awaitable_operators;
    co_await (w->signal.async_receive(asio::as_tuple(asio::use_awaitable)) ||
              timer.async_wait(asio::as_tuple(asio::use_awaitable)));
  } catch (...) {
    // Cancelled while waiting; fall through to see whether a grant raced in.
  }

  {
    std::unique_lock lock(mutex_);
    if (w->granted) {
      found = std::move(w->conn);
      lock.unlock();
      const auto cs = co_await asio::this_coro::cancellation_state;
      if (cs.cancelled() == asio::cancellation_type::none) co_return found;
      release(std::move(found), true);  // hand the grant on before reporting the cancellation
      throw boost::system::system_error(asio::error::operation_aborted);
    }
    std::erase(waiters_, w);
  }
  const auto cs = co_await asio::this_coro::cancellation_state;
  if (cs.cancelled() != asio::cancellation_type::none) {
    throw boost::system::system_error(asio::error::operation_aborted);
  }
  throw boost::system::system_error(boost::beast::error::timeout);
}

void connection_pool::release(std::unique_ptr<connection> c, bool reusable) {
  std::shared_ptr<waiter> wake;
  {
    std::lock_guard lock(mutex_);
    if (!reusable) c.reset();
    if (c) {
      c->idle_since = clock::now();
      c->reused = true;
    }
    if (!waiters_.empty()) {
      wake = std::move(waiters_.front());
      waiters_.pop_front();
      if (c && c->context != wake->context) c.reset();  // wrong reactor: pass the slot instead
      wake->conn = std::move(c);
      wake->granted = true;
    } else if (c) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
    }
  }
  // Outside the lock: the waiter may resume inline on this thread.
  if (wake) wake->signal.try_send(boost::system::error_code{});
}

std::size_t connection_pool::open_connections() const {
  std::lock_guard lock(mutex_);
  return open_;
}

std::size_t connection_pool::idle_connections() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

}  // namespace switchboard::net
