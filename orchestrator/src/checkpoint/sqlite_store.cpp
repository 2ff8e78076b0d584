// The SQLite checkpoint store, the embedded default.
//
// Two tables: `runs` holds one row per run (its head, status, owner, lease
// and fencing number), `journal` the records each save appended. One
// connection per store, used only from the store's own thread: every
// operation is posted there and the caller's coroutine resumes on its own
// executor when it is done, so a slow disk never stalls the hub's threads.
// Processes sharing the file coordinate through SQLite itself: WAL mode
// (readers never block the writer), a busy timeout (a writer waits for
// another process's transaction instead of failing at once) and BEGIN
// IMMEDIATE around every read-check-write, which makes claim() a
// compare-and-set across processes.
#include <switchboard/orchestrator/checkpoint_store.hpp>

#include "checkpoint_checks.hpp"
#include "sqlite_support.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>

namespace switchboard::orchestrator {
namespace {

namespace asio = boost::asio;
using namespace detail::sqlite;

class sqlite_checkpoint_store final : public checkpoint_store {
 public:
  sqlite_checkpoint_store(const std::filesystem::path& path, store_clock clock)
      : path_(path.string()), name_("checkpoint store '" + path_ + "'"), clock_(detail::or_system_clock(std::move(clock))) {
    make_private(path_);
    open();
    configure();
    create_schema();
    prepare_statements();
  }

  ~sqlite_checkpoint_store() override {
    thread_.join();
    close();
  }

  sqlite_checkpoint_store(const sqlite_checkpoint_store&) = delete;
  sqlite_checkpoint_store& operator=(const sqlite_checkpoint_store&) = delete;

  asio::awaitable<void> create(save_request cp, std::chrono::milliseconds lease) override {
    co_await on_store_thread([&] { create_now(cp, lease); });
  }
  asio::awaitable<checkpoint> claim(claim_request request) override {
    co_return co_await on_store_thread([&] { return claim_now(request); });
  }
  asio::awaitable<void> save(save_request cp) override {
    co_await on_store_thread([&] { save_now(cp); });
  }
  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    co_return co_await on_store_thread([&] { return renew_now(owner, lease); });
  }
  asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    co_return co_await on_store_thread([&] { return load_snapshot(workflow_id); });
  }
  asio::awaitable<run_page> list(list_request request) override {
    co_return co_await on_store_thread([&] { return list_now(request); });
  }
  asio::awaitable<bool> erase(std::string workflow_id) override {
    co_return co_await on_store_thread([&] { return erase_now(workflow_id); });
  }
  asio::awaitable<std::size_t> prune(system_time finished_before) override {
    co_return co_await on_store_thread([&] { return prune_now(finished_before); });
  }

