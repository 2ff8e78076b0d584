// The PostgreSQL run queue: switchboard_queue, one row per queued run
// (ready when it has no owner or its lease lapsed). claim_next() is one
// statement: it picks the oldest ready row with FOR UPDATE SKIP LOCKED and
// takes it, so racing claimants in any number of processes each get a
// different run (a row another claimant holds is skipped, not waited for),
// and a row taken by a claimant that committed first is re-checked and
// passed over. wait_for_ready() ends at an enqueue of this process or a
// notification on the queue's channel (pg_listener: after enqueues commit,
// at most one NOTIFY per tick from each process), else at its timeout.
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

const std::string enqueue_sql =
    "INSERT INTO switchboard_queue (workflow_id, workflow_name, reason, payload, owner, lease_expires_ns, fence,"
    " enqueue_seq) VALUES ($1, $2, $3, $4, '', 0, 0, nextval('switchboard_enqueue_seq'))"
    " ON CONFLICT (workflow_id) DO NOTHING";
// The previous claimant's owner (read in SET, before the update) says why
// the run is ready again: it had one, so its lease lapsed.
// The fence comes from one sequence for the whole queue: a run done and
// enqueued again never gets a fence it had (its row went with done()).
const std::string claim_next_sql =
    "WITH n AS (SELECT " SWITCHBOARD_PG_NOW(3) " AS now_ns),"
    " next AS (SELECT q.workflow_id, q.owner AS previous_owner FROM switchboard_queue q, n"
    " WHERE q.owner = '' OR q.lease_expires_ns <= n.now_ns"
    " ORDER BY q.enqueue_seq LIMIT 1 FOR UPDATE OF q SKIP LOCKED)"
    " UPDATE switchboard_queue q SET owner = $1, lease_expires_ns = n.now_ns + $2::bigint,"
    " fence = nextval('switchboard_claim_fence_seq'),"
    " reason = CASE WHEN q.owner <> '' THEN 'lease_lapsed' ELSE q.reason END"
    " FROM next, n WHERE q.workflow_id = next.workflow_id"
    " RETURNING q.workflow_id, q.workflow_name, q.reason, q.payload, q.lease_expires_ns, q.fence, next.previous_owner";
// The rows are locked in id order, the order in which a claimed append to
// the event feed locks them (FOR SHARE): the two never wait on each other
// in a cycle.
const std::string renew_sql =
    "WITH mine AS (SELECT workflow_id FROM switchboard_queue WHERE owner = $1 AND owner <> ''"
    " ORDER BY workflow_id FOR NO KEY UPDATE)"
    " UPDATE switchboard_queue q SET lease_expires_ns = " SWITCHBOARD_PG_NOW(3) " + $2::bigint"
    " FROM mine WHERE q.workflow_id = mine.workflow_id AND q.owner = $1";
const std::string done_sql = "DELETE FROM switchboard_queue WHERE workflow_id = $1 AND fence = $2::bigint";
const std::string fence_sql = "SELECT fence FROM switchboard_queue WHERE workflow_id = $1";
const std::string count_sql = "SELECT count(*) FROM switchboard_queue";

ready_reason reason_of(const std::string& text) {
  if (text == "resumed") return ready_reason::resumed;
  if (text == "lease_lapsed") return ready_reason::lease_lapsed;
  return ready_reason::new_run;
}

std::int64_t nanoseconds_of(std::chrono::milliseconds lease) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(lease).count();
}

class postgres_run_queue final : public run_queue {
 public:
  postgres_run_queue(const std::string& conninfo, store_clock clock, postgres_wakeup_options options)
      : db_(conninfo, "run queue", queue_pool_size),
        clock_(std::move(clock)),
        notifier_(db_, db_.channel("queue"), options.notify_tick),
        listener_(db_, db_.channel("queue"), [this](const std::vector<std::string>&) { wakeups_.notify(); }) {}

