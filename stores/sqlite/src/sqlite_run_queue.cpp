// The SQLite run queue: the `queue` table of the store's file, one row per
// queued run (ready when it has no owner or its lease lapsed). claim_next()
// picks and updates the oldest ready row inside BEGIN IMMEDIATE, so of
// racing claimants in any number of processes exactly one gets it.
#include <switchboard/stores/sqlite_store.hpp>

#include <switchboard/orchestrator/store_support.hpp>

#include "sqlite_connection.hpp"

#include <utility>

namespace switchboard::stores {
namespace {

namespace asio = boost::asio;
using namespace orchestrator;
using namespace sqlite;
namespace store_support = orchestrator::store_support;

std::string_view reason_text(ready_reason why) { return to_string(why); }

ready_reason reason_of(const std::string& text) {
  if (text == "resumed") return ready_reason::resumed;
  if (text == "lease_lapsed") return ready_reason::lease_lapsed;
  return ready_reason::new_run;
}

class sqlite_run_queue final : public run_queue {
 public:
  sqlite_run_queue(const std::filesystem::path& path, store_clock clock)
      : db_(path, "run queue '" + path.string() + "'"), clock_(store_support::or_system_clock(std::move(clock))) {
    insert_ = db_.prepare(
        "INSERT INTO queue (workflow_id, workflow_name, reason, payload, owner, lease_expires_ns, fence, enqueue_seq) "
        "VALUES (?1, ?2, ?3, ?4, '', 0, 0, (SELECT COALESCE(MAX(enqueue_seq), 0) + 1 FROM queue))");
    select_fence_ = db_.prepare("SELECT fence FROM queue WHERE workflow_id = ?1");
    next_ready_ = db_.prepare(
        "SELECT workflow_id, workflow_name, reason, payload, owner, fence FROM queue "
        "WHERE owner = '' OR lease_expires_ns <= ?1 ORDER BY enqueue_seq LIMIT 1");
    claim_ = db_.prepare(
        "UPDATE queue SET owner = ?2, lease_expires_ns = ?3, fence = ?5, reason = ?4 WHERE workflow_id = ?1");
    // One counter for the whole queue: a run done and enqueued again never
    // gets a fence it had (its row, and its fence, went with done()).
    next_fence_ = db_.prepare(
        "INSERT INTO queue_fences (id, last_fence) VALUES (1, (SELECT COALESCE(MAX(fence), 0) + 1 FROM queue)) "
        "ON CONFLICT (id) DO UPDATE SET last_fence = last_fence + 1 RETURNING last_fence");
    renew_ = db_.prepare("UPDATE queue SET lease_expires_ns = ?2 WHERE owner = ?1 AND owner <> ''");
    remove_ = db_.prepare("DELETE FROM queue WHERE workflow_id = ?1");
    count_ = db_.prepare("SELECT COUNT(*) FROM queue");
  }

  ~sqlite_run_queue() override { db_.stop(); }

  asio::awaitable<void> enqueue(enqueue_request request) override {
    store_support::check_enqueue(db_.name(), request);
    co_await db_.run([&] {
      connection::transaction tx(db_);
      if (fence_of(request.workflow_id)) store_support::throw_queued(db_.name(), request.workflow_id);
      statement_use use(insert_);
      db_.bind_text(use.get(), 1, request.workflow_id);
      db_.bind_text(use.get(), 2, request.workflow_name);
      db_.bind_text(use.get(), 3, reason_text(request.why));
      db_.bind_text(use.get(), 4, request.payload);
      db_.step_done(use.get(), "cannot enqueue workflow '" + request.workflow_id + "'");
      tx.commit();
    });
  }

  asio::awaitable<std::optional<queued_run>> claim_next(std::string owner, std::chrono::milliseconds lease) override {
    store_support::check_owner(db_.name(), owner);
    co_return co_await db_.run([&] { return claim_now(owner, lease); });
  }

  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    co_return co_await db_.run([&] {
      statement_use use(renew_);
      db_.bind_text(use.get(), 1, owner);
      db_.bind_int64(use.get(), 2, to_nanoseconds(clock_() + lease));
      db_.step_done(use.get(), "cannot renew the queue leases of owner '" + owner + "'");
      return db_.changes();
    });
  }

  asio::awaitable<void> done(std::string workflow_id, std::int64_t fence) override {
    co_await db_.run([&] {
      connection::transaction tx(db_);
      store_support::check_done(db_.name(), workflow_id, fence_of(workflow_id), fence);
      statement_use use(remove_);
      db_.bind_text(use.get(), 1, workflow_id);
      db_.step_done(use.get(), "cannot remove workflow '" + workflow_id + "' from the queue");
      tx.commit();
    });
  }

  asio::awaitable<std::size_t> size() override {
    co_return co_await db_.run([&] {
      statement_use use(count_);
      db_.step_row(use.get(), "cannot count the queue");
      return static_cast<std::size_t>(sqlite3_column_int64(use.get(), 0));
    });
  }

 private:
  std::optional<std::int64_t> fence_of(const std::string& workflow_id) {
    statement_use use(select_fence_);
    db_.bind_text(use.get(), 1, workflow_id);
    if (!db_.step_row(use.get(), "cannot read the queue")) return std::nullopt;
    return sqlite3_column_int64(use.get(), 0);
  }

  std::optional<queued_run> claim_now(const std::string& owner, std::chrono::milliseconds lease) {
    connection::transaction tx(db_);
    const auto now = clock_();
    queued_run run;
    {
      statement_use use(next_ready_);
      db_.bind_int64(use.get(), 1, to_nanoseconds(now));
      if (!db_.step_row(use.get(), "cannot read the queue")) return std::nullopt;
      run.workflow_id = column_text(use.get(), 0);
      run.workflow_name = column_text(use.get(), 1);
      run.previous_owner = column_text(use.get(), 4);
      run.why = run.previous_owner.empty() ? reason_of(column_text(use.get(), 2)) : ready_reason::lease_lapsed;
      run.payload = column_text(use.get(), 3);
    }
    {
      statement_use use(next_fence_);
      if (!db_.step_row(use.get(), "cannot number the claim")) db_.fail("cannot number the claim");
      run.fence = sqlite3_column_int64(use.get(), 0);
      db_.step_done(use.get(), "cannot number the claim");
    }
    run.owner = owner;
    run.lease_expires = now + lease;
    statement_use use(claim_);
    db_.bind_text(use.get(), 1, run.workflow_id);
    db_.bind_text(use.get(), 2, owner);
    db_.bind_int64(use.get(), 3, to_nanoseconds(run.lease_expires));
    db_.bind_text(use.get(), 4, reason_text(run.why));
    db_.bind_int64(use.get(), 5, run.fence);
    db_.step_done(use.get(), "cannot claim workflow '" + run.workflow_id + "' from the queue");
    tx.commit();
    return run;
  }

  connection db_;  // first: destroyed after the statements
  store_clock clock_;
  statement insert_, select_fence_, next_ready_, claim_, next_fence_, renew_, remove_, count_;
};

}  // namespace

std::shared_ptr<run_queue> make_sqlite_run_queue(const std::filesystem::path& path, store_clock clock) {
  if (path.empty()) throw checkpoint_error("run queue: empty SQLite database path");
  return std::make_shared<sqlite_run_queue>(path, std::move(clock));
}

}  // namespace switchboard::stores
