// The SQLite event feed: the `events` table of the store's file, keyed by
// run and position. An append computes the next position inside BEGIN
// IMMEDIATE, so appends from several processes never share one. A waiter
// is woken at once by an append made through this feed. Appends made
// through other connections to the file (another process, another store
// on the same file) cannot notify it: every poll_interval the feed asks
// its connection whether another one committed anything since
// (data_version), and only then do the waiters read again.
#include <switchboard/stores/sqlite_store.hpp>

#include <switchboard/orchestrator/store_support.hpp>

#include "sqlite_connection.hpp"
#include "sqlite_write_batch.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <utility>

namespace switchboard::stores {
namespace {

namespace asio = boost::asio;
using namespace orchestrator;
using namespace sqlite;
namespace store_support = orchestrator::store_support;

constexpr std::chrono::milliseconds poll_interval{100};

class sqlite_event_feed final : public event_feed {
 public:
  sqlite_event_feed(const std::filesystem::path& path, store_clock clock)
      : db_(path, "event feed '" + path.string() + "'"), clock_(store_support::or_system_clock(std::move(clock))) {
    insert_ = db_.prepare(
        "INSERT INTO events (workflow_id, position, event, at_ns) VALUES "
        "(?1, (SELECT COALESCE(MAX(position), 0) + 1 FROM events WHERE workflow_id = ?1), ?2, ?3) RETURNING position");
    read_ = db_.prepare(
        "SELECT position, event, at_ns FROM events WHERE workflow_id = ?1 AND position > ?2 ORDER BY position "
        "LIMIT ?3");
    erase_ = db_.prepare("DELETE FROM events WHERE workflow_id = ?1");
    held_ = db_.prepare("SELECT 1 FROM queue WHERE workflow_id = ?1 AND owner = ?2 AND fence = ?3");
    data_version_ = db_.prepare("PRAGMA data_version");
    asio::post(db_.executor(), [this] { watch_other_connections(); });
  }

  ~sqlite_event_feed() override {
    asio::post(db_.executor(), [this] {
      stopping_ = true;
      watch_.cancel();
    });
    db_.stop();
  }

  asio::awaitable<std::int64_t> append(std::string workflow_id, std::string event) override {
    std::vector<std::string> one;
    one.push_back(std::move(event));
    co_return co_await append_all(std::move(workflow_id), std::move(one));
  }

  // The events of one call land together, at consecutive positions, in a
  // transaction they may share with the appends of other runs ready at the
  // same moment (group commit, sqlite_write_batch.hpp): one commit (and WAL
  // write) where appending one by one costs one per event.
  asio::awaitable<std::int64_t> append_all(std::string workflow_id, std::vector<std::string> events) override {
    store_support::check_feed_id(db_.name(), workflow_id);
    if (events.empty()) co_return 0;
    std::int64_t last = 0;
    auto committed = batch_.submit([&] {
      const auto at_ns = to_nanoseconds(clock_());
      for (const auto& event : events) last = insert_now(workflow_id, event, at_ns);
    });
    co_await std::move(committed);
    wakeups_.notify(workflow_id);
    co_return last;
  }

  // The claim is checked inside the write transaction (BEGIN IMMEDIATE:
  // no other process can claim the thread between the check and the
  // append); refused, the append changes nothing and the batch's other
  // writes still land.
  asio::awaitable<std::int64_t> append_claimed(std::string workflow_id, std::vector<std::string> events,
                                               feed_claim claim) override {
    store_support::check_feed_claim(db_.name(), workflow_id, claim);
    if (events.empty()) co_return 0;
    std::int64_t last = 0;
    auto committed = batch_.submit([&] {
      if (!holds(claim)) store_support::throw_claim_not_held(db_.name(), workflow_id, claim);
      const auto at_ns = to_nanoseconds(clock_());
      for (const auto& event : events) last = insert_now(workflow_id, event, at_ns);
    });
    co_await std::move(committed);
    wakeups_.notify(workflow_id);
    co_return last;
  }

  write_batch::counts write_counts() const noexcept { return batch_.totals(); }

  asio::awaitable<std::vector<feed_event>> read(std::string workflow_id, std::int64_t after,
                                                std::size_t limit) override {
    co_return co_await db_.run([&] { return read_now(workflow_id, after, limit); });
  }

