#include "sqlite_connection.hpp"

#include <chrono>
#include <thread>
#include <utility>

namespace switchboard::stores::sqlite {

using orchestrator::checkpoint_error;

connection::connection(const std::filesystem::path& path, std::string name)
    : path_(path.string()), name_(std::move(name)) {
  make_private(path_);
  open();
  configure();
  create_schema();
  begin_ = prepare("BEGIN IMMEDIATE");
  begin_read_ = prepare("BEGIN");
  commit_ = prepare("COMMIT");
  rollback_ = prepare("ROLLBACK");
}

connection::~connection() {
  thread_.join();
  close();
}

connection::transaction::transaction(connection& db, kind k) : db_(db) {
  statement_use use(k == kind::write ? db_.begin_ : db_.begin_read_);
  db_.step_done(use.get(), "cannot begin a transaction");
}

connection::transaction::~transaction() {
  if (!committed_) {
    statement_use use(db_.rollback_);
    sqlite3_step(use.get());  // Nothing more to do if even the rollback fails.
  }
}

void connection::transaction::commit() {
  statement_use use(db_.commit_);
  db_.step_done(use.get(), "cannot commit");
  committed_ = true;
}

statement connection::prepare(const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  // A failure throws and leaves closing to the destructor, which runs once
  // the statements prepared before are gone.
  if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr) != SQLITE_OK) {
    throw checkpoint_error(name_ + ": unexpected checkpoint tables (" + sqlite3_errmsg(db_) + ")");
  }
  return statement(raw);
}

void connection::bind_text(sqlite3_stmt* stmt, int index, std::string_view text) const {
  // SQLITE_STATIC: the text outlives the statement's use within this call.
  // An empty view may have no data: bind "" (a null pointer binds NULL).
  const char* data = text.data() != nullptr ? text.data() : "";
  if (sqlite3_bind_text64(stmt, index, data, text.size(), SQLITE_STATIC, SQLITE_UTF8) != SQLITE_OK) {
    fail("cannot bind parameter " + std::to_string(index));
  }
}

void connection::bind_int64(sqlite3_stmt* stmt, int index, std::int64_t value) const {
  if (sqlite3_bind_int64(stmt, index, value) != SQLITE_OK) {
    fail("cannot bind parameter " + std::to_string(index));
  }
}

void connection::step_done(sqlite3_stmt* stmt, const std::string& what) const {
  if (sqlite3_step(stmt) != SQLITE_DONE) {
    fail(what);
  }
}

void connection::step_done(sqlite3_stmt* stmt, const char* what, std::string_view id) const {
  if (sqlite3_step(stmt) != SQLITE_DONE) {
    fail(std::string(what) + " '" + std::string(id) + "'");
  }
}

bool connection::step_row(sqlite3_stmt* stmt, const char* what, std::string_view id) const {
  const int rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc != SQLITE_DONE) {
    fail(std::string(what) + " '" + std::string(id) + "'");
  }
  return false;
}

bool connection::step_row(sqlite3_stmt* stmt, const std::string& what) const {
  const int rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc != SQLITE_DONE) {
    fail(what);
  }
  return false;
}

void connection::exec(const char* sql, const std::string& what) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message != nullptr ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    throw checkpoint_error(name_ + ": " + what + ": " + text);
  }
}

std::size_t connection::changes() const noexcept { return static_cast<std::size_t>(sqlite3_changes(db_)); }

// Statements must be finalized before the connection closes.
void connection::close() noexcept {
  for (statement* stmt : {&begin_, &begin_read_, &commit_, &rollback_}) stmt->reset();
  sqlite3_close(db_);
  db_ = nullptr;
}

void connection::fail(const std::string& what) const {
  throw checkpoint_error(name_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

void connection::open() {
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
void connection::exec_or_close(const char* sql, const std::string& what) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message != nullptr ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    close_after_setup_failure(name_ + ": " + what + ": " + text);
  }
}

void connection::close_after_setup_failure(const std::string& message) {
  close();
  throw checkpoint_error(message);
}

std::string connection::query_single_text(const char* sql, const std::string& what) {
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

void connection::configure() {
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
int connection::schema_version_of_file() {
  const int version = std::stoi(query_single_text("PRAGMA user_version", "cannot read the schema version"));
  if (version > schema_version) {
    close_after_setup_failure(name_ + ": written by a newer Switchboard (format " + std::to_string(version) +
                              ", this build reads format " + std::to_string(schema_version) + ")");
  }
  return version;
}

void connection::create_schema() {
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

}  // namespace switchboard::stores::sqlite
