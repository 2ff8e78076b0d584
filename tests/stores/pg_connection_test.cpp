// The PostgreSQL store's own connection (stores/postgres/src), tested
// directly: statements with parameters are prepared once per connection and
// reused, and preparing changes nothing a caller can see otherwise (errors,
// transactions, pipelines). pg_prepared_statements lists what the session
// holds: the tests read it on the same connection.
#include "pg_connection.hpp"

#include "postgres_test_server.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <type_traits>
#include <string>
#include <vector>

namespace switchboard::stores::postgres {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using switchboard::testing::hang_guard;

constexpr auto timeout = 10s;

// Runs `body(connection&)` on a fresh connection to the test server and
// returns what it returns. (g++ 12 cannot compile gtest's assertions inside
// a coroutine: the tests check what their bodies return.)
template <class Body>
auto on_connection(Body body) {
  hang_guard guard("a statement on the test server");
  asio::io_context io;
  const auto url = testing::server_url();
  connection c(io, describe_server(url));
  using value = typename std::invoke_result_t<Body&, connection&>::value_type;
  auto done = asio::co_spawn(
      io,
      [&]() -> asio::awaitable<value> {
        co_await c.connect(url, timeout);
        co_return co_await body(c);
      },
      asio::use_future);
  io.run();
  return done.get();
}

using values = std::vector<std::string>;

// One parameter (a braced list inside a coroutine trips g++ 12).
std::vector<param> one(std::string value) { return {std::move(value)}; }

asio::awaitable<std::string> first_value(connection& c, const char* sql, std::vector<param> params) {
  const auto rows = co_await c.query(sql, params, timeout);
  co_return rows.rows() > 0 ? rows.text(0, 0) : std::string();
}

// Statements without parameters.
asio::awaitable<std::string> first_value(connection& c, const char* sql) {
  auto reading = first_value(c, sql, std::vector<param>{});  // g++ 12: named before co_await
  co_return co_await std::move(reading);
}

const char* const prepared_count_sql = "SELECT count(*) FROM pg_prepared_statements";
const char* const prepared_text_sql = "SELECT statement FROM pg_prepared_statements";

TEST(pg_connection, a_statement_with_parameters_is_prepared_once_and_reused) {
  static const std::string add_one = "SELECT $1::int + 1";
  const auto got = on_connection([](connection& c) -> asio::awaitable<values> {
    values out;
    out.push_back(co_await first_value(c, add_one.c_str(), one("1")));
    out.push_back(co_await first_value(c, add_one.c_str(), one("41")));
    const std::string copy = add_one;  // the same text from another buffer is the same statement
    out.push_back(co_await first_value(c, copy.c_str(), one("9")));
    out.push_back(co_await first_value(c, prepared_count_sql));
    out.push_back(co_await first_value(c, prepared_text_sql));
    co_return out;
  });
  EXPECT_EQ(got, (values{"2", "42", "10", "1", add_one}));
}

TEST(pg_connection, a_statement_without_parameters_is_not_prepared) {
  const auto got = on_connection([](connection& c) -> asio::awaitable<values> {
    values out;
    out.push_back(co_await first_value(c, "SELECT 7"));
    out.push_back(co_await first_value(c, prepared_count_sql));
    co_return out;
  });
  EXPECT_EQ(got, (values{"7", "0"}));
}

TEST(pg_connection, a_statement_refused_when_prepared_throws_the_servers_error_and_the_connection_goes_on) {
  const auto got = on_connection([](connection& c) -> asio::awaitable<values> {
    values out;
    try {
      const auto refused = one("1");
      co_await c.query("SELECT $1::int FROM no_such_table", refused, timeout);
      out.push_back("not refused");
    } catch (const database_error& e) {
      out.push_back(e.sqlstate());
      out.push_back(std::string(e.what()).find("no_such_table") != std::string::npos ? "named" : e.what());
    }
    out.push_back(c.reusable() ? "reusable" : "lost");
    out.push_back(co_await first_value(c, "SELECT $1::text", one("still here")));
    out.push_back(co_await first_value(c, prepared_count_sql));  // the refused one is not kept
    co_return out;
  });
  EXPECT_EQ(got, (values{"42P01", "named", "reusable", "still here", "1"}));
}

TEST(pg_connection, a_statement_prepared_in_a_rolled_back_transaction_still_runs_after_it) {
  const auto got = on_connection([](connection& c) -> asio::awaitable<values> {
    const char* const twice = "SELECT $1::int * 2";
    values out;
    co_await c.query("BEGIN", {}, timeout);
    out.push_back(co_await first_value(c, twice, one("4")));
    co_await c.query("ROLLBACK", {}, timeout);
    out.push_back(co_await first_value(c, twice, one("5")));
    co_return out;
  });
  EXPECT_EQ(got, (values{"8", "10"}));
}

TEST(pg_connection, a_statement_still_runs_after_its_table_changed) {
  const auto got = on_connection([](connection& c) -> asio::awaitable<values> {
    const char* const name_of = "SELECT name FROM t WHERE id = $1::int";
    values out;
    co_await c.query("CREATE TEMP TABLE t (id int, name text)", {}, timeout);
    co_await c.query("INSERT INTO t VALUES (1, 'one')", {}, timeout);
    out.push_back(co_await first_value(c, name_of, one("1")));
    // What a migration by another server does to a prepared statement's table.
    co_await c.query("ALTER TABLE t ADD COLUMN extra bigint DEFAULT 0", {}, timeout);
    co_await c.query("CREATE INDEX ON t (id)", {}, timeout);
    out.push_back(co_await first_value(c, name_of, one("1")));
    co_return out;
  });
  EXPECT_EQ(got, (values{"one", "one"}));
}

TEST(pg_connection, statements_of_a_pipeline_are_prepared_and_answer_in_order) {
  const auto got = on_connection([](connection& c) -> asio::awaitable<values> {
    const std::vector<param> none;
    const std::vector<param> a{"3"};
    const std::vector<param> b{"x"};
    const std::vector<connection::statement> statements{
        {"BEGIN", &none}, {"SELECT $1::int * 3", &a}, {"SELECT $1::text || 'y'", &b}, {"COMMIT", &none}};
    values out;
    for (int round = 0; round < 2; ++round) {
      const auto results = co_await c.pipeline(statements, timeout);
      out.push_back(std::to_string(results.size()));
      out.push_back(results.at(1).text(0, 0));
      out.push_back(results.at(2).text(0, 0));
    }
    out.push_back(co_await first_value(c, prepared_count_sql));
    co_return out;
  });
  EXPECT_EQ(got, (values{"4", "9", "xy", "4", "9", "xy", "2"}));
}

TEST(pg_connection, past_the_cap_statements_still_run_unprepared) {
  const auto got = on_connection([](connection& c) -> asio::awaitable<values> {
    std::vector<std::string> texts;
    for (int i = 0; i < 80; ++i) texts.push_back("SELECT $1::int + " + std::to_string(i));
    values out;
    for (const auto& text : texts) out.push_back(co_await first_value(c, text.c_str(), one("1")));
    out.push_back(co_await first_value(c, prepared_count_sql));
    co_return out;
  });
  values expected;
  for (int i = 0; i < 80; ++i) expected.push_back(std::to_string(1 + i));
  expected.push_back("64");
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace switchboard::stores::postgres