 private:
  // Runs `work` on the store's thread and resumes the awaiting coroutine on
  // its own executor with the result (or the exception). `work` refers to
  // the caller's frame, which stays alive while it is suspended here.
  template <typename Work>
  asio::awaitable<std::invoke_result_t<Work&>> on_store_thread(Work work) {
    using result = std::invoke_result_t<Work&>;
    auto task = [&work]() -> asio::awaitable<result> { co_return work(); };
    // Not cancellable (see the header): the caller's cancellation slot is
    // not passed on, or a cancellation arriving while the store thread runs
    // the work would reach a signal the caller has already freed.
    co_return co_await asio::co_spawn(thread_, std::move(task),
                                      asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable));
  }

  // ---------------------------------------------------------------- operations (store thread)

  void create_now(const save_request& cp, std::chrono::milliseconds lease) {
    detail::check_new_run(cp);
    transaction tx(*this);
    if (auto stored = select_summary(cp.workflow_id)) detail::throw_exists(name_, *stored);
    const auto now = clock_();
    {
      statement_use use(insert_run_);
      bind_run(use.get(), cp, cp.owner, now + lease, 1, now);
      step_done(use.get(), "cannot create the run of workflow '" + cp.workflow_id + "'");
    }
    append_journal(cp.workflow_id, cp.journal);
    tx.commit();
  }

  checkpoint claim_now(const claim_request& request) {
    transaction tx(*this);
    const auto now = clock_();
    auto stored = select_summary(request.workflow_id);
    detail::check_claim(name_, stored, request, now);
    {
      statement_use use(claim_run_);
      bind_text(use.get(), 1, request.workflow_id);
      bind_text(use.get(), 2, request.owner);
      bind_int64(use.get(), 3, to_nanoseconds(now + request.lease));
      bind_int64(use.get(), 4, to_nanoseconds(now));
      step_done(use.get(), "cannot claim workflow '" + request.workflow_id + "'");
    }
    auto claimed = load_now(request.workflow_id);
    tx.commit();
    return std::move(*claimed);
  }

  void save_now(const save_request& cp) {
    transaction tx(*this);
    const auto stored = select_summary(cp.workflow_id);
    detail::check_save(name_, stored, cp);
    const auto now = clock_();
    const bool running = cp.status == workflow_status::running;
    {
      statement_use use(update_run_);
      // The lease is the store's (create, claim, renew); a save keeps it.
      bind_run(use.get(), cp, running ? std::string_view(cp.owner) : std::string_view(),
               running ? stored->lease_expires : system_time{}, cp.fence, now);
      step_done(use.get(), "cannot save the checkpoint of workflow '" + cp.workflow_id + "'");
    }
    append_journal(cp.workflow_id, cp.journal);
    tx.commit();
  }

  std::size_t renew_now(const std::string& owner, std::chrono::milliseconds lease) {
    statement_use use(renew_);
    bind_text(use.get(), 1, owner);
    bind_int64(use.get(), 2, to_nanoseconds(clock_() + lease));
    step_done(use.get(), "cannot renew the leases of owner '" + owner + "'");
    return static_cast<std::size_t>(sqlite3_changes(db_));
  }

  // The head and the journal read in one read transaction, so both come
  // from the same save even while another process is saving.
  std::optional<checkpoint> load_snapshot(const std::string& workflow_id) {
    transaction tx(*this, transaction::kind::read);
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
      bind_text(use.get(), 1, workflow_id);
      if (!step_row(use.get(), "cannot load the checkpoint of workflow '" + workflow_id + "'")) return std::nullopt;
      summary = read_summary(use.get());
      summary.status = detail::effective_status(summary.status, summary.lease_expires, clock_());
      head = column_text(use.get(), 8);
    }
    std::vector<std::string> journal;
    statement_use use(select_journal_);
    bind_text(use.get(), 1, workflow_id);
    while (step_row(use.get(), "cannot read the journal of workflow '" + workflow_id + "'")) {
      journal.push_back(column_text(use.get(), 0));
    }
    return detail::checkpoint_of(std::move(summary), std::move(head), std::move(journal));
  }

  // The filters run in SQL (the status as a reader sees it, a lapsed lease
  // included), so a page costs what it returns, not the size of the table.
  run_page list_now(const list_request& request) {
    const auto before = detail::parse_cursor(name_, request.cursor);
    const auto now = clock_();
    statement_use use(list_);
    bind_int64(use.get(), 1, before.value_or(0));
    bind_text(use.get(), 2, request.workflow_name);
    bind_text(use.get(), 3, request.status ? to_string(*request.status) : std::string_view());
    bind_int64(use.get(), 4, to_nanoseconds(now));
    // One row more than the page: whether another page follows.
    bind_int64(use.get(), 5, request.limit > 0 ? static_cast<std::int64_t>(request.limit) + 1 : -1);
    run_page page;
    std::int64_t last_seq = 0;
    while (step_row(use.get(), "cannot list checkpoints")) {
      if (request.limit > 0 && page.runs.size() == request.limit) {
        page.next_cursor = detail::make_cursor(last_seq);
        break;
      }
      auto summary = read_summary(use.get());
      summary.status = detail::effective_status(summary.status, summary.lease_expires, now);
      last_seq = sqlite3_column_int64(use.get(), 8);
      page.runs.push_back(std::move(summary));
    }
    return page;
  }

  bool erase_now(const std::string& workflow_id) {
    transaction tx(*this);
    run_with_id(erase_journal_, workflow_id, "cannot erase the journal of workflow '" + workflow_id + "'");
    run_with_id(erase_run_, workflow_id, "cannot erase workflow '" + workflow_id + "'");
    const bool existed = sqlite3_changes(db_) > 0;
    tx.commit();
    return existed;
  }

  std::size_t prune_now(system_time finished_before) {
    std::size_t removed = 0;
    {
      transaction tx(*this);
      for (const statement* stmt : {&prune_journal_, &prune_runs_}) {
        statement_use use(*stmt);
        bind_int64(use.get(), 1, to_nanoseconds(finished_before));
        step_done(use.get(), "cannot prune finished runs");
      }
      removed = static_cast<std::size_t>(sqlite3_changes(db_));
      tx.commit();
    }
    // Give the freed pages back to the file system: the free pages first,
    // then the write-ahead log that recorded the deletions.
    exec("PRAGMA incremental_vacuum", "cannot reclaim the space of pruned runs");
    exec("PRAGMA wal_checkpoint(TRUNCATE)", "cannot checkpoint the write-ahead log");
    return removed;
  }

  // ---------------------------------------------------------------- helpers

  // BEGIN IMMEDIATE takes the write lock up front, so a check and the write
  // that depends on it see the same state even with another process writing.
  // A read transaction (BEGIN) reads one snapshot and blocks no writer.
  class transaction {
   public:
    enum class kind { write, read };
    explicit transaction(sqlite_checkpoint_store& store, kind k = kind::write) : store_(store) {
      statement_use use(k == kind::write ? store_.begin_ : store_.begin_read_);
      store_.step_done(use.get(), "cannot begin a transaction");
    }
    ~transaction() {
      if (!committed_) {
        statement_use use(store_.rollback_);
        sqlite3_step(use.get());  // Nothing more to do if even the rollback fails.
      }
    }
    transaction(const transaction&) = delete;
    transaction& operator=(const transaction&) = delete;

    void commit() {
      statement_use use(store_.commit_);
      store_.step_done(use.get(), "cannot commit");
      committed_ = true;
    }

   private:
    sqlite_checkpoint_store& store_;
    bool committed_ = false;
  };

  std::optional<run_summary> select_summary(const std::string& workflow_id) {
    statement_use use(select_summary_);
    bind_text(use.get(), 1, workflow_id);
    if (!step_row(use.get(), "cannot read workflow '" + workflow_id + "'")) return std::nullopt;
    return read_summary(use.get());
  }

  void bind_run(sqlite3_stmt* stmt, const save_request& cp, std::string_view owner, system_time lease_expires,
                std::int64_t fence, system_time now) {
    bind_text(stmt, 1, cp.workflow_id);
    bind_text(stmt, 2, cp.workflow_name);
    bind_text(stmt, 3, to_string(cp.status));
    bind_int64(stmt, 4, cp.step);
    bind_text(stmt, 5, cp.state_json);
    bind_text(stmt, 6, owner);
    bind_int64(stmt, 7, to_nanoseconds(lease_expires));
    bind_int64(stmt, 8, fence);
    bind_int64(stmt, 9, to_nanoseconds(now));
  }

  void append_journal(const std::string& workflow_id, const std::vector<std::string>& records) {
    for (const auto& record : records) {
      statement_use use(insert_journal_);
      bind_text(use.get(), 1, workflow_id);
      bind_text(use.get(), 2, record);
      step_done(use.get(), "cannot append to the journal of workflow '" + workflow_id + "'");
    }
  }

  void run_with_id(const statement& stmt, const std::string& workflow_id, const std::string& what) {
    statement_use use(stmt);
    bind_text(use.get(), 1, workflow_id);
    step_done(use.get(), what);
  }

  void exec(const char* sql, const std::string& what) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message != nullptr ? message : sqlite3_errmsg(db_);
      sqlite3_free(message);
      throw checkpoint_error(name_ + ": " + what + ": " + text);
    }
  }

  // Statements must be finalized before the connection closes.
  void close() noexcept {
    for (statement* stmt : {&begin_, &begin_read_, &commit_, &rollback_, &select_summary_, &select_run_,
                            &select_journal_, &insert_run_, &claim_run_, &update_run_, &insert_journal_, &renew_,
                            &list_, &erase_journal_, &erase_run_, &prune_journal_, &prune_runs_}) {
      stmt->reset();
    }
    sqlite3_close(db_);
    db_ = nullptr;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw checkpoint_error(name_ + ": " + what + ": " + sqlite3_errmsg(db_));
  }

  void open() {
    const int rc = sqlite3_open_v2(path_.c_str(), &db_,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      // sqlite3_open_v2 may allocate a handle even on failure; it carries the message.
      std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw checkpoint_error(name_ + ": cannot open: " + message +
                             " (does its directory exist, and may this process create files there?)");
    }
  }

  // Runs `sql` during set-up; a failure closes the connection (the
  // destructor will not run) and throws naming the file.
  void exec_or_close(const char* sql, const std::string& what) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message != nullptr ? message : sqlite3_errmsg(db_);
      sqlite3_free(message);
      close_after_setup_failure(name_ + ": " + what + ": " + text);
    }
  }

  [[noreturn]] void close_after_setup_failure(const std::string& message) {
    close();
    throw checkpoint_error(message);
  }

  std::string query_single_text(const char* sql, const std::string& what) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &raw, nullptr) != SQLITE_OK) {
      close_after_setup_failure(name_ + ": " + what + ": " + sqlite3_errmsg(db_));
    }
    statement stmt(raw);
    int rc = sqlite3_step(raw);
    // Switching a new file to WAL needs an exclusive lock and SQLite does not
    // call the busy handler for it: a second process opening the same new
    // file at that moment gets "database is locked". Retry within the busy
    // timeout.
    for (int waited_ms = 0; (rc & 0xff) == SQLITE_BUSY && waited_ms < busy_timeout_ms; waited_ms += 5) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      sqlite3_reset(raw);
      rc = sqlite3_step(raw);
    }
    if (rc != SQLITE_ROW) {
      std::string message = name_ + ": " + what + ": " + sqlite3_errmsg(db_);
      stmt.reset();
      close_after_setup_failure(message);
    }
    return column_text(raw, 0);
  }

  void configure() {
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, busy_timeout_ms);
    // The first statement reads the file header: this is where a file that
    // is not an SQLite database (or a corrupt one) is refused. auto_vacuum
    // only takes effect on a file with no tables yet: new files give the
    // space of pruned runs back (prune() runs the incremental vacuum).
    query_single_text("PRAGMA auto_vacuum", "cannot open as an SQLite database");
    exec_or_close("PRAGMA auto_vacuum=INCREMENTAL", "cannot set the vacuum mode");
    const std::string mode = query_single_text("PRAGMA journal_mode=WAL", "cannot open as an SQLite database");
    if (mode != "wal") {
      close_after_setup_failure(name_ + ": cannot switch to WAL mode (journal mode is '" + mode + "')");
    }
    // NORMAL in WAL mode: a killed process loses nothing committed; only a
    // power failure may drop the last transactions, and never corrupts.
    exec_or_close("PRAGMA synchronous=NORMAL", "cannot set synchronous mode");
    // A large save (a 10 MB input) grows the write-ahead log; without a
    // limit the file keeps that size for as long as the store is open.
    exec_or_close("PRAGMA journal_size_limit=4194304", "cannot limit the write-ahead log");
  }

  // The stored format; refuses a newer one.
  int schema_version_of_file() {
    const int version = std::stoi(query_single_text("PRAGMA user_version", "cannot read the schema version"));
    if (version > schema_version) {
      close_after_setup_failure(name_ + ": written by a newer Switchboard (format " + std::to_string(version) +
                                ", this build reads format " + std::to_string(schema_version) + ")");
    }
    return version;
  }

  void create_schema() {
    if (schema_version_of_file() == schema_version) {
      return;
    }
    // Another process may be creating or migrating the tables at this very
    // moment: decide again under the write lock, or a second migration would
    // read the format 1 table the first one has just dropped.
    exec_or_close("BEGIN IMMEDIATE", "cannot create the checkpoint tables");
    const int version = schema_version_of_file();
    const std::string sql = version == schema_version
                                ? std::string("COMMIT;")
                                : std::string(create_schema_sql) + (version == 1 ? migrate_from_1_sql : "") +
                                      "PRAGMA user_version=" + std::to_string(schema_version) + ";COMMIT;";
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message != nullptr ? message : sqlite3_errmsg(db_);
      sqlite3_free(message);
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      close_after_setup_failure(name_ + ": cannot create the checkpoint tables: " + text);
    }
  }

  statement prepare(const std::string& sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr) != SQLITE_OK) {
      close_after_setup_failure(name_ + ": unexpected checkpoint tables (" + sqlite3_errmsg(db_) + ")");
    }
    return statement(raw);
  }

  void prepare_statements() {
    const std::string summary = summary_columns;
    const std::string next_save_seq = "(SELECT COALESCE(MAX(save_seq), 0) + 1 FROM runs)";
    begin_ = prepare("BEGIN IMMEDIATE");
    begin_read_ = prepare("BEGIN");
    commit_ = prepare("COMMIT");
    rollback_ = prepare("ROLLBACK");
    select_summary_ = prepare("SELECT " + summary + " FROM runs WHERE workflow_id = ?1");
    select_run_ = prepare("SELECT " + summary + ", head FROM runs WHERE workflow_id = ?1");
    select_journal_ = prepare("SELECT record FROM journal WHERE workflow_id = ?1 ORDER BY seq");
    insert_run_ = prepare(
        "INSERT INTO runs (workflow_id, workflow_name, status, step, head, owner, lease_expires_ns, fence, "
        "updated_at_ns, save_seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, " + next_save_seq + ")");
    claim_run_ = prepare(
        "UPDATE runs SET status = 'running', owner = ?2, lease_expires_ns = ?3, fence = fence + 1, "
        "updated_at_ns = ?4, save_seq = " + next_save_seq + " WHERE workflow_id = ?1");
    update_run_ = prepare(
        "UPDATE runs SET workflow_name = ?2, status = ?3, step = ?4, head = ?5, owner = ?6, "
        "lease_expires_ns = ?7, fence = ?8, updated_at_ns = ?9, save_seq = " + next_save_seq +
        " WHERE workflow_id = ?1");
    insert_journal_ = prepare(
        "INSERT INTO journal (workflow_id, seq, record) VALUES "
        "(?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM journal WHERE workflow_id = ?1), ?2)");
    renew_ = prepare("UPDATE runs SET lease_expires_ns = ?2 WHERE owner = ?1 AND status = 'running'");
    list_ = prepare("SELECT " + summary + ", save_seq FROM runs WHERE (?1 = 0 OR save_seq < ?1) "
                    "AND (?2 = '' OR workflow_name = ?2) "
                    "AND (?3 = '' OR (CASE WHEN status = 'running' AND lease_expires_ns <= ?4 THEN 'interrupted' "
                    "ELSE status END) = ?3) ORDER BY save_seq DESC LIMIT ?5");
    erase_journal_ = prepare("DELETE FROM journal WHERE workflow_id = ?1");
    erase_run_ = prepare("DELETE FROM runs WHERE workflow_id = ?1");
    const std::string finished =
        "SELECT workflow_id FROM runs WHERE status IN ('completed', 'failed', 'cancelled') AND updated_at_ns < ?1";
    prune_journal_ = prepare("DELETE FROM journal WHERE workflow_id IN (" + finished + ")");
    prune_runs_ = prepare("DELETE FROM runs WHERE workflow_id IN (" + finished + ")");
  }

  void bind_text(sqlite3_stmt* stmt, int index, std::string_view text) const {
    // SQLITE_STATIC: the text outlives the statement's use within this call.
    // An empty view may have no data: bind "" (a null pointer binds NULL).
    const char* data = text.data() != nullptr ? text.data() : "";
    if (sqlite3_bind_text64(stmt, index, data, text.size(), SQLITE_STATIC, SQLITE_UTF8) != SQLITE_OK) {
      fail("cannot bind parameter " + std::to_string(index));
    }
  }

  void bind_int64(sqlite3_stmt* stmt, int index, std::int64_t value) const {
    if (sqlite3_bind_int64(stmt, index, value) != SQLITE_OK) {
      fail("cannot bind parameter " + std::to_string(index));
    }
  }

  // Steps a statement that returns no rows.
  void step_done(sqlite3_stmt* stmt, const std::string& what) const {
    if (sqlite3_step(stmt) != SQLITE_DONE) {
      fail(what);
    }
  }

  // Steps a query: true with a row ready, false when done.
  bool step_row(sqlite3_stmt* stmt, const std::string& what) const {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
      return true;
    }
    if (rc != SQLITE_DONE) {
      fail(what);
    }
    return false;
  }

  std::string path_;
  std::string name_;
  store_clock clock_;
  sqlite3* db_ = nullptr;
  // One thread: operations run one at a time, in the order they were
  // started, on the only thread that touches the connection.
  asio::thread_pool thread_{1};
  statement begin_, begin_read_, commit_, rollback_, select_summary_, select_run_, select_journal_, insert_run_,
      claim_run_, update_run_, insert_journal_, renew_, list_, erase_journal_, erase_run_, prune_journal_, prune_runs_;
};

}  // namespace

std::shared_ptr<checkpoint_store> make_sqlite_checkpoint_store(const std::filesystem::path& path, store_clock clock) {
  if (path.empty()) {
    throw checkpoint_error("checkpoint store: empty SQLite database path");
  }
  return std::make_shared<sqlite_checkpoint_store>(path, std::move(clock));
}

}  // namespace switchboard::orchestrator
