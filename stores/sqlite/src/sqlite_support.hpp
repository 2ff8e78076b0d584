// SQLite plumbing of the store: the table layout (format 3 and the
// migrations from 1 and 2), prepared statements that reset themselves,
// column conversions, and creating the database file private. No state.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace switchboard::stores::sqlite {

using orchestrator::checkpoint_error;
using orchestrator::run_summary;
using orchestrator::system_time;

// How long a writer waits for another connection's transaction before
// giving up with "database is locked".
inline constexpr int busy_timeout_ms = 5000;

// Bumped when the table layout changes; a file written by a newer layout is
// refused instead of being misread. Format 1 (one row with the whole state)
// is migrated when opened; format 2 lacks only the queue and events tables,
// and format 3 only the queue's fence counter, which opening adds (its
// first value above every fence of the queue).
inline constexpr int schema_version = 4;

inline constexpr const char* create_schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  workflow_id      TEXT    PRIMARY KEY NOT NULL,
  workflow_name    TEXT    NOT NULL,
  status           TEXT    NOT NULL,
  step             INTEGER NOT NULL,
  head             TEXT    NOT NULL,
  owner            TEXT    NOT NULL,
  lease_expires_ns INTEGER NOT NULL,
  fence            INTEGER NOT NULL,
  updated_at_ns    INTEGER NOT NULL,
  save_seq         INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_save_seq ON runs (save_seq);
CREATE INDEX IF NOT EXISTS runs_by_owner ON runs (owner, status);
CREATE TABLE IF NOT EXISTS journal (
  workflow_id TEXT    NOT NULL,
  seq         INTEGER NOT NULL,
  record      TEXT    NOT NULL,
  PRIMARY KEY (workflow_id, seq)
);
CREATE TABLE IF NOT EXISTS queue (
  workflow_id      TEXT    PRIMARY KEY NOT NULL,
  workflow_name    TEXT    NOT NULL,
  reason           TEXT    NOT NULL,
  payload          TEXT    NOT NULL,
  owner            TEXT    NOT NULL,
  lease_expires_ns INTEGER NOT NULL,
  fence            INTEGER NOT NULL,
  enqueue_seq      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS queue_by_enqueue_seq ON queue (enqueue_seq);
CREATE TABLE IF NOT EXISTS queue_fences (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  last_fence INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
  workflow_id TEXT    NOT NULL,
  position    INTEGER NOT NULL,
  event       TEXT    NOT NULL,
  at_ns       INTEGER NOT NULL,
  PRIMARY KEY (workflow_id, position)
);
)sql";

// Format 1 kept the whole state in one row: it becomes the head (the state
// reader accepts a whole state as a head), with an empty journal and no owner.
inline constexpr const char* migrate_from_1_sql = R"sql(
INSERT INTO runs (workflow_id, workflow_name, status, step, head, owner, lease_expires_ns, fence, updated_at_ns,
                  save_seq)
  SELECT workflow_id, workflow_name, status, step, state_json, '', 0, 0, updated_at_ns, save_seq FROM checkpoints;
DROP TABLE checkpoints;
)sql";

inline constexpr const char* summary_columns =
    "workflow_id, workflow_name, status, step, owner, lease_expires_ns, fence, updated_at_ns";

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

inline std::int64_t to_nanoseconds(system_time t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

inline system_time from_nanoseconds(std::int64_t ns) {
  return system_time(std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
}

inline std::string column_text(sqlite3_stmt* stmt, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  if (text == nullptr) {
    return {};
  }
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt, column)));
}

// Reads the summary columns (in summary_columns' order). The status is the
// stored text; a text no build ever wrote is refused, not guessed at.
inline run_summary read_summary(sqlite3_stmt* stmt) {
  run_summary s;
  s.workflow_id = column_text(stmt, 0);
  s.workflow_name = column_text(stmt, 1);
  const std::string status = column_text(stmt, 2);
  const auto parsed = orchestrator::parse_workflow_status(status);
  if (!parsed) {
    throw checkpoint_error("workflow '" + s.workflow_id + "' has an unknown stored status '" + status.substr(0, 64) +
                           "'");
  }
  s.status = *parsed;
  s.step = sqlite3_column_int64(stmt, 3);
  s.owner = column_text(stmt, 4);
  s.lease_expires = from_nanoseconds(sqlite3_column_int64(stmt, 5));
  s.fence = sqlite3_column_int64(stmt, 6);
  s.updated_at = from_nanoseconds(sqlite3_column_int64(stmt, 7));
  return s;
}

// Creates `path` readable and writable by its owner only when it does not
// exist (SQLite creates its -wal and -shm files with the same mode), and
// takes group and other permissions away from an existing regular file we
// own (a directory given by mistake is refused by SQLite, never changed).
inline void make_private(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return;
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == ::geteuid() &&
      (info.st_mode & 077) != 0) {
    ::chmod(path.c_str(), info.st_mode & 0700);
  }
}

}  // namespace switchboard::stores::sqlite
