#include "pg_connection.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <poll.h>

#include <cstdlib>
#include <string>
#include <utility>

namespace switchboard::stores::postgres {
namespace {

namespace asio = boost::asio;
using descriptor = asio::posix::descriptor_base;

constexpr const char* statement_stalled = "no answer within the statement timeout (the server or the network stalled)";

// libpq's messages span lines ("...\n\tThis probably means..."): one line
// reads better in a log and in an exception.
std::string one_line(std::string text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n' || c == '\t' || c == '\r') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// libpq prints notices (and a FATAL that arrives while idle) to stderr by
// default; the log is where they belong.
void log_notice(void* server, const char* message) {
  spdlog::debug("postgres: {}: {}", static_cast<const server_description*>(server)->text, one_line(message));
}

std::string env_or(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// The password of a connection string libpq could not parse, found by hand
// so that libpq's complaint (which may quote the string) can be scrubbed:
// `scheme://user:password@host` or `password=...`.
std::string password_by_hand(const std::string& conninfo) {
  const auto scheme_end = conninfo.find("://");
  if (scheme_end != std::string::npos) {
    const auto start = scheme_end + 3;
    const auto authority_end = conninfo.find_first_of("/?", start);
    const auto authority = conninfo.substr(start, authority_end == std::string::npos ? std::string::npos
                                                                                     : authority_end - start);
    const auto at = authority.rfind('@');
    const auto colon = authority.find(':');
    if (at != std::string::npos && colon != std::string::npos && colon < at) {
      return authority.substr(colon + 1, at - colon - 1);
    }
  }
  const auto key = conninfo.find("password=");
  if (key == std::string::npos) return {};
  const auto start = key + 9;
  const auto end = conninfo.find_first_of("& ", start);
  return conninfo.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Frees what PQconninfoParse returned.
struct options_deleter {
  void operator()(PQconninfoOption* options) const noexcept { PQconninfoFree(options); }
};

}  // namespace

server_description describe_server(const std::string& conninfo) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, options_deleter> options(PQconninfoParse(conninfo.c_str(), &error));
  if (!options) {
    if (error != nullptr) PQfreemem(error);
    return {"PostgreSQL", "a connection string libpq cannot read", password_by_hand(conninfo)};
  }
  std::string host, hostaddr, port, dbname, user, password;
  for (auto* o = options.get(); o->keyword != nullptr; ++o) {
    const std::string key = o->keyword;
    const std::string value = o->val != nullptr ? o->val : "";
    if (key == "host") host = value;
    if (key == "hostaddr") hostaddr = value;
    if (key == "port") port = value;
    if (key == "dbname") dbname = value;
    if (key == "user") user = value;
    if (key == "password") password = value;
  }
  // libpq fills what the string leaves out from the PG* variables, then
  // from its defaults; say the same.
  if (host.empty()) host = hostaddr.empty() ? env_or("PGHOST", "the default socket directory") : hostaddr;
  if (port.empty()) port = env_or("PGPORT", "5432");
  if (user.empty()) user = env_or("PGUSER", "");
  if (dbname.empty()) dbname = env_or("PGDATABASE", user);
  if (password.empty()) password = env_or("PGPASSWORD", "");
  std::string where = "at " + host + " port " + port;
  if (!dbname.empty()) where += ", database '" + dbname + "'";
  if (!user.empty()) where += ", user '" + user + "'";
  return {"PostgreSQL " + where, where, password};
}

std::string redact(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3)) {
    text.replace(at, secret.size(), "***");
  }
  return text;
}

std::string result::text(int row, int column) const {
  return std::string(PQgetvalue(r_.get(), row, column), static_cast<std::size_t>(PQgetlength(r_.get(), row, column)));
}

std::int64_t result::int64(int row, int column) const {
  return std::strtoll(PQgetvalue(r_.get(), row, column), nullptr, 10);
}

std::size_t result::affected() const noexcept {
  return static_cast<std::size_t>(std::strtoull(PQcmdTuples(r_.get()), nullptr, 10));
}

connection::connection(asio::io_context& io, server_description server)
    : io_(io), server_(std::move(server)), socket_(io), timer_(io) {}

connection::~connection() {
  // libpq owns the descriptor: stop watching it, then let PQfinish close it.
  if (socket_.is_open()) socket_.release();
  if (conn_ != nullptr) PQfinish(conn_);
}

asio::awaitable<void> connection::connect(const std::string& conninfo, std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  conn_ = PQconnectStart(conninfo.c_str());
  if (conn_ == nullptr) fail("cannot connect: out of memory");
  if (PQstatus(conn_) == CONNECTION_BAD) fail("cannot connect");
  PQsetNoticeProcessor(conn_, log_notice, &server_);
  if (PQsetnonblocking(conn_, 1) != 0) fail("cannot connect without blocking");
  // libpq's protocol: before the first poll, wait as if it asked to write.
  auto state = PGRES_POLLING_WRITING;
  for (;;) {
    watch_socket();
    const direction next = state == PGRES_POLLING_READING ? direction::read : direction::write;
    co_await wait(next, deadline, "cannot connect: no answer within the connect timeout");
    state = PQconnectPoll(conn_);
    if (state == PGRES_POLLING_OK) break;
    if (state == PGRES_POLLING_FAILED) fail("cannot connect");
  }
  watch_socket();
  spdlog::debug("postgres: connected to {}", server_.text);
}

// libpq may open a new socket at every step of connecting (another host,
// a retry without TLS), even one with the same number: watch the current
// one afresh each time.
void connection::watch_socket() {
  const int fd = PQsocket(conn_);
  if (fd < 0) fail("cannot connect: no socket");
  if (socket_.is_open()) socket_.release();
  socket_.assign(fd);
}

asio::awaitable<result> connection::query(const char* sql, const std::vector<param>& params,
                                          std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  check_texts(params);
  const std::string* name = co_await prepared(sql, params.size(), deadline);
  send(sql, name, params);
  co_await flush(deadline);
  co_return co_await receive(deadline);
}

// Refused before anything is sent: nothing goes out half-sent.
void connection::check_texts(const std::vector<param>& params) {
  for (const auto& p : params) {
    if (p && p->find('\0') != std::string::npos) {
      // 22021: character_not_in_repertoire; the connection stays usable.
      throw database_error("a text holds a NUL byte, which PostgreSQL cannot store", "22021");
    }
  }
}

// A statement with parameters is parsed and planned by the server once per
// connection, as a named statement, and afterwards only bound and run:
// parsing and planning the stores' statements was most of PostgreSQL's CPU
// per run. The one extra round trip is paid on a statement's first use on
// the connection. Statements without parameters (BEGIN, COMMIT, the
// schema's) are sent as they are; past max_prepared, so is everything else.
asio::awaitable<const std::string*> connection::prepared(const char* sql, std::size_t param_count,
                                                         clock::time_point deadline) {
  if (param_count == 0) co_return nullptr;
  if (const auto found = prepared_.find(std::string_view(sql)); found != prepared_.end()) co_return &found->second;
  if (prepared_.size() >= max_prepared) co_return nullptr;
  if (conn_ == nullptr || broken_ || PQstatus(conn_) != CONNECTION_OK) fail("the connection is lost");
  std::string name = "switchboard_" + std::to_string(prepared_.size() + 1);
  if (PQsendPrepare(conn_, name.c_str(), sql, static_cast<int>(param_count), nullptr) == 0) {
    fail("cannot send a statement");
  }
  co_await flush(deadline);
  co_await receive(deadline);  // the server's refusal, if any, is thrown
  const auto added = prepared_.emplace(std::string(sql), std::move(name)).first;
  co_return &added->second;  // nodes never move
}

void connection::send(const char* sql, const std::string* name, const std::vector<param>& params) {
  if (conn_ == nullptr || broken_ || PQstatus(conn_) != CONNECTION_OK) fail("the connection is lost");
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  const int count = static_cast<int>(values.size());
  const int sent = name != nullptr
                       ? PQsendQueryPrepared(conn_, name->c_str(), count, values.data(), nullptr, nullptr, 0)
                       : PQsendQueryParams(conn_, sql, count, nullptr, values.data(), nullptr, nullptr, 0);
  if (sent == 0) fail("cannot send a statement");
}

asio::awaitable<std::vector<result>> connection::pipeline(const std::vector<statement>& statements,
                                                          std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  for (const auto& s : statements) check_texts(*s.params);
  // Prepared (when new) before the pipeline starts: it then sends each
  // statement once, and reads one result per statement.
  std::vector<const std::string*> names;
  names.reserve(statements.size());
  for (const auto& s : statements) names.push_back(co_await prepared(s.sql, s.params->size(), deadline));
  if (conn_ == nullptr || broken_ || PQenterPipelineMode(conn_) == 0) fail("cannot enter pipeline mode");
  for (std::size_t i = 0; i < statements.size(); ++i) send(statements[i].sql, names[i], *statements[i].params);
  if (PQpipelineSync(conn_) == 0) fail("cannot send a statement");
  co_await flush(deadline);
  std::vector<result> results;
  std::optional<result> error;  // the first; owned at once, so a throw frees it
  for (std::size_t i = 0; i < statements.size(); ++i) {
    // Each statement's results end with a null result.
    std::optional<result> last;
    for (;;) {
      PGresult* r = co_await next_result(deadline);
      if (r == nullptr) break;
      const auto status = PQresultStatus(r);
      if ((status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE) && !error) {
        error.emplace(r);
      } else {
        last.emplace(r);  // PGRES_PIPELINE_ABORTED too: skipped after an error
      }
    }
    if (last) results.push_back(std::move(*last));
  }
  PGresult* synced = co_await next_result(deadline);  // PGRES_PIPELINE_SYNC
  result sync(synced);
  // A connection that cannot leave pipeline mode serves nobody else.
  if (PQexitPipelineMode(conn_) == 0) broken_ = true;
  if (error) fail_result(error->get());
  if (broken_) fail("cannot leave pipeline mode");
  if (results.size() != statements.size()) fail("a statement of the pipeline gave no result");
  co_return results;
}

// The next result once libpq has it whole (null: the end of a statement's).
asio::awaitable<PGresult*> connection::next_result(clock::time_point deadline) {
  while (PQisBusy(conn_) != 0) {
    co_await wait(direction::read, deadline, statement_stalled);
    if (PQconsumeInput(conn_) == 0) fail("lost the connection");
  }
  co_return PQgetResult(conn_);
}

// Sends what libpq buffered. While the socket is full, reads too: the
// server may be waiting for us to read before it reads more.
asio::awaitable<void> connection::flush(clock::time_point deadline) {
  for (;;) {
    const int pending = PQflush(conn_);
    if (pending == 0) co_return;
    if (pending < 0) fail("cannot send a statement");
    co_await wait(direction::either, deadline, statement_stalled);
    if (PQconsumeInput(conn_) == 0) fail("lost the connection");
  }
}

// Reads every result of the statement (libpq needs them all read before
// the next one); the first error, if any, is thrown once they are.
asio::awaitable<result> connection::receive(clock::time_point deadline) {
  std::optional<result> last;
  std::optional<result> error;  // the first; owned at once, so a throw frees it
  for (;;) {
    PGresult* r = co_await next_result(deadline);
    if (r == nullptr) break;
    const auto status = PQresultStatus(r);
    if ((status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE) && !error) {
      error.emplace(r);
    } else {
      last.emplace(r);
    }
  }
  if (error) fail_result(error->get());
  if (!last) fail("no result");
  co_return std::move(*last);
}

asio::awaitable<void> connection::wait(direction what, clock::time_point deadline, const char* on_timeout) {
  using namespace asio::experimental::awaitable_operators;
  // g++ 12: named before co_await (each wait, and the race of them).
  timer_.expires_at(deadline);
  const auto token = asio::as_tuple(asio::use_awaitable);
  std::size_t index = 0;
  boost::system::error_code ec;
  if (what == direction::either) {
    auto readable = socket_.async_wait(descriptor::wait_read, token);
    auto writable = socket_.async_wait(descriptor::wait_write, token);
    auto expired = timer_.async_wait(token);
    auto race = std::move(readable) || std::move(writable) || std::move(expired);
    auto outcome = co_await std::move(race);
    index = outcome.index() == 2 ? 1 : 0;
    std::visit([&](const auto& t) { ec = std::get<0>(t); }, outcome);
  } else {
    const auto type = what == direction::read ? descriptor::wait_read : descriptor::wait_write;
    auto ready = socket_.async_wait(type, token);
    auto expired = timer_.async_wait(token);
    auto race = std::move(ready) || std::move(expired);
    auto outcome = co_await std::move(race);
    index = outcome.index();
    std::visit([&](const auto& t) { ec = std::get<0>(t); }, outcome);
  }
  if (index == 1) fail(on_timeout);
  if (ec) fail("cannot wait for the socket: " + ec.message());
}

asio::awaitable<std::vector<connection::notification>> connection::next_notifications() {
  if (conn_ == nullptr || broken_ || PQstatus(conn_) != CONNECTION_OK) fail("the connection is lost");
  co_await wait(direction::read, clock::time_point::max(), "no notification (never: there is no deadline)");
  // 0: the server closed the connection (it may first send a FATAL, which
  // libpq hands to the notice processor; the end of the stream follows).
  if (PQconsumeInput(conn_) == 0 || PQstatus(conn_) != CONNECTION_OK) fail("lost the connection");
  std::vector<notification> heard;
  while (PGnotify* n = PQnotifies(conn_)) {
    heard.push_back({n->be_pid, n->extra != nullptr ? n->extra : ""});
    PQfreemem(n);
  }
  co_return heard;
}

bool connection::reusable() const noexcept {
  return conn_ != nullptr && !broken_ && PQstatus(conn_) == CONNECTION_OK &&
         PQtransactionStatus(conn_) == PQTRANS_IDLE && PQpipelineStatus(conn_) == PQ_PIPELINE_OFF;
}

bool connection::in_transaction() const noexcept {
  if (conn_ == nullptr || broken_) return false;
  const auto status = PQtransactionStatus(conn_);
  return status == PQTRANS_INTRANS || status == PQTRANS_INERROR;
}

bool connection::still_open() noexcept {
  if (!reusable()) return false;
  // An idle connection (no LISTEN) hears from the server only when it is
  // going away: a FATAL (a terminated backend, a shutdown), then the end of
  // the stream, maybe not yet both. Anything heard means drop it.
  pollfd fd{PQsocket(conn_), POLLIN, 0};
  if (::poll(&fd, 1, 0) == 0) return true;
  PQconsumeInput(conn_);
  spdlog::info("postgres: {} closed an idle connection; opening another", server_.text);
  broken_ = true;
  return false;
}

void connection::fail(std::string_view what, std::string sqlstate) {
  std::string message(what);
  if (conn_ != nullptr) {
    const auto detail = one_line(redact(PQerrorMessage(conn_), server_.password));
    if (!detail.empty()) message += ": " + detail;
  }
  broken_ = true;
  throw database_error(message, std::move(sqlstate));
}

void connection::fail_result(const PGresult* r) {
  const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  std::string sqlstate = state != nullptr ? state : "";
  std::string message = one_line(redact(PQresultErrorMessage(r), server_.password));
  // A refused statement leaves the connection usable; a lost one does not.
  if (sqlstate.empty() || sqlstate.starts_with("08") || sqlstate.starts_with("57P") ||
      PQstatus(conn_) != CONNECTION_OK) {
    broken_ = true;
  }
  throw database_error(message, std::move(sqlstate));
}

}  // namespace switchboard::stores::postgres
