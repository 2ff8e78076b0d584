#include "pg_database.hpp"

#include "pg_schema.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

namespace switchboard::stores::postgres {
namespace {

namespace asio = boost::asio;

// libpq's connect_timeout (seconds) when the string sets one: libpq only
// applies it to blocking connects, so the store applies it itself.
std::chrono::milliseconds connect_timeout_of(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (error != nullptr) PQfreemem(error);
  if (options == nullptr) return default_connect_timeout;
  std::chrono::milliseconds timeout = default_connect_timeout;
  for (auto* o = options; o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "connect_timeout" && o->val != nullptr && std::atoi(o->val) > 0) {
      timeout = std::chrono::seconds(std::atoi(o->val));
    }
  }
  PQconninfoFree(options);
  return timeout;
}

}  // namespace

database::database(std::string conninfo, std::string name, std::size_t pool_size)
    : pool_size_(pool_size),
      conninfo_(std::move(conninfo)),
      server_(describe_server(conninfo_)),
      name_("PostgreSQL " + name + " (" + server_.where + ")"),
      connect_timeout_(connect_timeout_of(conninfo_)),
      work_(io_.get_executor()),
      thread_([this] { io_.run(); }) {
  try {
    // The first connection creates or migrates the schema: a bad URL, a
    // refused connection or a wrong password fails here, at open.
    work_function body = [this](connection& c) { return migrate(c); };
    auto task = [this, &body]() -> asio::awaitable<void> { co_await with_connection(body); };
    asio::co_spawn(io_, std::move(task), asio::use_future).get();
  } catch (const database_error& e) {
    stop();
    throw database_error(name_ + ": " + e.what(), e.sqlstate());
  } catch (...) {
    stop();
    throw;
  }
}

database::~database() { stop(); }

void database::stop() {
  work_.reset();
  if (thread_.joinable()) thread_.join();
}

asio::awaitable<void> database::dispatch(const work_function& work) {
  auto task = [this, &work]() -> asio::awaitable<void> { co_await with_connection(work); };
  // The caller's cancellation slot is not passed on: a cancellation
  // arriving while the pool's thread runs the work would reach a signal
  // the caller has already freed.
  auto token = asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable);
  try {
    co_await asio::co_spawn(io_, std::move(task), std::move(token));
  } catch (const database_error& e) {
    throw database_error(name_ + ": " + e.what(), e.sqlstate());
  }
}

asio::awaitable<void> database::with_connection(const work_function& work) {
  auto c = co_await acquire();
  std::exception_ptr failed;
  try {
    co_await work(*c);
  } catch (...) {
    failed = std::current_exception();
  }
  if (failed && c->in_transaction()) {
    // A refused claim or save threw inside its transaction: end it before
    // the connection serves anyone else (and release its row locks now).
    try {
      const std::vector<param> none;
      co_await c->query("ROLLBACK", none, statement_timeout);
    } catch (const std::exception& e) {
      spdlog::warn("postgres: {}: cannot roll back: {}", name_, e.what());
    }
  }
  release(std::move(c));
  if (failed) std::rethrow_exception(failed);
}

asio::awaitable<std::unique_ptr<connection>> database::acquire() {
  for (;;) {
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      if (c->still_open()) co_return c;
      drop(std::move(c));
    }
    if (open_ < pool_size_) {
      ++open_;
      std::unique_ptr<connection> c;
      try {
        c = co_await open_connection();
      } catch (...) {
        --open_;
        if (!waiters_.empty()) {
          waiters_.front()->cancel();
          waiters_.pop_front();
        }
        throw;
      }
      own_sessions_.insert(c->backend_pid());
      co_return c;
    }
    // Every connection is lent: wait until one comes back (or its slot).
    auto waiter = std::make_shared<asio::steady_timer>(io_, asio::steady_timer::time_point::max());
    waiters_.push_back(waiter);
    auto woken = waiter->async_wait(asio::as_tuple(asio::use_awaitable));
    co_await std::move(woken);
  }
}

asio::awaitable<std::unique_ptr<connection>> database::open_connection() {
  auto c = std::make_unique<connection>(io_, server_);
  co_await c->connect(conninfo_, connect_timeout_);
  co_return c;
}

void database::release(std::unique_ptr<connection> c) {
  if (c->reusable()) {
    idle_.push_back(std::move(c));
  } else {
    drop(std::move(c));
  }
  if (!waiters_.empty()) {
    waiters_.front()->cancel();
    waiters_.pop_front();
  }
}

void database::drop(std::unique_ptr<connection> c) {
  own_sessions_.erase(c->backend_pid());
  c.reset();
  --open_;
}

asio::awaitable<void> database::migrate(connection& c) {
  const std::vector<param> none;
  co_await c.query("BEGIN", none, statement_timeout);
  co_await c.query(migration_lock_sql, none, statement_timeout);
  co_await c.query(create_version_table_sql, none, statement_timeout);
  const auto stored = co_await c.query(read_version_sql, none, statement_timeout);
  const auto version = stored.int64(0, 0);
  if (version > schema_version) {
    throw orchestrator::checkpoint_error(name_ + ": the database holds schema version " + std::to_string(version) +
                                         ", newer than this build's (" + std::to_string(schema_version) +
                                         "); use a newer Switchboard");
  }
  if (version < 1) {
    for (const char* statement : version_1_sql) co_await c.query(statement, none, statement_timeout);
    const std::vector<param> applied{std::to_string(1)};
    co_await c.query(record_version_sql, applied, statement_timeout);
    spdlog::info("postgres: created the store's tables (schema version 1) in {}", server_.text);
  }
  if (version < 2) {
    for (const char* statement : version_2_sql) co_await c.query(statement, none, statement_timeout);
    const std::vector<param> applied{std::to_string(2)};
    co_await c.query(record_version_sql, applied, statement_timeout);
    spdlog::info("postgres: migrated the store's tables to schema version 2 in {}", server_.text);
  }
  co_await c.query("COMMIT", none, statement_timeout);
  const auto schema = co_await c.query("SELECT md5(COALESCE(current_schema(), ''))", none, statement_timeout);
  schema_md5_ = schema.text(0, 0);
}

std::string database::channel(std::string_view topic) const {
  return "switchboard_" + std::string(topic) + "_" + schema_md5_;
}

asio::awaitable<std::unique_ptr<connection>> database::open_dedicated() {
  auto opening = open_connection();  // g++ 12: named before co_await
  co_return co_await std::move(opening);
}

}  // namespace switchboard::stores::postgres
