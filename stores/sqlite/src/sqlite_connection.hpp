// One SQLite connection of the SQLite store and the thread it is used on.
// The checkpoint store, the run queue and the event feed each hold one:
// every operation is posted to that thread, and the caller's coroutine
// resumes on its own executor when it is done, so a slow disk never stalls
// the hub's threads. Processes sharing the file coordinate through SQLite
// itself: WAL mode (readers never block the writer), a busy timeout (a
// writer waits for another process's transaction instead of failing at
// once) and BEGIN IMMEDIATE around every read-check-write.
//
// Thread-safety: run() may be called from any thread; everything else only
// from inside a run() (the connection's thread), or while setting up.
#pragma once

#include "sqlite_support.hpp"

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>

namespace switchboard::stores::sqlite {

class connection {
 public:
  // Opens `path` (created private when new), sets WAL mode, the busy
  // timeout and synchronous=NORMAL, and creates or migrates the tables.
  // Throws checkpoint_error naming the file (`name`, "checkpoint store
  // 'PATH'") on any failure.
  connection(const std::filesystem::path& path, std::string name);
  // Joins the thread, then closes the connection. Statements prepared with
  // prepare() must be destroyed first (declare the connection first).
  ~connection();
  // Waits for the operations started to finish; run() must not be called
  // after. The owner calls it first in its destructor, before its
  // statements go.
  void stop() { thread_.join(); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // Runs `work` on the connection's thread and resumes the awaiting
  // coroutine on its own executor with the result (or the exception).
  // `work` refers to the caller's frame, which stays alive while it is
  // suspended here. Not cancellable: the caller's cancellation slot is not
  // passed on, or a cancellation arriving while the thread runs the work
  // would reach a signal the caller has already freed.
  template <typename Work>
  boost::asio::awaitable<std::invoke_result_t<Work&>> run(Work work) {
    using result = std::invoke_result_t<Work&>;
    auto task = [&work]() -> boost::asio::awaitable<result> { co_return work(); };
    co_return co_await boost::asio::co_spawn(
        thread_, std::move(task),
        boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(), boost::asio::use_awaitable));
  }

  // The connection's thread, for work that completes its callers itself
  // (sqlite_write_batch.hpp).
  boost::asio::thread_pool::executor_type executor() noexcept { return thread_.get_executor(); }

  // A statement prepared once and kept (SQLITE_PREPARE_PERSISTENT).
  statement prepare(const std::string& sql);

  void bind_text(sqlite3_stmt* stmt, int index, std::string_view text) const;
  void bind_int64(sqlite3_stmt* stmt, int index, std::int64_t value) const;
  // Steps a statement that returns no rows.
  void step_done(sqlite3_stmt* stmt, const std::string& what) const;
  // The same for the writes of every save, whose message ("WHAT 'ID'") is
  // only built when it fails.
  void step_done(sqlite3_stmt* stmt, const char* what, std::string_view id) const;
  bool step_row(sqlite3_stmt* stmt, const char* what, std::string_view id) const;
  // Steps a query: true with a row ready, false when done.
  bool step_row(sqlite3_stmt* stmt, const std::string& what) const;
  // Runs `sql` (no parameters, no rows).
  void exec(const char* sql, const std::string& what);
  // Rows changed by the last statement.
  std::size_t changes() const noexcept;
  // Rows changed since the connection opened (by completed statements).
  std::int64_t total_changes() const noexcept { return sqlite3_total_changes64(db_); }
  // Whether a transaction is open (SQLite rolls one back by itself on some
  // errors: a full disk, an I/O error).
  bool in_transaction() const noexcept { return sqlite3_get_autocommit(db_) == 0; }
  [[noreturn]] void fail(const std::string& what) const;
  const std::string& name() const noexcept { return name_; }

  // BEGIN IMMEDIATE (write) takes the write lock up front, so a check and
  // the write that depends on it see the same state even with another
  // process writing. A read transaction (BEGIN) reads one snapshot and
  // blocks no writer. Rolled back unless committed.
  class transaction {
   public:
    enum class kind { write, read };
    explicit transaction(connection& db, kind k = kind::write);
    ~transaction();
    transaction(const transaction&) = delete;
    transaction& operator=(const transaction&) = delete;
    void commit();

   private:
    connection& db_;
    bool committed_ = false;
  };

 private:
  void open();
  void configure();
  int schema_version_of_file();
  void create_schema();
  void exec_or_close(const char* sql, const std::string& what);
  [[noreturn]] void close_after_setup_failure(const std::string& message);
  std::string query_single_text(const char* sql, const std::string& what);
  void close() noexcept;

  std::string path_;
  std::string name_;
  sqlite3* db_ = nullptr;
  statement begin_, begin_read_, commit_, rollback_;
  // One thread: operations run one at a time, in the order they were
  // started, on the only thread that touches the connection.
  boost::asio::thread_pool thread_{1};
};

}  // namespace switchboard::stores::sqlite
