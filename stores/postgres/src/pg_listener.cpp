#include "pg_listener.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

namespace switchboard::stores::postgres {
namespace {

namespace asio = boost::asio;

// How long the listener waits before connecting again: short at first (a
// terminated backend, a quick restart), growing while the server stays
// away so a fleet of hubs does not hammer it.
constexpr std::chrono::milliseconds first_backoff{100};
constexpr std::chrono::milliseconds longest_backoff{5'000};
// PostgreSQL takes payloads below 8000 bytes; past this, name nothing.
constexpr std::size_t longest_payload = 4'000;

}  // namespace

void check_wakeup_options(const std::string& store_name, const postgres_wakeup_options& options) {
  const auto refuse = [&](const char* option, std::chrono::milliseconds value, const char* must) {
    throw orchestrator::checkpoint_error(store_name + ": postgres_wakeup_options." + option + " is " +
                                         std::to_string(value.count()) + " ms; it must be " + must);
  };
  if (options.notify_tick.count() < 0) refuse("notify_tick", options.notify_tick, "0 or more");
  if (options.poll_while_listening.count() <= 0) {
    refuse("poll_while_listening", options.poll_while_listening, "more than 0");
  }
  if (options.poll_without_listener.count() <= 0) {
    refuse("poll_without_listener", options.poll_without_listener, "more than 0");
  }
}

listener::listener(database& db, std::string channel, wake_function on_wake)
    : db_(db), channel_(std::move(channel)), on_wake_(std::move(on_wake)), backoff_timer_(db.io()) {
  auto first = first_attempt_.get_future();
  auto done = [this](std::exception_ptr) { finished_.set_value(); };
  asio::co_spawn(db_.io(), run(), asio::bind_cancellation_slot(stop_signal_.slot(), std::move(done)));
  first.wait();
}

listener::~listener() {
  asio::post(db_.io(), [this] {
    stopping_ = true;
    backoff_timer_.cancel();
    stop_signal_.emit(asio::cancellation_type::terminal);
  });
  finished_.get_future().wait();
}

asio::awaitable<void> listener::run() {
  auto backoff = first_backoff;
  bool told = false;  // the log heard of this outage: later attempts go to debug
  while (!stopping_) {
    std::string failure;
    try {
      co_await listen_until_lost();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    const bool was_listening = connected_.exchange(false);
    first_attempt_over();
    if (stopping_) break;
    if (was_listening) {
      backoff = first_backoff;
      told = false;
    }
    if (!told) {
      spdlog::warn("postgres: {}: cannot listen for other processes' writes ({}); reconnecting with a backoff, "
                   "polling meanwhile",
                   db_.name(), failure);
      told = true;
    } else {
      spdlog::debug("postgres: {}: still cannot listen for other processes' writes ({}); retrying in {} ms",
                    db_.name(), failure, backoff.count());
    }
    backoff_timer_.expires_after(backoff);
    auto pause = backoff_timer_.async_wait(asio::as_tuple(asio::use_awaitable));  // g++ 12: named first
    co_await std::move(pause);
    backoff = std::min(backoff * 2, longest_backoff);
  }
  first_attempt_over();
}

// Returns only by throwing: the connection was lost, or the listener is
// stopping (its coroutine was cancelled).
asio::awaitable<void> listener::listen_until_lost() {
  auto opening = db_.open_dedicated();  // g++ 12: named before co_await
  auto c = co_await std::move(opening);
  // The channel is "switchboard_<topic>_<hex>": nothing in it needs escaping.
  const std::string listen_sql = "LISTEN \"" + channel_ + "\"";
  const std::vector<param> none;
  co_await c->query(listen_sql.c_str(), none, statement_timeout);
  connected_ = true;
  if (first_attempt_done_) {
    spdlog::info("postgres: {}: listening for other processes' writes again", db_.name());
  }
  // Writes committed while nobody listened were not announced to us. (The
  // first time, before the constructor returns: nobody waits yet, and a
  // wake-up arriving later would end a wait for nothing.)
  const std::vector<std::string> everything{""};
  on_wake_(everything);
  first_attempt_over();
  for (;;) {
    const auto heard = co_await c->next_notifications();
    // This object's own writes woke its waiters already, when they committed.
    std::vector<std::string> payloads;
    for (const auto& n : heard) {
      if (!db_.is_own_session(n.sender)) payloads.push_back(n.payload);
    }
    if (!payloads.empty()) on_wake_(payloads);
  }
}

void listener::first_attempt_over() {
  if (first_attempt_done_) return;
  first_attempt_done_ = true;
  first_attempt_.set_value();
}

notifier::notifier(database& db, std::string channel, std::chrono::milliseconds tick)
    : db_(db), channel_(std::move(channel)), tick_(tick), tick_timer_(db.io()) {}

notifier::~notifier() {
  std::promise<void> idle;
  asio::post(db_.io(), [this, &idle] {
    stopping_ = true;
    if (!sending_) {
      idle.set_value();
      return;
    }
    tick_timer_.cancel();  // a NOTIFY owed goes now, not at the end of the tick
    on_idle_ = [&idle] { idle.set_value(); };
  });
  idle.get_future().wait();
}

void notifier::poke(std::string key) {
  asio::post(db_.io(), [this, key = std::move(key)]() mutable {
    owed_ = true;
    if (key.empty()) {
      unnamed_ = true;
    } else if (!unnamed_) {
      const auto length = key.size() + 1;
      if (keys_.insert(std::move(key)).second) keys_bytes_ += length;
    }
    // Past what a payload holds the NOTIFY names nothing: stop collecting.
    if (unnamed_ || keys_bytes_ > longest_payload) {
      unnamed_ = true;
      keys_.clear();
      keys_bytes_ = 0;
    }
    if (sending_ || stopping_) return;
    sending_ = true;
    asio::co_spawn(db_.io(), send_while_owed(), asio::detached);
  });
}

asio::awaitable<void> notifier::send_while_owed() {
  while (owed_) {
    // At most one NOTIFY per tick: wait out the rest of the tick of the
    // last one (a poke after a quiet tick goes at once).
    tick_timer_.expires_at(last_sent_ + tick_);
    if (!stopping_) {
      auto rest_of_tick = tick_timer_.async_wait(asio::as_tuple(asio::use_awaitable));  // g++ 12: named first
      co_await std::move(rest_of_tick);
    }
    owed_ = false;  // this NOTIFY covers every poke so far
    const std::vector<param> params{channel_, take_payload()};
    try {
      auto sending = db_.run([&params](connection& c) -> asio::awaitable<void> {
        co_await c.query("SELECT pg_notify($1, $2)", params, statement_timeout);
      });
      co_await std::move(sending);
    } catch (const std::exception& e) {
      // Other processes still find the write when they next poll.
      spdlog::warn("postgres: cannot tell other processes of a write ({}); they will find it by polling", e.what());
    }
    last_sent_ = std::chrono::steady_clock::now();
  }
  sending_ = false;
  if (on_idle_) on_idle_();
}

// The keys poked since the last NOTIFY, one per line; "" (look at
// everything) when a poke named none, a key holds a line break, or they
// would not fit.
std::string notifier::take_payload() {
  std::string payload;
  bool everything = unnamed_;
  for (const auto& key : keys_) {
    if (everything) break;
    if (key.find('\n') != std::string::npos || payload.size() + key.size() + 1 > longest_payload) {
      everything = true;
    } else {
      if (!payload.empty()) payload += '\n';
      payload += key;
    }
  }
  keys_.clear();
  keys_bytes_ = 0;
  unnamed_ = false;
  return everything ? std::string() : payload;
}

}  // namespace switchboard::stores::postgres
