// The SQLite checkpoint store, the embedded default.
//
// One table, one row per workflow. One connection per store, guarded by a
// mutex: calls are short, the hub calls them from its strands, and a single
// connection keeps prepared statements simple and avoids the
// connection-per-thread bookkeeping. Processes sharing the file coordinate
// through SQLite itself: WAL mode (readers never block the writer) and a
// busy timeout (a writer waits for another process's transaction instead of
// failing at once).
#include <switchboard/orchestrator/checkpoint_store.hpp>

#include "checkpoint_checks.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace switchboard::orchestrator {
namespace {

// How long a writer waits for another connection's transaction before
// giving up with "database is locked".
constexpr int busy_timeout_ms = 5000;

// Bumped when the table layout changes; a file written by a newer layout is
// refused instead of being misread.
constexpr int schema_version = 1;

constexpr const char* create_schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS checkpoints (
  workflow_id   TEXT    PRIMARY KEY NOT NULL,
  workflow_name TEXT    NOT NULL,
  status        TEXT    NOT NULL,
  step          INTEGER NOT NULL,
  state_json    TEXT    NOT NULL,
  updated_at_ns INTEGER NOT NULL,
  save_seq      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS checkpoints_by_save_seq ON checkpoints (save_seq);
CREATE INDEX IF NOT EXISTS checkpoints_by_status ON checkpoints (status, save_seq);
)sql";

// save_seq orders list(): least recently saved first, across processes,
// independent of clock resolution.
constexpr const char* upsert_sql = R"sql(
INSERT INTO checkpoints (workflow_id, workflow_name, status, step, state_json, updated_at_ns, save_seq)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT COALESCE(MAX(save_seq), 0) + 1 FROM checkpoints))
ON CONFLICT (workflow_id) DO UPDATE SET
  workflow_name = excluded.workflow_name,
  status        = excluded.status,
  step          = excluded.step,
  state_json    = excluded.state_json,
  updated_at_ns = excluded.updated_at_ns,
  save_seq      = excluded.save_seq
)sql";

struct statement_deleter {
  void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};
using statement = std::unique_ptr<sqlite3_stmt, statement_deleter>;

// Resets a prepared statement when a call is done with it, on every path,
// so the next call starts clean and no read transaction stays open.
class statement_use {
 public:
  explicit statement_use(const statement& stmt) noexcept : stmt_(stmt.get()) {}
  ~statement_use() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  statement_use(const statement_use&) = delete;
  statement_use& operator=(const statement_use&) = delete;

  sqlite3_stmt* get() const noexcept { return stmt_; }

 private:
  sqlite3_stmt* stmt_;
};

std::int64_t to_nanoseconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::chrono::system_clock::time_point from_nanoseconds(std::int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
}

std::string column_text(sqlite3_stmt* stmt, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  if (text == nullptr) {
    return {};
  }
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt, column)));
}

class sqlite_checkpoint_store final : public checkpoint_store {
 public:
  explicit sqlite_checkpoint_store(const std::filesystem::path& path) : path_(path.string()) {
    open();
    configure();
    create_schema();
    prepare_statements();
  }

  ~sqlite_checkpoint_store() override {
    close();
  }

  sqlite_checkpoint_store(const sqlite_checkpoint_store&) = delete;
  sqlite_checkpoint_store& operator=(const sqlite_checkpoint_store&) = delete;

  void save(const checkpoint& cp) override {
    detail::check_checkpoint(cp);
    std::lock_guard lock(mutex_);
    transaction tx(*this);
    if (auto stored = stored_step(cp.workflow_id); stored && cp.step < *stored) {
      detail::throw_stale_step("checkpoint store '" + path_ + "'", cp, *stored);
    }
    {
      statement_use use(upsert_);
      bind_text(use.get(), 1, cp.workflow_id);
      bind_text(use.get(), 2, cp.workflow_name);
      bind_text(use.get(), 3, cp.status);
      bind_int64(use.get(), 4, cp.step);
      bind_text(use.get(), 5, cp.state_json);
      bind_int64(use.get(), 6, to_nanoseconds(std::chrono::system_clock::now()));
      step_done(use.get(), "cannot save the checkpoint of workflow '" + cp.workflow_id + "'");
    }
    tx.commit();
  }

  std::optional<checkpoint> load(std::string_view workflow_id) const override {
    std::lock_guard lock(mutex_);
    statement_use use(load_);
    bind_text(use.get(), 1, workflow_id);
    if (!step_row(use.get(), "cannot load the checkpoint of workflow '" + std::string(workflow_id) + "'")) {
      return std::nullopt;
    }
    checkpoint cp;
    cp.workflow_id = std::string(workflow_id);
    cp.workflow_name = column_text(use.get(), 0);
    cp.status = column_text(use.get(), 1);
    cp.step = sqlite3_column_int64(use.get(), 2);
    cp.state_json = column_text(use.get(), 3);
    cp.updated_at = from_nanoseconds(sqlite3_column_int64(use.get(), 4));
    return cp;
  }

  std::vector<std::string> list(std::string_view status) const override {
    std::lock_guard lock(mutex_);
    statement_use use(status.empty() ? list_all_ : list_status_);
    if (!status.empty()) {
      bind_text(use.get(), 1, status);
    }
    std::vector<std::string> ids;
    while (step_row(use.get(), "cannot list checkpoints")) {
      ids.push_back(column_text(use.get(), 0));
    }
    return ids;
  }

