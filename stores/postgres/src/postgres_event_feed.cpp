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
#include "pg_group_commit.hpp"
#include "pg_listener.hpp"
#include "pg_rows.hpp"
#include "pg_schema.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <exception>
#include <memory>
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
// Appends of several runs (or several appends of one) waiting together,
// in one statement: $1 the runs, $2 the events, element by element. Each
// run's head moves by its count, locked in run order (so two processes'
// batches cannot deadlock); each event takes the next position of its run,
// in the order given. Answers each element's position, in input order.
const std::string append_many_sql =
    "WITH input AS (SELECT t.k AS workflow_id, t.e AS event, t.i AS idx"
    " FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(k, e, i)),"
    " numbered AS (SELECT workflow_id, event, idx,"
    " row_number() OVER (PARTITION BY workflow_id ORDER BY idx) AS ord,"
    " count(*) OVER (PARTITION BY workflow_id) AS n FROM input),"
    " counts AS (SELECT DISTINCT workflow_id, n FROM numbered),"
    " head AS (INSERT INTO switchboard_feed_heads AS h (workflow_id, last_position)"
    " SELECT workflow_id, n FROM counts ORDER BY workflow_id"
    " ON CONFLICT (workflow_id) DO UPDATE SET last_position = h.last_position + EXCLUDED.last_position"
    " RETURNING h.workflow_id, h.last_position),"
    " now AS (SELECT " SWITCHBOARD_PG_NOW(3) " AS now_ns),"
    " added AS (INSERT INTO switchboard_events (workflow_id, position, event, at_ns)"
    " SELECT b.workflow_id, head.last_position - b.n + b.ord, b.event, now.now_ns"
    " FROM numbered b JOIN head USING (workflow_id), now)"
    " SELECT head.last_position - b.n + b.ord FROM numbered b JOIN head USING (workflow_id) ORDER BY b.idx";