  // Not a coroutine: a stream may wait here for hours, and wait_for_events'
  // frame holds all the wait needs. No polling of its own: appends through
  // other connections wake it through watch_other_connections().
  asio::awaitable<std::vector<feed_event>> wait(std::string workflow_id, std::int64_t after, std::size_t limit,
                                                std::chrono::milliseconds timeout) override {
    return wakeups_.wait_for_events(*this, std::move(workflow_id), after, limit, timeout,
                                    std::chrono::milliseconds::max());
  }

  asio::awaitable<std::size_t> erase(std::string workflow_id) override {
    co_return co_await db_.run([&] {
      statement_use use(erase_);
      db_.bind_text(use.get(), 1, workflow_id);
      db_.step_done(use.get(), "cannot erase the feed of workflow '" + workflow_id + "'");
      return db_.changes();
    });
  }

 private:
  std::int64_t insert_now(const std::string& workflow_id, const std::string& event, std::int64_t at_ns) {
    const auto failure = "cannot append to the feed of workflow '" + workflow_id + "'";
    statement_use use(insert_);
    db_.bind_text(use.get(), 1, workflow_id);
    db_.bind_text(use.get(), 2, event);
    db_.bind_int64(use.get(), 3, at_ns);
    if (!db_.step_row(use.get(), failure)) db_.fail(failure);
    const std::int64_t position = sqlite3_column_int64(use.get(), 0);
    db_.step_done(use.get(), failure);
    return position;
  }

  bool holds(const feed_claim& claim) {
    statement_use use(held_);
    db_.bind_text(use.get(), 1, claim.workflow_id);
    db_.bind_text(use.get(), 2, claim.owner);
    db_.bind_int64(use.get(), 3, claim.fence);
    return db_.step_row(use.get(), "cannot read the claim of '" + claim.workflow_id + "'");
  }

  // Every poll_interval, on the connection's thread: when another
  // connection committed to the file since the last look, every waiter
  // reads again. One query for all of them: each waiter read its run's
  // events every poll_interval before, 10,000 reads a second on this
  // connection's thread for 1,000 idle streams, ahead of the appends.
  void watch_other_connections() {
    if (stopping_) return;
    try {
      statement_use use(data_version_);
      if (!db_.step_row(use.get(), "cannot read the data version")) db_.fail("cannot read the data version");
      const std::int64_t version = sqlite3_column_int64(use.get(), 0);
      if (version != seen_version_) {
        seen_version_ = version;
        wakeups_.notify_all();
      }
    } catch (const std::exception&) {
      wakeups_.notify_all();  // the waiters read, and meet the failure themselves
    }
    watch_.expires_after(poll_interval);
    watch_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) watch_other_connections();
    });
  }

  std::vector<feed_event> read_now(const std::string& workflow_id, std::int64_t after, std::size_t limit) {
    statement_use use(read_);
    db_.bind_text(use.get(), 1, workflow_id);
    db_.bind_int64(use.get(), 2, after);
    db_.bind_int64(use.get(), 3, limit == 0 ? -1 : static_cast<std::int64_t>(limit));
    std::vector<feed_event> events;
    while (db_.step_row(use.get(), "cannot read the feed of workflow '" + workflow_id + "'")) {
      events.push_back({sqlite3_column_int64(use.get(), 0), column_text(use.get(), 1),
                        from_nanoseconds(sqlite3_column_int64(use.get(), 2))});
    }
    return events;
  }

  connection db_;  // first: destroyed after the statements
  write_batch batch_{db_};
  store_clock clock_;
  statement insert_, read_, erase_, held_, data_version_;
  store_support::feed_wakeups wakeups_;
  // watch_other_connections()'s, on the connection's thread only.
  asio::steady_timer watch_{db_.executor()};
  std::int64_t seen_version_ = -1;
  bool stopping_ = false;
};

}  // namespace

std::shared_ptr<event_feed> make_sqlite_event_feed(const std::filesystem::path& path, store_clock clock) {
  if (path.empty()) throw checkpoint_error("event feed: empty SQLite database path");
  return std::make_shared<sqlite_event_feed>(path, std::move(clock));
}

std::optional<sqlite_write_counts> write_counts_of(const event_feed& feed) {
  const auto* sqlite = dynamic_cast<const sqlite_event_feed*>(&feed);
  if (sqlite == nullptr) return std::nullopt;
  const auto counts = sqlite->write_counts();
  return sqlite_write_counts{counts.writes, counts.transactions};
}

}  // namespace switchboard::stores
