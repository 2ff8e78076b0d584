// One libpq connection driven asynchronously on an Asio io_context: the
// socket is non-blocking and watched by the io_context (a stream_descriptor
// that never owns the descriptor: libpq opens and closes it), so no thread
// ever blocks on the database. Statements go one at a time (query) or
// several in one round trip (pipeline, libpq's pipeline mode). Every wait has a deadline: a server that
// stops answering ends the operation with an error, never a hang.
//
// Errors are thrown as database_error (a checkpoint_error) carrying libpq's
// or the server's message, never the password (the database object adds
// which store and which server); sqlstate() tells a refused statement (the
// connection stays usable) from a lost connection ("" or class 08).
//
// Thread-safety: none. A connection is used by one coroutine at a time, on
// the thread of the io_context it was made with.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace switchboard::stores::postgres {

class database_error : public orchestrator::checkpoint_error {
 public:
  database_error(const std::string& message, std::string sqlstate)
      : checkpoint_error(message), sqlstate_(std::move(sqlstate)) {}
  // The server's SQLSTATE ("" when the connection failed before one came).
  const std::string& sqlstate() const noexcept { return sqlstate_; }

 private:
  std::string sqlstate_;
};

// What a connection string says about where it connects, for messages and
// logs: "host:port/dbname as user" without the password, plus the password
// itself so a message that echoes it can be scrubbed.
struct server_description {
  std::string text;      // "PostgreSQL at 127.0.0.1 port 5432, database 'app', user 'swb'"
  std::string where;     // "at 127.0.0.1 port 5432, database 'app', user 'swb'"
  std::string password;  // "" when the string holds none
};
server_description describe_server(const std::string& conninfo);

// Replaces every occurrence of `secret` in `text` with "***".
std::string redact(std::string text, const std::string& secret);

// A query parameter: text, or SQL NULL.
using param = std::optional<std::string>;

// The rows of one statement, in text format.
class result {
 public:
  explicit result(PGresult* r) noexcept : r_(r) {}
  const PGresult* get() const noexcept { return r_.get(); }
  int rows() const noexcept { return PQntuples(r_.get()); }
  bool is_null(int row, int column) const noexcept { return PQgetisnull(r_.get(), row, column) != 0; }
  std::string text(int row, int column) const;
  std::int64_t int64(int row, int column) const;
  // Rows an INSERT, UPDATE or DELETE changed.
  std::size_t affected() const noexcept;

 private:
  struct clear {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
  };
  std::unique_ptr<PGresult, clear> r_;
};

class connection {
 public:
  using clock = std::chrono::steady_clock;

  connection(boost::asio::io_context& io, server_description server);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // Connects without blocking (PQconnectStart / PQconnectPoll), within
  // `timeout`. Throws database_error naming the server.
  boost::asio::awaitable<void> connect(const std::string& conninfo, std::chrono::milliseconds timeout);

  // Sends one statement with its parameters ($1, $2, ...) and returns its
  // rows; waits at most `timeout` for the answer. `sql` must stay alive
  // until the call completes. A statement with parameters is prepared on
  // its first use on this connection and reused by its text afterwards.
  boost::asio::awaitable<result> query(const char* sql, const std::vector<param>& params,
                                       std::chrono::milliseconds timeout);

  // One statement of a pipeline: its SQL and parameters, both alive until
  // pipeline() completes.
  struct statement {
    const char* sql;
    const std::vector<param>* params;
  };

  // Sends `statements` at once in libpq's pipeline mode, then reads their
  // results in order: one round trip instead of one per statement. Each
  // runs as if sent alone (an explicit BEGIN spans them and later calls);
  // after a statement fails the rest of the pipeline is skipped by the
  // server, and the first error is thrown once everything is read.
  boost::asio::awaitable<std::vector<result>> pipeline(const std::vector<statement>& statements,
                                                       std::chrono::milliseconds timeout);

  // A NOTIFY heard: the server process that sent it, and its payload.
  struct notification {
    int sender = 0;
    std::string payload;
  };
  // For a connection that ran LISTEN: waits, without a deadline, until the
  // server sends something, reads it and returns the notifications that
  // came (none: something else came, a notice). Throws database_error when
  // the connection is lost; ends with an error when the awaiting coroutine
  // is cancelled.
  boost::asio::awaitable<std::vector<notification>> next_notifications();

  // The server process serving this connection (0 before it connects).
  int backend_pid() const noexcept { return conn_ != nullptr ? PQbackendPID(conn_) : 0; }

  // Whether the connection may be handed to the next caller: connected,
  // not inside a transaction, no error lost it.
  bool reusable() const noexcept;
  // Whether a transaction is open (and could be rolled back).
  bool in_transaction() const noexcept;
  // Reads what the server sent while the connection was idle; false when
  // it closed the connection (a restart, an idle timeout, a terminated
  // backend), so the pool opens a new one instead.
  bool still_open() noexcept;

 private:
  enum class direction { read, write, either };
  boost::asio::awaitable<void> wait(direction what, clock::time_point deadline, const char* on_timeout);
  boost::asio::awaitable<void> flush(clock::time_point deadline);
  boost::asio::awaitable<result> receive(clock::time_point deadline);
  boost::asio::awaitable<PGresult*> next_result(clock::time_point deadline);
  static void check_texts(const std::vector<param>& params);
  boost::asio::awaitable<const std::string*> prepared(const char* sql, std::size_t param_count,
                                                      clock::time_point deadline);
  void send(const char* sql, const std::string* name, const std::vector<param>& params);
  void watch_socket();
  [[noreturn]] void fail(std::string_view what, std::string sqlstate = {});
  [[noreturn]] void fail_result(const PGresult* r);

  boost::asio::io_context& io_;
  server_description server_;
  PGconn* conn_ = nullptr;
  boost::asio::posix::stream_descriptor socket_;
  boost::asio::steady_timer timer_;
  bool broken_ = false;
  // Statements prepared on this connection: their SQL, and their names.
  struct text_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
  };
  std::unordered_map<std::string, std::string, text_hash, std::equal_to<>> prepared_;
  // The stores have a few dozen statements; a caller that built SQL at run
  // time could otherwise fill the server's memory, one name per text.
  static constexpr std::size_t max_prepared = 64;
};

}  // namespace switchboard::stores::postgres
