// The PostgreSQL store's tables, and the SQL pieces the three objects share.
//
// Tables carry a switchboard_ prefix so they can live beside an
// application's own in one database (the schema is the connection's
// search_path: `?options=-csearch_path%3Dmy_schema`). Times are integer
// nanoseconds since the Unix epoch, as in the SQLite store, so a clock the
// caller gives (store_clock) round-trips exactly.
//
// Versions: switchboard_schema_version holds one row per version applied.
// Opening takes a transaction-scoped advisory lock first, so processes
// starting at once on an empty database create the tables once, one after
// the other; a database of a newer version is refused, not misread.
#pragma once

#include <array>

namespace switchboard::stores::postgres {

inline constexpr int schema_version = 2;

// pg_advisory_xact_lock key of the migration ("SwbS").
inline constexpr const char* migration_lock_sql = "SELECT pg_advisory_xact_lock(1400332883)";

inline constexpr const char* create_version_table_sql =
    "CREATE TABLE IF NOT EXISTS switchboard_schema_version ("
    " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())";
inline constexpr const char* read_version_sql = "SELECT COALESCE(max(version), 0) FROM switchboard_schema_version";
inline constexpr const char* record_version_sql = "INSERT INTO switchboard_schema_version (version) VALUES ($1)";

// Version 1. save_seq orders list() (the most recently saved first);
// enqueue_seq orders the queue. Both come from sequences: unique across
// processes without a table lock. journal_length counts a run's journal
// records, kept in the run's row so that a save numbers the records it
// appends from the row it has just locked and updated (a statement's
// snapshot of the journal table may predate a save committed meanwhile).
inline constexpr std::array<const char*, 11> version_1_sql{
    "CREATE SEQUENCE switchboard_save_seq",
    "CREATE TABLE switchboard_runs ("
    " workflow_id text PRIMARY KEY, workflow_name text NOT NULL, status text NOT NULL, step bigint NOT NULL,"
    " head text NOT NULL, owner text NOT NULL, lease_expires_ns bigint NOT NULL, fence bigint NOT NULL,"
    " updated_at_ns bigint NOT NULL, save_seq bigint NOT NULL, journal_length bigint NOT NULL)",
    "CREATE INDEX switchboard_runs_by_save_seq ON switchboard_runs (save_seq)",
    "CREATE INDEX switchboard_runs_running_by_owner ON switchboard_runs (owner) WHERE status = 'running'",
    "CREATE TABLE switchboard_journal ("
    " workflow_id text NOT NULL, seq bigint NOT NULL, record text NOT NULL, PRIMARY KEY (workflow_id, seq))",
    "CREATE SEQUENCE switchboard_enqueue_seq",
    "CREATE TABLE switchboard_queue ("
    " workflow_id text PRIMARY KEY, workflow_name text NOT NULL, reason text NOT NULL, payload text NOT NULL,"
    " owner text NOT NULL, lease_expires_ns bigint NOT NULL, fence bigint NOT NULL, enqueue_seq bigint NOT NULL)",
    "CREATE INDEX switchboard_queue_by_enqueue_seq ON switchboard_queue (enqueue_seq)",
    "CREATE TABLE switchboard_feed_heads (workflow_id text PRIMARY KEY, last_position bigint NOT NULL)",
    "CREATE TABLE switchboard_events ("
    " workflow_id text NOT NULL, position bigint NOT NULL, event text NOT NULL, at_ns bigint NOT NULL,"
    " PRIMARY KEY (workflow_id, position))",
    "COMMENT ON TABLE switchboard_runs IS 'Switchboard checkpoint store: one row per workflow run'",
};

// Version 2. Claim fences come from one sequence (the run queue's claims),
// not from the row, which done() removes: a thread done and queued again
// never gets a fence it had (ADR 0037). It starts above every fence queued.
inline constexpr std::array<const char*, 2> version_2_sql{
    "CREATE SEQUENCE switchboard_claim_fence_seq",
    "SELECT setval('switchboard_claim_fence_seq', GREATEST(1, m), m > 0)"
    " FROM (SELECT COALESCE(max(fence), 0) AS m FROM switchboard_queue) AS queued",
};

// The server's clock in nanoseconds. It ticks in microseconds: a time it
// reads is stamped at the end of its microsecond, so it is never earlier
// than a nanosecond clock read before the statement.
#define SWITCHBOARD_PG_DB_NOW "((extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000 + 999)"
// The store's time: parameter $N when the caller gave a clock (its reading
// in nanoseconds), else the server's clock.
#define SWITCHBOARD_PG_NOW(n) "COALESCE($" #n "::bigint, " SWITCHBOARD_PG_DB_NOW ")"

}  // namespace switchboard::stores::postgres
