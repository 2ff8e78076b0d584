#include "stall_watch.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <mutex>

namespace switchboard::net {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

// Shared with the pending expiry handler; `socket` is null once stopped.
struct stall_watch::state {
  state(const asio::any_io_executor& ex, std::chrono::milliseconds idle_for)
      : timer(ex), executor(ex), idle(idle_for) {}

  std::mutex mutex;  // guards socket and the timer's re-arming against stop()
  asio::steady_timer timer;
  asio::any_io_executor executor;
  clock::duration idle;
  asio::ip::tcp::socket* socket = nullptr;
  std::atomic<clock::rep> last_byte{0};  // clock ticks
  std::atomic<bool> stalled{false};

  // Called with `mutex` held.
  static void arm(const std::shared_ptr<state>& self, clock::time_point at) {
    self->timer.expires_at(at);
    self->timer.async_wait(asio::bind_executor(self->executor, [self](boost::system::error_code ec) {
      if (!ec) expire(self);
    }));
  }

  static void expire(const std::shared_ptr<state>& self) {
    std::lock_guard lock(self->mutex);
    if (self->socket == nullptr) return;
    const clock::time_point last{clock::duration(self->last_byte.load(std::memory_order_relaxed))};
    if (clock::now() - last < self->idle) {
      arm(self, last + self->idle);  // bytes came meanwhile: wait for the rest of the silence
      return;
    }
    self->stalled = true;
    boost::system::error_code ignored;
    self->socket->close(ignored);
  }
};

stall_watch::stall_watch(const asio::any_io_executor& handler_executor, std::chrono::milliseconds idle)
    : state_(std::make_shared<state>(handler_executor, idle)), idle_(idle) {}

stall_watch::~stall_watch() { stop(); }

void stall_watch::start(asio::ip::tcp::socket& socket) {
  touch();
  std::lock_guard lock(state_->mutex);
  state_->socket = &socket;
  state::arm(state_, clock::now() + state_->idle);
}

void stall_watch::touch() noexcept {
  state_->last_byte.store(clock::now().time_since_epoch().count(), std::memory_order_relaxed);
}

void stall_watch::stop() {
  std::lock_guard lock(state_->mutex);
  state_->socket = nullptr;
  state_->timer.cancel();
}

bool stall_watch::stalled() const noexcept { return state_->stalled; }

}  // namespace switchboard::net
