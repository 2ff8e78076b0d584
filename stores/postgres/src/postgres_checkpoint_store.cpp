// The PostgreSQL checkpoint store.
//
// Two tables: switchboard_runs holds one row per run (its head, status,
// owner, lease and fencing number), switchboard_journal the records each
// save appended. A save (every step of every run) and a create are one
// statement each: a fenced compare-and-set on the run's row that appends
// the journal in the same statement; when it changes nothing the shared
// rules (store_support) say why, from the row as it then is. A claim, whose
// rules are richer, is one short transaction in two pipelined round trips:
// SELECT ... FOR UPDATE locks the row, store_support decides on what it
// read, and the update, the read back and COMMIT follow.
// Either way the row lock lets racing writers and claimants of any number
// of processes through one at a time, each seeing what the one before it
// committed. Reads are single statements (one snapshot each).
#include <switchboard/stores/postgres_store.hpp>

#include <switchboard/orchestrator/store_support.hpp>

#include "pg_database.hpp"
#include "pg_group_commit.hpp"
#include "pg_rows.hpp"
#include "pg_schema.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace switchboard::stores {
namespace {

namespace asio = boost::asio;
using namespace orchestrator;
using namespace postgres;
namespace store_support = orchestrator::store_support;

const std::string summary = summary_columns;

const std::string select_for_update_sql =
    "SELECT " + summary + ", " SWITCHBOARD_PG_NOW(2) " FROM switchboard_runs WHERE workflow_id = $1 FOR UPDATE";
const std::string select_summary_sql = "SELECT " + summary + " FROM switchboard_runs WHERE workflow_id = $1";
// A create is one statement: the run, and its journal only when the run
// was inserted (not when the id existed).
const std::string create_sql =
    "WITH run AS (INSERT INTO switchboard_runs (workflow_id, workflow_name, status, step, head, owner,"
    " lease_expires_ns, fence, updated_at_ns, save_seq, journal_length)"
    " SELECT $1::text, $2::text, $3::text, $4::bigint, $5::text, $6::text, t.now_ns + $7::bigint, 1, t.now_ns,"
    " nextval('switchboard_save_seq'), cardinality($9::text[]) FROM (SELECT " SWITCHBOARD_PG_NOW(8) " AS now_ns) t"
    " ON CONFLICT (workflow_id) DO NOTHING RETURNING workflow_id),"
    " j AS (INSERT INTO switchboard_journal (workflow_id, seq, record)"
    " SELECT run.workflow_id, e.ord, e.record FROM run, unnest($9::text[]) WITH ORDINALITY AS e(record, ord))"
    " SELECT count(*) FROM run";
// A save is one fenced statement (a compare-and-set): it changes the run
// only while the caller's fence and owner are the stored ones and its step
// is not older, and appends the records numbered from the locked row's
// journal_length. A status other than running releases the run (no owner,
// no lease); a running save keeps the store's lease. When it changes
// nothing, the caller reads the run to say why.
const std::string save_sql =
    "WITH n AS (SELECT " SWITCHBOARD_PG_NOW(9) " AS now_ns),"
    " run AS (UPDATE switchboard_runs r SET workflow_name = $2::text, status = $3::text, step = $4::bigint,"
    " head = $5::text, owner = CASE WHEN $3::text = 'running' THEN r.owner ELSE '' END,"
    " lease_expires_ns = CASE WHEN $3::text = 'running' THEN r.lease_expires_ns ELSE 0 END,"
    " updated_at_ns = n.now_ns, save_seq = nextval('switchboard_save_seq'),"
    " journal_length = r.journal_length + cardinality($8::text[]) FROM n"
    " WHERE r.workflow_id = $1::text AND r.fence = $7::bigint AND r.owner = $6::text AND r.owner <> ''"
    " AND r.step <= $4::bigint RETURNING r.journal_length - cardinality($8::text[]) AS base),"
    " j AS (INSERT INTO switchboard_journal (workflow_id, seq, record)"
    " SELECT $1::text, run.base + e.ord, e.record FROM run, unnest($8::text[]) WITH ORDINALITY AS e(record, ord))"
    " SELECT count(*) FROM run";
// Saves of several runs waiting together, in one statement (group commit):
// $1..$7 the saves, element by element (run, name, status, step, head,
// owner, fence); $8 and $9 their journal records (each with its run), in
// order. Each save is save_sql's compare-and-set: the rows that still match
// are locked in id order (so two processes' groups cannot deadlock), then
// changed, and their records appended. Answers, in input order, whether
// each save was made. A group holds at most one save per run.
const std::string save_many_sql =
    "WITH input AS (SELECT t.id, t.name, t.status, t.step, t.head, t.owner, t.fence, t.idx"
    " FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::bigint[])"
    " WITH ORDINALITY AS t(id, name, status, step, head, owner, fence, idx)),"
    " records AS (SELECT r.k AS id, r.rec, row_number() OVER (PARTITION BY r.k ORDER BY r.i) AS ord"
    " FROM unnest($8::text[], $9::text[]) WITH ORDINALITY AS r(k, rec, i)),"
    " counts AS (SELECT i.id, count(records.id) AS n FROM input i LEFT JOIN records ON records.id = i.id"
    " GROUP BY i.id),"
    " n AS (SELECT " SWITCHBOARD_PG_NOW(10) " AS now_ns),"
    " locked AS MATERIALIZED (SELECT r.workflow_id FROM switchboard_runs r JOIN input i ON r.workflow_id = i.id"
    " WHERE r.fence = i.fence AND r.owner = i.owner AND r.owner <> '' AND r.step <= i.step"
    " ORDER BY r.workflow_id FOR NO KEY UPDATE OF r),"
    " run AS (UPDATE switchboard_runs r SET workflow_name = i.name, status = i.status, step = i.step,"
    " head = i.head, owner = CASE WHEN i.status = 'running' THEN r.owner ELSE '' END,"
    " lease_expires_ns = CASE WHEN i.status = 'running' THEN r.lease_expires_ns ELSE 0 END,"
    " updated_at_ns = n.now_ns, save_seq = nextval('switchboard_save_seq'), journal_length = r.journal_length + c.n"
    " FROM input i JOIN counts c ON c.id = i.id JOIN locked l ON l.workflow_id = i.id, n"
    " WHERE r.workflow_id = i.id AND r.fence = i.fence AND r.owner = i.owner AND r.owner <> ''"
    " AND r.step <= i.step RETURNING r.workflow_id, r.journal_length - c.n AS base),"
    " j AS (INSERT INTO switchboard_journal (workflow_id, seq, record)"
    " SELECT run.workflow_id, run.base + records.ord, records.rec FROM run JOIN records ON records.id = run.workflow_id)"
    " SELECT run.workflow_id IS NOT NULL FROM input i LEFT JOIN run ON run.workflow_id = i.id ORDER BY i.idx";
const std::string claim_run_sql =
    "UPDATE switchboard_runs SET status = 'running', owner = $2, lease_expires_ns = $3::bigint, fence = fence + 1,"
    " updated_at_ns = $4::bigint, save_seq = nextval('switchboard_save_seq') WHERE workflow_id = $1";
// The owner's running rows are locked in id order first, as a group of
// saves locks them: the two cannot deadlock.
const std::string renew_sql =
    "WITH mine AS (SELECT workflow_id FROM switchboard_runs WHERE owner = $1 AND status = 'running'"
    " ORDER BY workflow_id FOR NO KEY UPDATE)"
    " UPDATE switchboard_runs r SET lease_expires_ns = " SWITCHBOARD_PG_NOW(3) " + $2::bigint FROM mine"
    " WHERE r.workflow_id = mine.workflow_id AND r.owner = $1 AND r.status = 'running'";
const std::string release_sql =
    "UPDATE switchboard_runs SET status = 'interrupted', owner = '', lease_expires_ns = 0,"
    " updated_at_ns = " SWITCHBOARD_PG_NOW(4) ", save_seq = nextval('switchboard_save_seq')"
    " WHERE workflow_id = $1 AND owner = $2 AND owner <> '' AND fence = $3::bigint AND status = 'running'";
// The run's row, then its journal, in one statement: one snapshot, so the
// head and the journal come from the same save.
const std::string load_sql =
    "SELECT 0 AS part, 0::bigint AS seq, " + summary + ", head, " SWITCHBOARD_PG_NOW(2) " AS now_ns"
    " FROM switchboard_runs WHERE workflow_id = $1"
    " UNION ALL SELECT 1, seq, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, record, NULL"
    " FROM switchboard_journal WHERE workflow_id = $1 ORDER BY 1, 2";
// The filters run in SQL (the status as a reader sees it, a lapsed lease
// included), so a page costs what it returns, not the size of the table.
const std::string list_sql =
    "WITH n AS (SELECT " SWITCHBOARD_PG_NOW(4) " AS now_ns)"
    " SELECT " + summary + ", save_seq, n.now_ns FROM switchboard_runs, n"
    " WHERE ($1::bigint = 0 OR save_seq < $1::bigint) AND ($2::text = '' OR workflow_name = $2::text)"
    " AND ($3::text = '' OR (CASE WHEN status = 'running' AND lease_expires_ns <= n.now_ns THEN 'interrupted'"
    " ELSE status END) = $3::text) ORDER BY save_seq DESC LIMIT $5::bigint";
const std::string erase_sql =
    "WITH j AS (DELETE FROM switchboard_journal WHERE workflow_id = $1)"
    " DELETE FROM switchboard_runs WHERE workflow_id = $1";
const std::string prune_sql =
    "WITH gone AS (DELETE FROM switchboard_runs WHERE status IN ('completed', 'failed', 'cancelled')"
    " AND updated_at_ns < $1::bigint RETURNING workflow_id),"
    " j AS (DELETE FROM switchboard_journal WHERE workflow_id IN (SELECT workflow_id FROM gone))"
    " SELECT count(*) FROM gone";

std::int64_t nanoseconds_of(std::chrono::milliseconds lease) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(lease).count();
}