// As append_many_sql, each element with the claim it is made under ($3
// the queued id, '' for none; $4 the owner; $5 the fence). The claims'
// queue rows are locked FOR SHARE, in id order (the run queue's renewal
// locks its rows in the same order), and only rows that still match a
// claim: a claim committed before the lock is seen (read committed re-reads
// a locked row's newest version and checks it again), none can be committed
// after it until this statement commits, and a stale claimant locks nothing
// of the holder's. Elements whose claim is not held take no position (NULL).
const std::string append_claimed_sql =
    "WITH input AS (SELECT t.k AS workflow_id, t.e AS event, t.c AS claim, t.o AS owner, t.f AS fence, t.i AS idx"
    " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS t(k, e, c, o, f, i)),"
    " held AS MATERIALIZED (SELECT q.workflow_id, q.owner, q.fence FROM switchboard_queue q"
    " WHERE (q.workflow_id, q.owner, q.fence) IN (SELECT claim, owner, fence FROM input WHERE claim <> '')"
    " ORDER BY q.workflow_id FOR SHARE OF q),"
    " accepted AS MATERIALIZED (SELECT i.workflow_id, i.event, i.idx FROM input i WHERE i.claim = ''"
    " OR EXISTS (SELECT 1 FROM held h WHERE h.workflow_id = i.claim AND h.owner = i.owner AND h.fence = i.fence)),"
    " numbered AS (SELECT workflow_id, event, idx,"
    " row_number() OVER (PARTITION BY workflow_id ORDER BY idx) AS ord,"
    " count(*) OVER (PARTITION BY workflow_id) AS n FROM accepted),"
    " counts AS (SELECT DISTINCT workflow_id, n FROM numbered),"
    " head AS (INSERT INTO switchboard_feed_heads AS h (workflow_id, last_position)"
    " SELECT workflow_id, n FROM counts ORDER BY workflow_id"
    " ON CONFLICT (workflow_id) DO UPDATE SET last_position = h.last_position + EXCLUDED.last_position"
    " RETURNING h.workflow_id, h.last_position),"
    " now AS (SELECT " SWITCHBOARD_PG_NOW(6) " AS now_ns),"
    " added AS (INSERT INTO switchboard_events (workflow_id, position, event, at_ns)"
    " SELECT b.workflow_id, head.last_position - b.n + b.ord, b.event, now.now_ns"
    " FROM numbered b JOIN head USING (workflow_id), now)"
    " SELECT head.last_position - b.n + b.ord FROM input i LEFT JOIN numbered b ON b.idx = i.idx"
    " LEFT JOIN head ON head.workflow_id = b.workflow_id ORDER BY i.idx";
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

  // One statement for the whole batch: one commit, one round trip. Appends
  // that arrive while one is being written wait and go together in the
  // next statement (group commit), whatever their runs.
  asio::awaitable<std::int64_t> append_all(std::string workflow_id, std::vector<std::string> events) override {
    store_support::check_feed_id(db_.name(), workflow_id);
    auto appending = append_in_group(std::move(workflow_id), std::move(events), std::nullopt);
    co_return co_await std::move(appending);
  }

  // Checked and appended in the statement of its group (append_claimed_sql).
  asio::awaitable<std::int64_t> append_claimed(std::string workflow_id, std::vector<std::string> events,
                                               feed_claim claim) override {
    store_support::check_feed_claim(db_.name(), workflow_id, claim);
    auto appending = append_in_group(std::move(workflow_id), std::move(events), std::move(claim));
    co_return co_await std::move(appending);
  }

  asio::awaitable<std::vector<feed_event>> read(std::string workflow_id, std::int64_t after,
                                                std::size_t limit) override {
    co_return co_await read_now(workflow_id, after, limit);
  }

  // Not a coroutine: a stream may wait here for hours, and wait_for_events'
  // frame holds all the wait needs.
  asio::awaitable<std::vector<feed_event>> wait(std::string workflow_id, std::int64_t after, std::size_t limit,
                                                std::chrono::milliseconds timeout) override {
    // Notifications wake the waiter; the poll only covers one missed.
    const auto poll = listener_.connected() ? options_.poll_while_listening : options_.poll_without_listener;
    return wakeups_.wait_for_events(*this, std::move(workflow_id), after, limit, timeout, poll);
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

  asio::awaitable<std::int64_t> append_in_group(std::string workflow_id, std::vector<std::string> events,
                                                std::optional<feed_claim> claim) {
    if (events.empty()) co_return 0;
    auto queued = std::make_shared<appends::entry>();
    queued->write = {std::move(workflow_id), std::move(events), std::move(claim)};
    // On the pool's thread: the group and its timers need no lock there.
    // Not cancellable (as the interface says): no slot of the caller's is
    // handed to the pool's thread.
    auto token = asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable);
    auto appending = asio::co_spawn(db_.io(), append_in_turn(queued), std::move(token));
    co_await std::move(appending);
    if (queued->error) std::rethrow_exception(queued->error);
    wakeups_.notify(queued->write.workflow_id);
    notifier_.poke(queued->write.workflow_id);
    co_return queued->write.position;
  }

  struct pending_append {
    std::string workflow_id;
    std::vector<std::string> events;
    std::optional<feed_claim> claim;  // appended only while held
    std::int64_t position = 0;        // its last event's
  };
  using appends = group_commit<pending_append>;

  asio::awaitable<void> append_in_turn(std::shared_ptr<appends::entry> mine) {
    auto write_group = [this](const appends::group& group) { return write(group); };
    co_await appends_.take_turn(db_.io(), std::move(mine), write_group);
  }

  // One statement for the batch; a caller whose claim is not held is told
  // so alone, the others' events land.
  asio::awaitable<void> write(const appends::group& batch) {
    const bool claimed = std::any_of(batch.begin(), batch.end(), [](const auto& a) { return a->write.claim.has_value(); });
    if (batch.size() == 1 && !claimed) {
      auto& only = batch.front()->write;
      only.position = co_await db_.run([&](connection& c) -> asio::awaitable<std::int64_t> {
        const std::vector<param> params{only.workflow_id, text_array(only.events), now_param(clock_)};
        const auto rows = co_await c.query(append_sql.c_str(), params, statement_timeout);
        co_return rows.int64(0, 0);
      });
      co_return;
    }
    const auto positions = co_await db_.run([&](connection& c) -> asio::awaitable<std::vector<std::int64_t>> {
      const auto params = group_params(batch, claimed);
      const auto rows = co_await c.query(claimed ? append_claimed_sql.c_str() : append_many_sql.c_str(), params,
                                         statement_timeout);
      std::vector<std::int64_t> out;
      out.reserve(static_cast<std::size_t>(rows.rows()));
      for (int row = 0; row < rows.rows(); ++row) out.push_back(rows.is_null(row, 0) ? 0 : rows.int64(row, 0));
      co_return out;
    });
    std::size_t events = 0;
    for (const auto& a : batch) events += a->write.events.size();
    if (positions.size() != events)
      throw checkpoint_error(db_.name() + ": an append of " + std::to_string(events) + " events answered " +
                             std::to_string(positions.size()) + " positions");
    std::size_t at = 0;
    for (auto& a : batch) {
      auto& append = a->write;
      at += append.events.size();
      append.position = positions[at - 1];
      if (append.position != 0) continue;
      try {
        if (append.claim) store_support::throw_claim_not_held(db_.name(), append.workflow_id, *append.claim);
        throw checkpoint_error(db_.name() + ": an append to the feed of workflow '" + append.workflow_id +
                               "' made under no claim was given no position");
      } catch (...) {
        a->error = std::current_exception();
      }
    }
  }

  // The group's parameters, element by element: each event with its run
  // and, for append_claimed_sql (`claimed`), its caller's claim.
  std::vector<param> group_params(const appends::group& batch, bool claimed) const {
    std::vector<std::string> runs, events, claims, owners, fences;
    for (const auto& a : batch) {
      const auto& append = a->write;
      for (const auto& e : append.events) {
        runs.push_back(append.workflow_id);
        events.push_back(e);
        if (!claimed) continue;
        claims.push_back(append.claim ? append.claim->workflow_id : "");
        owners.push_back(append.claim ? append.claim->owner : "");
        fences.push_back(std::to_string(append.claim ? append.claim->fence : 0));
      }
    }
    if (!claimed) return {text_array(runs), text_array(events), now_param(clock_)};
    return {text_array(runs), text_array(events), text_array(claims), text_array(owners), text_array(fences),
            now_param(clock_)};
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
  appends appends_;  // group commit (pool's thread only)
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
