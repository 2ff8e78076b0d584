// The PostgreSQL event feed: switchboard_events keyed by run and position,
// and switchboard_feed_heads holding each run's last position. An append
// (of one event or a batch) is one statement that moves the head (its row
// lock orders appends to one run from any number of processes) and inserts
// the events at the positions it moved over. A waiter is woken at once by
// an append of this process and, for appends of other processes, by a
// notification on the feed's channel (pg_listener: after appends commit,
// at most one NOTIFY per tick, whatever the number of events); it also
// reads again every poll interval (a timer, not a busy loop), long while
// the listener is connected, short while it is not.
#include <switchboard/stores/postgres_store.hpp>

#include <switchboard/orchestrator/store_support.hpp>

#include "pg_database.hpp"
#include "pg_listener.hpp"
#include "pg_rows.hpp"
#include "pg_schema.hpp"

#include <utility>

namespace switchboard::stores {
namespace {

namespace asio = boost::asio;
using namespace orchestrator;
using namespace postgres;
namespace store_support = orchestrator::store_support;

// A batch is one statement: the head moves by the batch's size (its row
// lock orders batches from any process), the events take the positions
// just below the new head, in their order, all stamped with one time.
const std::string append_sql =
    "WITH batch AS (SELECT e.event, e.ord FROM unnest($2::text[]) WITH ORDINALITY AS e(event, ord)),"
    " head AS (INSERT INTO switchboard_feed_heads AS h (workflow_id, last_position)"
    " VALUES ($1::text, cardinality($2::text[]))"
    " ON CONFLICT (workflow_id) DO UPDATE SET last_position = h.last_position + cardinality($2::text[])"
    " RETURNING last_position),"
    " n AS (SELECT " SWITCHBOARD_PG_NOW(3) " AS now_ns),"
    " added AS (INSERT INTO switchboard_events (workflow_id, position, event, at_ns)"
    " SELECT $1::text, head.last_position - cardinality($2::text[]) + batch.ord, batch.event, n.now_ns"
    " FROM head, batch, n)"
    " SELECT last_position FROM head";
const std::string read_sql =
    "SELECT position, event, at_ns FROM switchboard_events WHERE workflow_id = $1 AND position > $2::bigint"
    " ORDER BY position LIMIT $3::bigint";
const std::string erase_sql =
    "WITH h AS (DELETE FROM switchboard_feed_heads WHERE workflow_id = $1)"
    " DELETE FROM switchboard_events WHERE workflow_id = $1";

class postgres_event_feed final : public event_feed {
 public:
  postgres_event_feed(const std::string& conninfo, store_clock clock, postgres_wakeup_options options)
      : db_(conninfo, "event feed", feed_pool_size),
        clock_(std::move(clock)),
        options_(options),
        notifier_(db_, db_.channel("feed"), options.notify_tick),
        listener_(db_, db_.channel("feed"), [this](const std::vector<std::string>& payloads) { wake(payloads); }) {}

  asio::awaitable<std::int64_t> append(std::string workflow_id, std::string event) override {
    std::vector<std::string> one;
    one.push_back(std::move(event));
    auto appending = append_all(std::move(workflow_id), std::move(one));  // g++ 12: named before co_await
    co_return co_await std::move(appending);
  }

  // One statement for the whole batch: one commit, one round trip.
  asio::awaitable<std::int64_t> append_all(std::string workflow_id, std::vector<std::string> events) override {
    store_support::check_feed_id(db_.name(), workflow_id);
    if (events.empty()) co_return 0;
    const auto position = co_await db_.run([&](connection& c) -> asio::awaitable<std::int64_t> {
      const std::vector<param> params{workflow_id, text_array(events), now_param(clock_)};
      const auto rows = co_await c.query(append_sql.c_str(), params, statement_timeout);
      co_return rows.int64(0, 0);
    });
    wakeups_.notify(workflow_id);
    notifier_.poke(workflow_id);
    co_return position;
  }

  asio::awaitable<std::vector<feed_event>> read(std::string workflow_id, std::int64_t after,
                                                std::size_t limit) override {
    co_return co_await read_now(workflow_id, after, limit);
  }

  asio::awaitable<std::vector<feed_event>> wait(std::string workflow_id, std::int64_t after, std::size_t limit,
                                                std::chrono::milliseconds timeout) override {
    std::function<asio::awaitable<std::vector<feed_event>>()> reader = [this, &workflow_id, after, limit] {
      return read_now(workflow_id, after, limit);
    };
    // Notifications wake the waiter; the poll only covers one missed.
    const auto poll = listener_.connected() ? options_.poll_while_listening : options_.poll_without_listener;
    // g++ 12: named before co_await (the std::function argument).
    auto waiting = wakeups_.wait_for_events(workflow_id, timeout, poll, std::move(reader));
    co_return co_await std::move(waiting);
  }

  asio::awaitable<std::size_t> erase(std::string workflow_id) override {
    co_return co_await db_.run([&](connection& c) -> asio::awaitable<std::size_t> {
      const std::vector<param> params{workflow_id};
      const auto erased = co_await c.query(erase_sql.c_str(), params, statement_timeout);
      co_return erased.affected();
    });
  }

 private:
  // Other processes appended: to the runs a payload names, one per line,
  // or to any run (an empty payload).
  void wake(const std::vector<std::string>& payloads) {
    for (const auto& payload : payloads) {
      if (payload.empty()) {
        wakeups_.notify_all();
        return;
      }
    }
    for (const auto& payload : payloads) {
      for (std::size_t start = 0; start <= payload.size();) {
        const auto end = std::min(payload.find('\n', start), payload.size());
        wakeups_.notify(std::string_view(payload).substr(start, end - start));
        start = end + 1;
      }
    }
  }

  // `workflow_id` lives in the frame of the read() or wait() that calls it.
  asio::awaitable<std::vector<feed_event>> read_now(const std::string& workflow_id, std::int64_t after,
                                                    std::size_t limit) {
    co_return co_await db_.run([&](connection& c) -> asio::awaitable<std::vector<feed_event>> {
      const param most = limit == 0 ? std::nullopt : int_param(static_cast<std::int64_t>(limit));
      const std::vector<param> params{workflow_id, int_param(after), most};
      const auto rows = co_await c.query(read_sql.c_str(), params, statement_timeout);
      std::vector<feed_event> events;
      events.reserve(static_cast<std::size_t>(rows.rows()));
      for (int row = 0; row < rows.rows(); ++row) {
        events.push_back({rows.int64(row, 0), rows.text(row, 1), from_nanoseconds(rows.int64(row, 2))});
      }
      co_return events;
    });
  }

  // Destroyed in reverse: the listener (which wakes waiters) and the
  // notifier stop before what they use.
  database db_;
  store_clock clock_;  // empty: the server's clock
  postgres_wakeup_options options_;
  store_support::feed_wakeups wakeups_;
  notifier notifier_;
  listener listener_;
};

}  // namespace

std::shared_ptr<event_feed> make_postgres_event_feed(const std::string& conninfo, store_clock clock,
                                                     postgres_wakeup_options wakeups) {
  // Checked before connecting: a bad option opens nothing.
  check_wakeup_options("PostgreSQL event feed", wakeups);
  return std::make_shared<postgres_event_feed>(conninfo, std::move(clock), wakeups);
}

}  // namespace switchboard::stores
