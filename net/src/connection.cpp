#include "connection.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace switchboard::net {

namespace asio = boost::asio;

// What a pending expiry handler may touch, under `mutex`. `generation` tells
// it whether the step it was armed for is still the current one: stop()
// moves it on and forgets the socket, so a late handler (its wait had already
// completed when stop() cancelled it) leaves the socket alone even if the
// connection serves another request or is gone by then — also when the
// handler runs on another thread than the coroutine.
struct io_deadline::state {
  std::mutex mutex;
  std::uint64_t generation = 0;
  asio::ip::tcp::socket* socket = nullptr;  // null outside a step
  std::atomic<bool> expired{false};
};

io_deadline::io_deadline(const asio::any_io_executor& ex) : timer_(ex), state_(std::make_shared<state>()) {}

io_deadline::~io_deadline() { stop(); }

void io_deadline::start(std::chrono::steady_clock::time_point at, asio::ip::tcp::socket& socket,
                        const asio::any_io_executor& handler_executor) {
  std::uint64_t armed = 0;
  {
    std::lock_guard lock(state_->mutex);
    state_->socket = &socket;
    state_->expired = false;
    armed = state_->generation;
  }
  timer_.expires_at(at);
  timer_.async_wait(asio::bind_executor(handler_executor, [s = state_, armed](boost::system::error_code ec) {
    if (ec) return;
    std::lock_guard lock(s->mutex);
    if (s->generation != armed || s->socket == nullptr) return;
    s->expired = true;
    boost::system::error_code ignored;
    s->socket->close(ignored);
  }));
}

void io_deadline::stop() {
  {
    std::lock_guard lock(state_->mutex);
    ++state_->generation;
    state_->socket = nullptr;
  }
  timer_.cancel();
}

bool io_deadline::expired() const noexcept { return state_->expired; }

connection::connection(const asio::any_io_executor& ex, asio::ssl::context* tls_context)
    : deadline(ex), context(&asio::query(ex, asio::execution::context)) {
  if (tls_context) {
    tls.emplace(ex, *tls_context);
  } else {
    plain.emplace(ex);
  }
}

}  // namespace switchboard::net