class postgres_checkpoint_store final : public checkpoint_store {
 public:
  postgres_checkpoint_store(const std::string& conninfo, store_clock clock)
      : db_(conninfo, "checkpoint store", checkpoint_pool_size), clock_(std::move(clock)) {}

  asio::awaitable<void> create(save_request cp, std::chrono::milliseconds lease) override {
    store_support::check_new_run(cp);
    co_await db_.run([&](connection& c) { return create_now(c, cp, lease); });
  }
  asio::awaitable<checkpoint> claim(claim_request request) override {
    co_return co_await db_.run([&](connection& c) { return claim_now(c, request); });
  }
  // Saves that arrive while one is being written go together in the next
  // statement (group commit); each caller learns of its own save only.
  asio::awaitable<void> save(save_request cp) override {
    store_support::check_save_request(cp);
    auto queued = std::make_shared<saves::entry>();
    queued->write = std::move(cp);
    // Not cancellable (as the interface says): no slot of the caller's is
    // handed to the pool's thread.
    auto token = asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable);
    auto saving = asio::co_spawn(db_.io(), save_in_turn(queued), std::move(token));
    co_await std::move(saving);
    if (queued->error) std::rethrow_exception(queued->error);
  }
  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    co_return co_await db_.run([&](connection& c) -> asio::awaitable<std::size_t> {
      const std::vector<param> params{owner, int_param(nanoseconds_of(lease)), now_param(clock_)};
      const auto renewed = co_await c.query(renew_sql.c_str(), params, statement_timeout);
      co_return renewed.affected();
    });
  }
  asio::awaitable<bool> release(std::string workflow_id, std::string owner, std::int64_t fence) override {
    co_return co_await db_.run([&](connection& c) -> asio::awaitable<bool> {
      const std::vector<param> params{workflow_id, owner, int_param(fence), now_param(clock_)};
      const auto released = co_await c.query(release_sql.c_str(), params, statement_timeout);
      co_return released.affected() > 0;
    });
  }
  asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    co_return co_await db_.run([&](connection& c) { return load_now(c, workflow_id); });
  }
  asio::awaitable<run_page> list(list_request request) override {
    co_return co_await db_.run([&](connection& c) { return list_now(c, request); });
  }
  asio::awaitable<bool> erase(std::string workflow_id) override {
    co_return co_await db_.run([&](connection& c) -> asio::awaitable<bool> {
      const std::vector<param> params{workflow_id};
      const auto erased = co_await c.query(erase_sql.c_str(), params, statement_timeout);
      co_return erased.affected() > 0;
    });
  }
  asio::awaitable<std::size_t> prune(system_time finished_before) override {
    co_return co_await db_.run([&](connection& c) -> asio::awaitable<std::size_t> {
      const std::vector<param> params{int_param(to_nanoseconds(finished_before))};
      const auto pruned = co_await c.query(prune_sql.c_str(), params, statement_timeout);
      co_return static_cast<std::size_t>(pruned.int64(0, 0));
    });
  }

 private:
  // ---------------------------------------------------------------- operations (pool thread)

  asio::awaitable<void> create_now(connection& c, const save_request& cp, std::chrono::milliseconds lease) {
    const std::vector<param> params{cp.workflow_id, cp.workflow_name,  std::string(to_string(cp.status)),
                                    int_param(cp.step), cp.state_json, cp.owner,
                                    int_param(nanoseconds_of(lease)), now_param(clock_), text_array(cp.journal)};
    const auto created = co_await c.query(create_sql.c_str(), params, statement_timeout);
    if (created.int64(0, 0) == 1) co_return;
    auto stored = co_await select_summary(c, cp.workflow_id);
    if (stored) store_support::throw_exists(db_.name(), *stored);
    throw checkpoint_error(db_.name() + ": cannot create workflow '" + cp.workflow_id + "' (erased meanwhile)");
  }

  // Two round trips (pipelines): BEGIN and the locked read; then, once the
  // shared rules allowed the claim, the update, the claimed run read back
  // and COMMIT. A refused claim's transaction is rolled back by the pool.
  asio::awaitable<checkpoint> claim_now(connection& c, const claim_request& request) {
    const std::vector<param> lock_params{request.workflow_id, now_param(clock_)};
    const std::vector<connection::statement> lock{{"BEGIN", &none_}, {select_for_update_sql.c_str(), &lock_params}};
    const auto locked = co_await c.pipeline(lock, statement_timeout);
    std::optional<run_summary> stored;
    system_time now{};
    if (locked[1].rows() > 0) {
      stored = read_summary(locked[1], 0);
      now = from_nanoseconds(locked[1].int64(0, summary_column_count));  // once the lock is held
    }
    store_support::check_claim(db_.name(), stored, request, now);
    const std::vector<param> claim_params{request.workflow_id, request.owner,
                                          int_param(to_nanoseconds(now + request.lease)),
                                          int_param(to_nanoseconds(now))};
    const std::vector<param> load_params{request.workflow_id, now_param(clock_)};
    const std::vector<connection::statement> write{
        {claim_run_sql.c_str(), &claim_params}, {load_sql.c_str(), &load_params}, {"COMMIT", &none_}};
    const auto written = co_await c.pipeline(write, statement_timeout);
    auto claimed = checkpoint_from(written[1]);
    if (!claimed) throw checkpoint_error(db_.name() + ": workflow '" + request.workflow_id + "' vanished while claimed");
    co_return std::move(*claimed);
  }

  asio::awaitable<void> save_now(connection& c, const save_request& cp) {
    const std::vector<param> params{cp.workflow_id, cp.workflow_name,      std::string(to_string(cp.status)),
                                    int_param(cp.step), cp.state_json,     cp.owner,
                                    int_param(cp.fence), text_array(cp.journal), now_param(clock_)};
    const auto saved = co_await c.query(save_sql.c_str(), params, statement_timeout);
    if (saved.int64(0, 0) == 1) co_return;
    co_await explain_refusal(c, cp);
  }

  // A refused save: the shared rules say why, with the same words as every
  // store. Always throws.
  asio::awaitable<void> explain_refusal(connection& c, const save_request& cp) {
    const auto stored = co_await select_summary(c, cp.workflow_id);
    store_support::check_save(db_.name(), stored, cp);
    throw checkpoint_error(db_.name() + ": save of workflow '" + cp.workflow_id + "' refused: it changed meanwhile");
  }

  using saves = group_commit<save_request>;

  asio::awaitable<void> save_in_turn(std::shared_ptr<saves::entry> mine) {
    auto write_group = [this](const saves::group& group) { return save_group(group); };
    co_await saves_.take_turn(db_.io(), std::move(mine), write_group);
  }

  // A group of one is save_sql; a larger one is save_many_sql, in parts of
  // distinct runs. A part the server refused as a whole (a statement error:
  // nothing of it was written) is saved again one by one, so that one bad
  // save fails alone; a lost connection fails that part's saves only
  // (whether they were written is unknown, as for a single save).
  asio::awaitable<void> save_group(const saves::group& group) {
    for (const auto& part : parts_of_distinct_runs(group)) {
      if (part.size() == 1) {
        co_await save_alone(*part.front());
        continue;
      }
      bool refused_whole = false;
      std::exception_ptr failed;  // this part's only: the parts before it are written
      try {
        co_await save_together(part);
      } catch (const database_error& e) {
        if (statement_refused(e)) refused_whole = true;
        else failed = std::current_exception();
      } catch (...) {
        failed = std::current_exception();
      }
      if (failed) {
        for (const auto& one : part) one->error = failed;
      } else if (refused_whole) {
        for (const auto& one : part) co_await save_alone(*one);
      }
    }
  }

  asio::awaitable<void> save_alone(saves::entry& one) {
    try {
      co_await db_.run([&](connection& c) { return save_now(c, one.write); });
    } catch (...) {
      one.error = std::current_exception();
    }
  }

  asio::awaitable<void> save_together(const saves::group& part) {
    const auto made = co_await db_.run([&](connection& c) -> asio::awaitable<std::vector<bool>> {
      const auto params = group_params(part);
      const auto rows = co_await c.query(save_many_sql.c_str(), params, statement_timeout);
      std::vector<bool> out;
      for (int row = 0; row < rows.rows(); ++row) out.push_back(rows.text(row, 0) == "t");
      co_return out;
    });
    if (made.size() != part.size())
      throw checkpoint_error(db_.name() + ": a group of " + std::to_string(part.size()) + " saves answered " +
                             std::to_string(made.size()) + " outcomes");
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (made[i]) continue;
      // Refused: the shared rules say why, as for a save alone.
      auto& refused = *part[i];
      try {
        co_await db_.run([&](connection& c) { return explain_refusal(c, refused.write); });
      } catch (...) {
        refused.error = std::current_exception();
      }
    }
  }

  // The group in parts whose saves are of distinct runs, in arrival order
  // (one save per run per statement: the compare-and-set reads each row
  // once), and at most max_part of them (what one lost statement can take
  // with it is bounded).
  static constexpr std::size_t max_part = 256;
  static std::vector<saves::group> parts_of_distinct_runs(const saves::group& group) {
    std::vector<saves::group> parts;
    for (const auto& e : group) {
      auto fits = [&](const saves::group& part) {
        return part.size() < max_part &&
               std::none_of(part.begin(), part.end(),
                            [&](const auto& other) { return other->write.workflow_id == e->write.workflow_id; });
      };
      auto part = std::find_if(parts.begin(), parts.end(), fits);
      if (part == parts.end()) part = parts.insert(parts.end(), saves::group{});
      part->push_back(e);
    }
    return parts;
  }

  std::vector<param> group_params(const saves::group& part) const {
    std::vector<std::string> ids, names, statuses, steps, heads, owners, fences, record_runs, records;
    for (const auto& e : part) {
      const auto& cp = e->write;
      ids.push_back(cp.workflow_id);
      names.push_back(cp.workflow_name);
      statuses.emplace_back(to_string(cp.status));
      steps.push_back(std::to_string(cp.step));
      heads.push_back(cp.state_json);
      owners.push_back(cp.owner);
      fences.push_back(std::to_string(cp.fence));
      for (const auto& record : cp.journal) {
        record_runs.push_back(cp.workflow_id);
        records.push_back(record);
      }
    }
    return {text_array(ids),    text_array(names),  text_array(statuses),    text_array(steps),
            text_array(heads),  text_array(owners), text_array(fences),      text_array(record_runs),
            text_array(records), now_param(clock_)};
  }

  // A statement the server refused for what it holds (nothing of it
  // written, the connection usable), so that its saves alone may succeed;
  // not a lost connection, nor a cancelled statement or a lock timeout,
  // which saving one by one would only meet again, once per save.
  static bool statement_refused(const database_error& e) {
    const auto& state = e.sqlstate();
    return !state.empty() && !state.starts_with("08") && !state.starts_with("57") && state != "55P03";
  }

  asio::awaitable<std::optional<run_summary>> select_summary(connection& c, const std::string& workflow_id) {
    const std::vector<param> params{workflow_id};
    const auto rows = co_await c.query(select_summary_sql.c_str(), params, statement_timeout);
    if (rows.rows() == 0) co_return std::nullopt;
    co_return read_summary(rows, 0);
  }

  asio::awaitable<std::optional<checkpoint>> load_now(connection& c, const std::string& workflow_id) {
    const std::vector<param> params{workflow_id, now_param(clock_)};
    const auto rows = co_await c.query(load_sql.c_str(), params, statement_timeout);
    co_return checkpoint_from(rows);
  }

  // The checkpoint load_sql's rows hold (none when the run is absent).
  static std::optional<checkpoint> checkpoint_from(const result& rows) {
    if (rows.rows() == 0 || rows.int64(0, 0) != 0) return std::nullopt;
    // Columns: part, seq, the summary, head (or a journal record), now.
    constexpr int first = 2;
    constexpr int head = first + summary_column_count;
    run_summary s = read_summary(rows, 0, first);
    s.status = store_support::effective_status(s.status, s.lease_expires, from_nanoseconds(rows.int64(0, head + 1)));
    std::vector<std::string> journal;
    journal.reserve(static_cast<std::size_t>(rows.rows() - 1));
    for (int row = 1; row < rows.rows(); ++row) journal.push_back(rows.text(row, head));
    return store_support::checkpoint_of(std::move(s), rows.text(0, head), std::move(journal));
  }

  asio::awaitable<run_page> list_now(connection& c, const list_request& request) {
    const auto before = store_support::parse_cursor(db_.name(), request.cursor);
    // One row more than the page: whether another page follows.
    const param limit = request.limit > 0 ? int_param(static_cast<std::int64_t>(request.limit) + 1) : std::nullopt;
    const std::vector<param> params{int_param(before.value_or(0)), request.workflow_name,
                                    request.status ? std::string(to_string(*request.status)) : std::string(),
                                    now_param(clock_), limit};
    const auto rows = co_await c.query(list_sql.c_str(), params, statement_timeout);
    run_page page;
    std::int64_t last_seq = 0;
    for (int row = 0; row < rows.rows(); ++row) {
      if (request.limit > 0 && page.runs.size() == request.limit) {
        page.next_cursor = store_support::make_cursor(last_seq);
        break;
      }
      auto s = read_summary(rows, row);
      const auto now = from_nanoseconds(rows.int64(row, summary_column_count + 1));
      s.status = store_support::effective_status(s.status, s.lease_expires, now);
      last_seq = rows.int64(row, summary_column_count);
      page.runs.push_back(std::move(s));
    }
    co_return page;
  }

  database db_;
  store_clock clock_;  // empty: the server's clock
  const std::vector<param> none_;
  // Two groups written at once (of the pool's three connections): a save
  // that arrives just after a group left waits for a second one, not for
  // the first's round trip. Two servers at 100 runs in flight: p99 save
  // 42-90 ms with one, 22-25 ms with two, the same throughput. Runs save
  // one step at a time, so two groups never hold one run's saves.
  saves saves_{2};  // group commit (pool's thread only)
};

}  // namespace

std::shared_ptr<checkpoint_store> make_postgres_checkpoint_store(const std::string& conninfo, store_clock clock) {
  return std::make_shared<postgres_checkpoint_store>(conninfo, std::move(clock));
}

}  // namespace switchboard::stores