  asio::awaitable<void> enqueue(enqueue_request request) override {
    store_support::check_enqueue(db_.name(), request);
    co_await db_.run([&](connection& c) -> asio::awaitable<void> {
      const std::vector<param> params{request.workflow_id, request.workflow_name,
                                      std::string(to_string(request.why)), request.payload};
      const auto inserted = co_await c.query(enqueue_sql.c_str(), params, statement_timeout);
      if (inserted.affected() == 0) store_support::throw_queued(db_.name(), request.workflow_id);
    });
    wakeups_.notify();
    notifier_.poke();
  }

  asio::awaitable<std::optional<queued_run>> claim_next(std::string owner, std::chrono::milliseconds lease) override {
    store_support::check_owner(db_.name(), owner);
    wakeups_.looking();
    co_return co_await db_.run([&](connection& c) -> asio::awaitable<std::optional<queued_run>> {
      const std::vector<param> params{owner, int_param(nanoseconds_of(lease)), now_param(clock_)};
      const auto rows = co_await c.query(claim_next_sql.c_str(), params, statement_timeout);
      if (rows.rows() == 0) co_return std::nullopt;
      queued_run run;
      run.workflow_id = rows.text(0, 0);
      run.workflow_name = rows.text(0, 1);
      run.why = reason_of(rows.text(0, 2));
      run.payload = rows.text(0, 3);
      run.owner = owner;
      run.lease_expires = from_nanoseconds(rows.int64(0, 4));
      run.fence = rows.int64(0, 5);
      run.previous_owner = rows.text(0, 6);
      co_return run;
    });
  }

  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    co_return co_await db_.run([&](connection& c) -> asio::awaitable<std::size_t> {
      const std::vector<param> params{owner, int_param(nanoseconds_of(lease)), now_param(clock_)};
      const auto renewed = co_await c.query(renew_sql.c_str(), params, statement_timeout);
      co_return renewed.affected();
    });
  }

  // Removes the row only with the caller's fence; when nothing was removed,
  // reads why (gone, or claimed by someone else) for the shared refusal.
  asio::awaitable<void> done(std::string workflow_id, std::int64_t fence) override {
    co_await db_.run([&](connection& c) -> asio::awaitable<void> {
      const std::vector<param> params{workflow_id, int_param(fence)};
      const auto removed = co_await c.query(done_sql.c_str(), params, statement_timeout);
      if (removed.affected() > 0) co_return;
      const std::vector<param> id{workflow_id};
      const auto rows = co_await c.query(fence_sql.c_str(), id, statement_timeout);
      const std::optional<std::int64_t> stored =
          rows.rows() > 0 ? std::optional<std::int64_t>(rows.int64(0, 0)) : std::nullopt;
      store_support::check_done(db_.name(), workflow_id, stored, fence);
      // The fence matches now: the run was removed and queued again between
      // the two statements. That is another claim's run, not this one's.
      throw checkpoint_error(db_.name() + ": workflow '" + workflow_id + "' changed while it was being removed");
    });
  }

  asio::awaitable<void> wait_for_ready(std::chrono::milliseconds timeout) override {
    auto waiting = wakeups_.wait(timeout);  // g++ 12: named before co_await
    co_await std::move(waiting);
  }

  asio::awaitable<std::size_t> size() override {
    co_return co_await db_.run([&](connection& c) -> asio::awaitable<std::size_t> {
      const std::vector<param> none;
      const auto rows = co_await c.query(count_sql.c_str(), none, statement_timeout);
      co_return static_cast<std::size_t>(rows.int64(0, 0));
    });
  }

 private:
  // Destroyed in reverse: the listener (which wakes waiters) and the
  // notifier stop before what they use.
  database db_;
  store_clock clock_;  // empty: the server's clock
  store_support::queue_wakeups wakeups_;
  notifier notifier_;
  listener listener_;
};

}  // namespace

std::shared_ptr<run_queue> make_postgres_run_queue(const std::string& conninfo, store_clock clock,
                                                   postgres_wakeup_options wakeups) {
  // Checked before connecting: a bad option opens nothing.
  check_wakeup_options("PostgreSQL run queue", wakeups);
  return std::make_shared<postgres_run_queue>(conninfo, std::move(clock), wakeups);
}

}  // namespace switchboard::stores