  bool erase(std::string_view workflow_id) override {
    std::lock_guard lock(mutex_);
    statement_use use(erase_);
    bind_text(use.get(), 1, workflow_id);
    step_done(use.get(), "cannot erase the checkpoint of workflow '" + std::string(workflow_id) + "'");
    return sqlite3_changes(db_) > 0;
  }

 private:
  // BEGIN IMMEDIATE takes the write lock up front, so the stale-step check
  // and the write see the same state even with another process writing.
  class transaction {
   public:
    explicit transaction(sqlite_checkpoint_store& store) : store_(store) {
      statement_use use(store_.begin_);
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

  // Statements must be finalized before the connection closes.
  void close() noexcept {
    for (statement* stmt : {&begin_, &commit_, &rollback_, &select_step_, &upsert_, &load_, &list_all_,
                            &list_status_, &erase_}) {
      stmt->reset();
    }
    sqlite3_close(db_);
    db_ = nullptr;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw checkpoint_error("checkpoint store '" + path_ + "': " + what + ": " + sqlite3_errmsg(db_));
  }

  void open() {
    const int rc = sqlite3_open_v2(path_.c_str(), &db_,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      // sqlite3_open_v2 may allocate a handle even on failure; it carries the message.
      std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw checkpoint_error("checkpoint store '" + path_ + "': cannot open: " + message +
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
      close_after_setup_failure("checkpoint store '" + path_ + "': " + what + ": " + text);
    }
  }

  [[noreturn]] void close_after_setup_failure(const std::string& message) {
    close();
    throw checkpoint_error(message);
  }

  std::string query_single_text(const char* sql, const std::string& what) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &raw, nullptr) != SQLITE_OK) {
      close_after_setup_failure("checkpoint store '" + path_ + "': " + what + ": " + sqlite3_errmsg(db_));
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
      std::string message = "checkpoint store '" + path_ + "': " + what + ": " + sqlite3_errmsg(db_);
      stmt.reset();
      close_after_setup_failure(message);
    }
    return column_text(raw, 0);
  }

  void configure() {
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, busy_timeout_ms);
    // The first statement reads the file header: this is where a file that
    // is not an SQLite database (or a corrupt one) is refused.
    const std::string mode = query_single_text("PRAGMA journal_mode=WAL", "cannot open as an SQLite database");
    if (mode != "wal") {
      close_after_setup_failure("checkpoint store '" + path_ + "': cannot switch to WAL mode (journal mode is '" +
                                mode + "')");
    }
    // NORMAL in WAL mode: a killed process loses nothing committed; only a
    // power failure may drop the last transactions, and never corrupts.
    exec_or_close("PRAGMA synchronous=NORMAL", "cannot set synchronous mode");
  }

  void create_schema() {
    const int version = std::stoi(query_single_text("PRAGMA user_version", "cannot read the schema version"));
    if (version > schema_version) {
      close_after_setup_failure("checkpoint store '" + path_ + "': written by a newer Switchboard (format " +
                                std::to_string(version) + ", this build reads format " +
                                std::to_string(schema_version) + ")");
    }
    if (version == schema_version) {
      return;
    }
    const std::string sql = std::string("BEGIN IMMEDIATE;") + create_schema_sql +
                            "PRAGMA user_version=" + std::to_string(schema_version) + ";COMMIT;";
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message != nullptr ? message : sqlite3_errmsg(db_);
      sqlite3_free(message);
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      close_after_setup_failure("checkpoint store '" + path_ + "': cannot create the checkpoints table: " + text);
    }
  }

  statement prepare(const char* sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr) != SQLITE_OK) {
      close_after_setup_failure("checkpoint store '" + path_ + "': unexpected checkpoints table (" +
                                sqlite3_errmsg(db_) + ")");
    }
    return statement(raw);
  }

  void prepare_statements() {
    begin_ = prepare("BEGIN IMMEDIATE");
    commit_ = prepare("COMMIT");
    rollback_ = prepare("ROLLBACK");
    select_step_ = prepare("SELECT step FROM checkpoints WHERE workflow_id = ?1");
    upsert_ = prepare(upsert_sql);
    load_ = prepare(
        "SELECT workflow_name, status, step, state_json, updated_at_ns FROM checkpoints WHERE workflow_id = ?1");
    list_all_ = prepare("SELECT workflow_id FROM checkpoints ORDER BY save_seq");
    list_status_ = prepare("SELECT workflow_id FROM checkpoints WHERE status = ?1 ORDER BY save_seq");
    erase_ = prepare("DELETE FROM checkpoints WHERE workflow_id = ?1");
  }

  std::optional<std::int64_t> stored_step(std::string_view workflow_id) {
    statement_use use(select_step_);
    bind_text(use.get(), 1, workflow_id);
    if (!step_row(use.get(), "cannot read the stored step of workflow '" + std::string(workflow_id) + "'")) {
      return std::nullopt;
    }
    return sqlite3_column_int64(use.get(), 0);
  }

  void bind_text(sqlite3_stmt* stmt, int index, std::string_view text) const {
    // SQLITE_STATIC: the text outlives the statement's use within this call.
    if (sqlite3_bind_text64(stmt, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8) != SQLITE_OK) {
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
  sqlite3* db_ = nullptr;
  mutable std::mutex mutex_;
  statement begin_, commit_, rollback_, select_step_, upsert_, load_, list_all_, list_status_, erase_;
};

}  // namespace

std::shared_ptr<checkpoint_store> make_sqlite_checkpoint_store(const std::filesystem::path& path) {
  if (path.empty()) {
    throw checkpoint_error("checkpoint store: empty SQLite database path");
  }
  return std::make_shared<sqlite_checkpoint_store>(path);
}

}  // namespace switchboard::orchestrator
