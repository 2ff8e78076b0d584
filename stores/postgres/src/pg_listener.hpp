// How a store object hears of other processes' writes, and tells them of
// its own, with PostgreSQL's LISTEN/NOTIFY: wake-ups only, never data. A
// notification means "look again"; what changed is read from the tables.
// Its payload may name what to look at (keys, one per line: the feed's
// runs), or be empty: look at everything. Polling stays the fallback (a
// notification can be missed while a listener reconnects, or on a network
// path that silently died), so neither class is needed for correctness,
// only for speed.
//
// listener: one connection of its own (outside the pool) that runs
// `LISTEN channel` and is watched on the database's io_context. Every read
// that brings notifications calls `on_wake` once with their payloads,
// however many came (those this object's own pool sent are left out: its
// writes woke its waiters when they committed). When the connection drops
// (a server restart, pg_terminate_backend) it reconnects with a growing
// backoff (100 ms, doubling, at most 5 s) and, once listening again, calls
// `on_wake` with one empty payload (something may have been missed
// meanwhile: look at everything). `on_wake` runs on the io thread: quick.
//
// notifier: coalesces NOTIFYs. A NOTIFY takes a global lock at commit, so
// one per written row would serialise every writer of the database; after
// a write commits, the object calls poke(), and the notifier sends at most
// one `pg_notify(channel, payload)` per tick, on a pooled connection, in a
// transaction of its own: the first poke after a quiet tick is sent at
// once, every poke during a tick is covered by one NOTIFY at its end. The
// payload names the keys poked during the tick, or is empty when a poke
// named none, a key holds a line break, or they would not fit.
//
// Thread-safety: poke() and connected() from any thread. Both objects must
// be destroyed before the database they use; their destructors stop them
// (a notifier first sends the NOTIFY a poke is owed).
#pragma once

#include "pg_database.hpp"

#include <switchboard/stores/postgres_store.hpp>

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <vector>

namespace switchboard::stores::postgres {

// Throws checkpoint_error naming `store_name` and the option when a poll
// interval is not positive (a waiter would spin) or the tick is negative.
void check_wakeup_options(const std::string& store_name, const postgres_wakeup_options& options);

class listener {
 public:
  // Starts listening, and waits for the first attempt to connect and LISTEN
  // (a failed one is logged and retried in the background).
  using wake_function = std::function<void(const std::vector<std::string>& payloads)>;
  listener(database& db, std::string channel, wake_function on_wake);
  ~listener();
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;

  // Whether LISTEN is in force now (so waiters may poll less often).
  bool connected() const noexcept { return connected_.load(); }

 private:
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<void> listen_until_lost();
  void first_attempt_over();

  database& db_;
  std::string channel_;
  wake_function on_wake_;
  std::atomic<bool> connected_{false};
  // On the io thread only.
  boost::asio::steady_timer backoff_timer_;
  boost::asio::cancellation_signal stop_signal_;
  bool stopping_ = false;
  bool first_attempt_done_ = false;
  std::promise<void> first_attempt_;
  std::promise<void> finished_;
};

class notifier {
 public:
  notifier(database& db, std::string channel, std::chrono::milliseconds tick);
  ~notifier();
  notifier(const notifier&) = delete;
  notifier& operator=(const notifier&) = delete;

  // A write committed: other processes shall hear of it within a tick.
  // `key` names what changed (a run), or nothing ("").
  void poke(std::string key = {});

 private:
  boost::asio::awaitable<void> send_while_owed();
  std::string take_payload();

  database& db_;
  std::string channel_;
  std::chrono::milliseconds tick_;
  // On the io thread only.
  boost::asio::steady_timer tick_timer_;
  bool sending_ = false;  // send_while_owed() is running
  bool owed_ = false;     // a poke came that no NOTIFY sent yet covers
  std::set<std::string> keys_;  // named by those pokes
  std::size_t keys_bytes_ = 0;  // their length, a line each
  bool unnamed_ = false;        // one of them named nothing
  bool stopping_ = false;
  std::chrono::steady_clock::time_point last_sent_{};
  std::function<void()> on_idle_;  // set by the destructor while sending
};

}  // namespace switchboard::stores::postgres
