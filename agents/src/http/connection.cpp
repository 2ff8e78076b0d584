#include "connection.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

namespace switchboard::agents::detail {

namespace asio = boost::asio;

// What a pending expiry handler may touch. `generation` tells it whether the
// step it was armed for is still the current one: stop() moves it on, so a
// late handler (its wait had already completed when stop() cancelled it)
// leaves the socket alone, even if the connection is gone or serves another
// request by then.
struct io_deadline::state {
  std::atomic<std::uint64_t> generation{0};
  asio::ip::tcp::socket* socket = nullptr;  // only touched while `generation` matches
  bool expired = false;
};

io_deadline::io_deadline(const asio::any_io_executor& ex) : timer_(ex), state_(std::make_shared<state>()) {}

io_deadline::~io_deadline() { stop(); }

void io_deadline::start(std::chrono::steady_clock::time_point at, asio::ip::tcp::socket& socket,
                        const asio::any_io_executor& handler_executor) {
  state_->socket = &socket;
  state_->expired = false;
  timer_.expires_at(at);
  const auto armed = state_->generation.load(std::memory_order_relaxed);
  timer_.async_wait(asio::bind_executor(handler_executor, [s = state_, armed](boost::system::error_code ec) {
    if (ec || s->generation.load(std::memory_order_acquire) != armed) return;
    s->expired = true;
    boost::system::error_code ignored;
    s->socket->close(ignored);
  }));
}

void io_deadline::stop() {
  state_->generation.fetch_add(1, std::memory_order_release);
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

}  // namespace switchboard::agents::detail
