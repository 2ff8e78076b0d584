// The SQLite checkpoint store, the embedded default.
//
// Two tables: `runs` holds one row per run (its head, status, owner, lease
// and fencing number), `journal` the records each save appended. The
// connection (sqlite_connection.hpp) runs every operation on its own thread;
// BEGIN IMMEDIATE around every read-check-write makes claim() a
// compare-and-set across processes.
#include <switchboard/stores/sqlite_store.hpp>

#include <switchboard/orchestrator/store_support.hpp>

#include "sqlite_connection.hpp"
#include "sqlite_write_batch.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace switchboard::stores {
namespace {

namespace asio = boost::asio;
using namespace orchestrator;
using namespace sqlite;
namespace store_support = orchestrator::store_support;

class sqlite_checkpoint_store final : public checkpoint_store {
 public:
  sqlite_checkpoint_store(const std::filesystem::path& path, store_clock clock)
      : db_(path, "checkpoint store '" + path.string() + "'"), clock_(store_support::or_system_clock(std::move(clock))) {
    prepare_statements();
  }

  ~sqlite_checkpoint_store() override { db_.stop(); }

  // create() and save() share transactions with the creates and saves of
  // other runs ready at the same moment (group commit): each completes when
  // its own write has committed, and a refused one fails alone.
  asio::awaitable<void> create(save_request cp, std::chrono::milliseconds lease) override {
    store_support::check_new_run(cp);
    auto committed = batch_.submit([&] { create_now(cp, lease); });
    co_await std::move(committed);
  }
  asio::awaitable<checkpoint> claim(claim_request request) override {
    co_return co_await db_.run([&] { return claim_now(request); });
  }
  asio::awaitable<void> save(save_request cp) override {
    auto committed = batch_.submit([&] { save_now(cp); });
    co_await std::move(committed);
  }
  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    co_return co_await db_.run([&] { return renew_now(owner, lease); });
  }
  asio::awaitable<bool> release(std::string workflow_id, std::string owner, std::int64_t fence) override {
    co_return co_await db_.run([&] { return release_now(workflow_id, owner, fence); });
  }
  asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    co_return co_await db_.run([&] { return load_snapshot(workflow_id); });
  }
  asio::awaitable<run_page> list(list_request request) override {
    co_return co_await db_.run([&] { return list_now(request); });
  }
  asio::awaitable<bool> erase(std::string workflow_id) override {
    co_return co_await db_.run([&] { return erase_now(workflow_id); });
  }
  asio::awaitable<std::size_t> prune(system_time finished_before) override {
    co_return co_await db_.run([&] { return prune_now(finished_before); });
  }

  write_batch::counts write_counts() const noexcept { return batch_.totals(); }

 private:
  // ---------------------------------------------------------------- operations (store thread)

  // Within the batch's transaction: the checks, then the writes (a refusal
  // must come before the first change; see sqlite_write_batch.hpp).
  void create_now(const save_request& cp, std::chrono::milliseconds lease) {
    if (auto stored = select_summary(cp.workflow_id)) store_support::throw_exists(db_.name(), *stored);
    const auto now = clock_();
    {
      statement_use use(insert_run_);
      bind_run(use.get(), cp, cp.owner, now + lease, 1, now);
      db_.step_done(use.get(), "cannot create the run of workflow", cp.workflow_id);
    }
    append_journal(cp.workflow_id, cp.journal);
  }

  checkpoint claim_now(const claim_request& request) {
    connection::transaction tx(db_);
    const auto now = clock_();
    auto stored = select_summary(request.workflow_id);
    store_support::check_claim(db_.name(), stored, request, now);
    {
      statement_use use(claim_run_);
      db_.bind_text(use.get(), 1, request.workflow_id);
      db_.bind_text(use.get(), 2, request.owner);
      db_.bind_int64(use.get(), 3, to_nanoseconds(now + request.lease));
      db_.bind_int64(use.get(), 4, to_nanoseconds(now));
      db_.step_done(use.get(), "cannot claim workflow '" + request.workflow_id + "'");
    }
    auto claimed = load_now(request.workflow_id);
    tx.commit();
    return std::move(*claimed);
  }

  void save_now(const save_request& cp) {
    store_support::check_save_request(cp);
    if (!save_next_step(cp)) save_checked(cp);
    append_journal(cp.workflow_id, cp.journal);
  }

  // The common save, a running run's next step by its owner, in one
  // statement: the checks are its WHERE clause and only what a step changes
  // is rewritten (the columns of ownership, and the index on owner and
  // status, stay as they are). False, with nothing changed, for any other
  // save, including one that will be refused.
  bool save_next_step(const save_request& cp) {
    if (cp.status != workflow_status::running) return false;
    statement_use use(update_step_);
    db_.bind_text(use.get(), 1, cp.workflow_id);
    db_.bind_int64(use.get(), 2, cp.step);
    db_.bind_text(use.get(), 3, cp.state_json);
    db_.bind_int64(use.get(), 4, to_nanoseconds(clock_()));
    db_.bind_text(use.get(), 5, cp.owner);
    db_.bind_int64(use.get(), 6, cp.fence);
    db_.bind_text(use.get(), 7, cp.workflow_name);
    db_.step_done(use.get(), "cannot save the checkpoint of workflow", cp.workflow_id);
    return db_.changes() == 1;
  }

  // Any other save: read, check (a refusal throws before any change), write.
  void save_checked(const save_request& cp) {
    const auto stored = select_summary(cp.workflow_id);
    store_support::check_save(db_.name(), stored, cp);
    const bool running = cp.status == workflow_status::running;
    statement_use use(update_run_);
    // The lease is the store's (create, claim, renew); a save keeps it.
    bind_run(use.get(), cp, running ? std::string_view(cp.owner) : std::string_view(),
             running ? stored->lease_expires : system_time{}, cp.fence, clock_());
    db_.step_done(use.get(), "cannot save the checkpoint of workflow", cp.workflow_id);
  }

  std::size_t renew_now(const std::string& owner, std::chrono::milliseconds lease) {
    statement_use use(renew_);
    db_.bind_text(use.get(), 1, owner);
    db_.bind_int64(use.get(), 2, to_nanoseconds(clock_() + lease));
    db_.step_done(use.get(), "cannot renew the leases of owner '" + owner + "'");
    return db_.changes();
  }

  bool release_now(const std::string& workflow_id, const std::string& owner, std::int64_t fence) {
    statement_use use(release_);
    db_.bind_text(use.get(), 1, workflow_id);
    db_.bind_text(use.get(), 2, owner);
    db_.bind_int64(use.get(), 3, fence);
    db_.bind_int64(use.get(), 4, to_nanoseconds(clock_()));
    db_.step_done(use.get(), "cannot release workflow", workflow_id);
    return db_.changes() > 0;
  }

  // The head and the journal read in one read transaction, so both come
  // from the same save even while another process is saving.
  std::optional<checkpoint> load_snapshot(const std::string& workflow_id) {
    connection::transaction tx(db_, connection::transaction::kind::read);
    auto cp = load_now(workflow_id);
    tx.commit();
    return cp;
  }

  // Within a transaction the caller holds.
  std::optional<checkpoint> load_now(const std::string& workflow_id) {
    run_summary summary;
    std::string head;
    {
      statement_use use(select_run_);
      db_.bind_text(use.get(), 1, workflow_id);
      if (!db_.step_row(use.get(), "cannot load the checkpoint of workflow '" + workflow_id + "'")) return std::nullopt;
      summary = read_summary(use.get());
      summary.status = store_support::effective_status(summary.status, summary.lease_expires, clock_());
      head = column_text(use.get(), 8);
    }
    std::vector<std::string> journal;
    statement_use use(select_journal_);
    db_.bind_text(use.get(), 1, workflow_id);
    while (db_.step_row(use.get(), "cannot read the journal of workflow '" + workflow_id + "'")) {
      journal.push_back(column_text(use.get(), 0));
    }
    return store_support::checkpoint_of(std::move(summary), std::move(head), std::move(journal));
  }

  // The filters run in SQL (the status as a reader sees it, a lapsed lease
  // included), so a page costs what it returns, not the size of the table.
  run_page list_now(const list_request& request) {
    const auto before = store_support::parse_cursor(db_.name(), request.cursor);
    const auto now = clock_();
    statement_use use(list_);
    db_.bind_int64(use.get(), 1, before.value_or(0));
    db_.bind_text(use.get(), 2, request.workflow_name);
    db_.bind_text(use.get(), 3, request.status ? to_string(*request.status) : std::string_view());
    db_.bind_int64(use.get(), 4, to_nanoseconds(now));
    // One row more than the page: whether another page follows.
    db_.bind_int64(use.get(), 5, request.limit > 0 ? static_cast<std::int64_t>(request.limit) + 1 : -1);
    run_page page;
    std::int64_t last_seq = 0;
    while (db_.step_row(use.get(), "cannot list checkpoints")) {
      if (request.limit > 0 && page.runs.size() == request.limit) {
        page.next_cursor = store_support::make_cursor(last_seq);
        break;
      }
      auto summary = read_summary(use.get());
      summary.status = store_support::effective_status(summary.status, summary.lease_expires, now);
      last_seq = sqlite3_column_int64(use.get(), 8);
      page.runs.push_back(std::move(summary));
    }
    return page;
  }

  bool erase_now(const std::string& workflow_id) {
    connection::transaction tx(db_);
    run_with_id(erase_journal_, workflow_id, "cannot erase the journal of workflow '" + workflow_id + "'");
    run_with_id(erase_run_, workflow_id, "cannot erase workflow '" + workflow_id + "'");
    const bool existed = db_.changes() > 0;
    tx.commit();
    return existed;
  }

  std::size_t prune_now(system_time finished_before) {
    std::size_t removed = 0;
    {
      connection::transaction tx(db_);
      for (const statement* stmt : {&prune_journal_, &prune_runs_}) {
        statement_use use(*stmt);
        db_.bind_int64(use.get(), 1, to_nanoseconds(finished_before));
        db_.step_done(use.get(), "cannot prune finished runs");
      }
      removed = db_.changes();
      tx.commit();
    }
    // Give the freed pages back to the file system: the free pages first,
    // then the write-ahead log that recorded the deletions.
    db_.exec("PRAGMA incremental_vacuum", "cannot reclaim the space of pruned runs");
    db_.exec("PRAGMA wal_checkpoint(TRUNCATE)", "cannot checkpoint the write-ahead log");
    return removed;
  }

  std::optional<run_summary> select_summary(const std::string& workflow_id) {
    statement_use use(select_summary_);
    db_.bind_text(use.get(), 1, workflow_id);
    if (!db_.step_row(use.get(), "cannot read workflow", workflow_id)) return std::nullopt;
    return read_summary(use.get());
  }

  void bind_run(sqlite3_stmt* stmt, const save_request& cp, std::string_view owner, system_time lease_expires,
                std::int64_t fence, system_time now) {
    db_.bind_text(stmt, 1, cp.workflow_id);
    db_.bind_text(stmt, 2, cp.workflow_name);
    db_.bind_text(stmt, 3, to_string(cp.status));
    db_.bind_int64(stmt, 4, cp.step);
    db_.bind_text(stmt, 5, cp.state_json);
    db_.bind_text(stmt, 6, owner);
    db_.bind_int64(stmt, 7, to_nanoseconds(lease_expires));
    db_.bind_int64(stmt, 8, fence);
    db_.bind_int64(stmt, 9, to_nanoseconds(now));
  }

  void append_journal(const std::string& workflow_id, const std::vector<std::string>& records) {
    for (const auto& record : records) {
      statement_use use(insert_journal_);
      db_.bind_text(use.get(), 1, workflow_id);
      db_.bind_text(use.get(), 2, record);
      db_.step_done(use.get(), "cannot append to the journal of workflow", workflow_id);
    }
  }

  void run_with_id(const statement& stmt, const std::string& workflow_id, const std::string& what) {
    statement_use use(stmt);
    db_.bind_text(use.get(), 1, workflow_id);
    db_.step_done(use.get(), what);
  }

  void prepare_statements() {
    const std::string summary = summary_columns;
    const std::string next_save_seq = "(SELECT COALESCE(MAX(save_seq), 0) + 1 FROM runs)";
    select_summary_ = db_.prepare("SELECT " + summary + " FROM runs WHERE workflow_id = ?1");
    select_run_ = db_.prepare("SELECT " + summary + ", head FROM runs WHERE workflow_id = ?1");
    select_journal_ = db_.prepare("SELECT record FROM journal WHERE workflow_id = ?1 ORDER BY seq");
    insert_run_ = db_.prepare(
        "INSERT INTO runs (workflow_id, workflow_name, status, step, head, owner, lease_expires_ns, fence, "
        "updated_at_ns, save_seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, " + next_save_seq + ")");
    claim_run_ = db_.prepare(
        "UPDATE runs SET status = 'running', owner = ?2, lease_expires_ns = ?3, fence = fence + 1, "
        "updated_at_ns = ?4, save_seq = " + next_save_seq + " WHERE workflow_id = ?1");
    update_run_ = db_.prepare(
        "UPDATE runs SET workflow_name = ?2, status = ?3, step = ?4, head = ?5, owner = ?6, "
        "lease_expires_ns = ?7, fence = ?8, updated_at_ns = ?9, save_seq = " + next_save_seq +
        " WHERE workflow_id = ?1");
    update_step_ = db_.prepare(
        "UPDATE runs SET step = ?2, head = ?3, updated_at_ns = ?4, save_seq = " + next_save_seq +
        " WHERE workflow_id = ?1 AND status = 'running' AND owner = ?5 AND owner <> '' AND fence = ?6 "
        "AND workflow_name = ?7 AND step <= ?2");
    insert_journal_ = db_.prepare(
        "INSERT INTO journal (workflow_id, seq, record) VALUES "
        "(?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM journal WHERE workflow_id = ?1), ?2)");
    renew_ = db_.prepare("UPDATE runs SET lease_expires_ns = ?2 WHERE owner = ?1 AND status = 'running'");
    release_ = db_.prepare(
        "UPDATE runs SET status = 'interrupted', owner = '', lease_expires_ns = 0, updated_at_ns = ?4, save_seq = " +
        next_save_seq +
        " WHERE workflow_id = ?1 AND owner = ?2 AND owner <> '' AND fence = ?3 AND status = 'running'");
    list_ = db_.prepare("SELECT " + summary + ", save_seq FROM runs WHERE (?1 = 0 OR save_seq < ?1) "
                    "AND (?2 = '' OR workflow_name = ?2) "
                    "AND (?3 = '' OR (CASE WHEN status = 'running' AND lease_expires_ns <= ?4 THEN 'interrupted' "
                    "ELSE status END) = ?3) ORDER BY save_seq DESC LIMIT ?5");
    erase_journal_ = db_.prepare("DELETE FROM journal WHERE workflow_id = ?1");
    erase_run_ = db_.prepare("DELETE FROM runs WHERE workflow_id = ?1");
    const std::string finished =
        "SELECT workflow_id FROM runs WHERE status IN ('completed', 'failed', 'cancelled') AND updated_at_ns < ?1";
    prune_journal_ = db_.prepare("DELETE FROM journal WHERE workflow_id IN (" + finished + ")");
    prune_runs_ = db_.prepare("DELETE FROM runs WHERE workflow_id IN (" + finished + ")");
  }

  connection db_;  // first: destroyed after the statements
  write_batch batch_{db_};
  store_clock clock_;
  statement select_summary_, select_run_, select_journal_, insert_run_, claim_run_, update_run_, update_step_,
      insert_journal_,
      renew_, release_, list_, erase_journal_, erase_run_, prune_journal_, prune_runs_;
};

}  // namespace

std::shared_ptr<checkpoint_store> make_sqlite_checkpoint_store(const std::filesystem::path& path, store_clock clock) {
  if (path.empty()) {
    throw checkpoint_error("checkpoint store: empty SQLite database path");
  }
  return std::make_shared<sqlite_checkpoint_store>(path, std::move(clock));
}

std::optional<sqlite_write_counts> write_counts_of(const checkpoint_store& store) {
  const auto* sqlite = dynamic_cast<const sqlite_checkpoint_store*>(&store);
  if (sqlite == nullptr) return std::nullopt;
  const auto counts = sqlite->write_counts();
  return sqlite_write_counts{counts.writes, counts.transactions};
}

}  // namespace switchboard::stores
