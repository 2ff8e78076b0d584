// The PostgreSQL server the store's tests run against, and plain (blocking)
// libpq for what the tests do behind the store's back: create a schema per
// test, hold a row lock, read pg_stat_activity. Blocking is fine here: the
// test's own thread waits, the store under test never does.
//
// The server is the one CTest's postgres_server fixture started with
// scripts/postgres-test-server.sh (its state directory in
// SWITCHBOARD_TEST_POSTGRES_STATE), or any server a developer names with
// SWITCHBOARD_TEST_POSTGRES_URL. Neither set, or the server gone: the tests
// fail, they never skip.
#pragma once

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

#include <libpq-fe.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace switchboard::stores::testing {

inline std::string read_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) {
    throw std::runtime_error("cannot read " + file.string() + ": is the PostgreSQL test server running?");
  }
  return line;
}

// The state directory of the fixture's server ("" when a URL is given instead).
inline std::filesystem::path server_state() {
  const char* state = std::getenv("SWITCHBOARD_TEST_POSTGRES_STATE");
  return state != nullptr ? std::filesystem::path(state) : std::filesystem::path();
}

// The URL of the tests' database, over the unix socket.
inline std::string server_url() {
  if (const char* url = std::getenv("SWITCHBOARD_TEST_POSTGRES_URL"); url != nullptr && *url != '\0') return url;
  const auto state = server_state();
  if (state.empty()) {
    throw std::runtime_error(
        "no PostgreSQL for the tests: run them with ctest (the postgres_server fixture starts one), or set "
        "SWITCHBOARD_TEST_POSTGRES_URL");
  }
  return read_line(state / "url");
}

// `url` with the connection's search_path set to `schema`, so each test has
// tables of its own in one database; `settings` adds more server settings
// ("lock_timeout=200"). libpq keeps one `options` parameter: all go in it.
inline std::string url_with_schema(const std::string& url, const std::string& schema,
                                   const std::vector<std::string>& settings = {}) {
  std::string options = "-csearch_path%3D" + schema;
  for (const auto& setting : settings) {
    const auto equals = setting.find('=');
    options += "%20-c" + setting.substr(0, equals) + "%3D" + setting.substr(equals + 1);
  }
  return url + (url.find('?') == std::string::npos ? "?" : "&") + "options=" + options;
}

struct pg_finish {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using blocking_connection = std::unique_ptr<PGconn, pg_finish>;

inline blocking_connection connect_blocking(const std::string& url) {
  blocking_connection c(PQconnectdb(url.c_str()));
  if (PQstatus(c.get()) != CONNECTION_OK) {
    throw std::runtime_error(std::string("cannot connect to the test server: ") + PQerrorMessage(c.get()));
  }
  return c;
}

// Runs `sql`; returns the first column of the first row ("" when none).
inline std::string exec_sql(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  const auto status = PQresultStatus(r);
  std::string first = PQntuples(r) > 0 && PQnfields(r) > 0 ? PQgetvalue(r, 0, 0) : "";
  std::string error = PQresultErrorMessage(r);
  PQclear(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) throw std::runtime_error(sql + ": " + error);
  return first;
}

inline std::string exec_sql(const std::string& url, const std::string& sql) {
  auto c = connect_blocking(url);
  return exec_sql(c.get(), sql);
}

// A schema for one test's scratch directory (the conformance suite gives
// each test a fresh one, and opens the store, queue and feed with it):
// created on first use, the same name for the same directory.
// Hex, because directory names differ by case and identifiers fold it.
inline std::string schema_for(const std::filesystem::path& scratch_dir) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string name = "t_";
  for (const unsigned char c : scratch_dir.filename().string().substr(0, 30)) {
    name += digits[c >> 4];
    name += digits[c & 15];
  }
  return name;
}

inline std::string url_for(const std::filesystem::path& scratch_dir, const std::vector<std::string>& settings = {}) {
  const auto url = server_url();
  const auto schema = schema_for(scratch_dir);
  exec_sql(url, "CREATE SCHEMA IF NOT EXISTS " + schema);
  return url_with_schema(url, schema, settings);
}

// A port on 127.0.0.1 nobody listens on (bound, then closed).
inline int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    throw std::runtime_error("cannot find a free port");
  }
  const int port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

}  // namespace switchboard::stores::testing
