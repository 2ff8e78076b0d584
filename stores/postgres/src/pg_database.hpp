// The PostgreSQL store's link to its database: a thread of its own running
// an io_context, on which a small fixed pool of connections (pg_connection)
// is driven without blocking, and the schema, created or migrated when the
// object is made.
//
// run() hands the caller's work a connection for the length of the work
// only (its SQL, nothing else), on the pool's thread, and resumes the
// caller on its own executor with the result. A transaction the work left
// open because it threw is rolled back before the connection goes back; a
// connection that failed is dropped and the next caller opens a new one.
//
// Thread-safety: run() may be called from any thread, concurrently.
#pragma once

#include "pg_connection.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

namespace switchboard::stores::postgres {

// How many connections one store object opens at most, by default. Small
// on purpose: a statement holds one for milliseconds, and many hubs share
// one server (a hub's store, feed and queue, with the feed's and the
// queue's listeners, stay within 9: ten hubs fit PostgreSQL's default 100).
inline constexpr std::size_t checkpoint_pool_size = 3;
inline constexpr std::size_t feed_pool_size = 3;
inline constexpr std::size_t queue_pool_size = 1;
// How long a connection attempt may take (when the URL sets no
// connect_timeout), and how long one statement may wait for its answer.
inline constexpr std::chrono::milliseconds default_connect_timeout{10'000};
inline constexpr std::chrono::milliseconds statement_timeout{30'000};

class database {
 public:
  using work_function = std::function<boost::asio::awaitable<void>(connection&)>;

  // Starts the thread, connects once and creates or migrates the schema.
  // `name` says what the object is ("checkpoint store"), for messages.
  // Throws database_error naming the server on failure.
  database(std::string conninfo, std::string name, std::size_t pool_size);
  // Waits for the operations started to finish, then closes the connections.
  ~database();
  database(const database&) = delete;
  database& operator=(const database&) = delete;

  // Runs `work(connection&)` (returning an awaitable) with a pooled
  // connection on the pool's thread; returns what it returns. `work` may
  // refer to the caller's frame, which stays suspended meanwhile. Not
  // cancellable (as the store interfaces say).
  template <class Work>
  boost::asio::awaitable<typename std::invoke_result_t<Work&, connection&>::value_type> run(Work work) {
    using value = typename std::invoke_result_t<Work&, connection&>::value_type;
    // g++ 12: named before co_await (the lambdas as std::function).
    if constexpr (std::is_void_v<value>) {
      work_function body = [&work](connection& c) -> boost::asio::awaitable<void> { co_await work(c); };
      co_await dispatch(body);
    } else {
      std::optional<value> out;
      work_function body = [&work, &out](connection& c) -> boost::asio::awaitable<void> {
        auto produced = co_await work(c);
        out.emplace(std::move(produced));
      };
      co_await dispatch(body);
      co_return std::move(*out);
    }
  }

  // "PostgreSQL checkpoint store at HOST port PORT, database 'D', user 'U'".
  const std::string& name() const noexcept { return name_; }

  // The LISTEN/NOTIFY channel of `topic` ("feed", "queue") for the tables
  // this object uses: "switchboard_<topic>_" and the md5 of the schema
  // that holds them, so stores in other schemas of one database do not
  // wake each other (and the name always fits PostgreSQL's 63 bytes).
  std::string channel(std::string_view topic) const;

  // The io_context of the pool's thread, and a connection outside the
  // pool (a listener's), opened there: call it on that thread only.
  boost::asio::io_context& io() noexcept { return io_; }
  boost::asio::awaitable<std::unique_ptr<connection>> open_dedicated();
  // Whether server process `pid` serves one of this pool's connections (a
  // notification it sent is this object's own). On the pool's thread only.
  bool is_own_session(int pid) const { return own_sessions_.contains(pid); }

 private:
  boost::asio::awaitable<void> dispatch(const work_function& work);
  std::size_t pool_size_;
  boost::asio::awaitable<void> with_connection(const work_function& work);
  boost::asio::awaitable<std::unique_ptr<connection>> acquire();
  boost::asio::awaitable<std::unique_ptr<connection>> open_connection();
  void release(std::unique_ptr<connection> c);
  void drop(std::unique_ptr<connection> c);
  boost::asio::awaitable<void> migrate(connection& c);
  void stop();

  std::string conninfo_;  // never logged: it may hold the password
  server_description server_;
  std::string name_;
  std::chrono::milliseconds connect_timeout_ = default_connect_timeout;
  std::string schema_md5_;  // set by migrate(), before any other use
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  // Only touched on the pool's thread.
  std::vector<std::unique_ptr<connection>> idle_;
  std::size_t open_ = 0;  // connections open or being opened, idle or lent
  std::set<int> own_sessions_;  // backend pids of the pooled connections
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
  std::thread thread_;
};

}  // namespace switchboard::stores::postgres
