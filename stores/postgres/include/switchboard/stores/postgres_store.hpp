// The PostgreSQL backend (library switchboard::postgres_store): the store
// of runs that several processes on several machines share, with the
// checkpoint store, the run queue and the event feed in one database.
//
// Each factory connects to `conninfo`, anything libpq accepts: a
// `postgres://` or `postgresql://` URI, a `key=value` string, or "" for
// libpq's PG* environment variables alone (PGHOST, PGPORT, PGDATABASE,
// PGUSER, PGPASSWORD, PGPASSFILE, ...), which also fill whatever the string
// leaves out. The password is never logged nor put in a message. The tables
// (prefixed switchboard_, in the connection's search_path) are created or
// migrated on open, under an advisory lock, so processes starting at once
// on an empty database all come up. Throws checkpoint_error naming the
// server (host, port, database, user; never the password) and libpq's
// message when the string is malformed, the server refuses or cannot be
// reached (within the URL's connect_timeout, 10 s when it sets none), the
// password is wrong, or the database holds a newer schema.
//
// Each object owns a thread running an io_context and at most 4 pooled
// connections (the feed and the queue one more, to listen), driven
// without blocking (libpq's asynchronous API, the socket watched by the
// io_context): operations from any number of callers share them, and a
// pooled connection is held only for the SQL of one operation.
// A statement that gets no answer within 30 s, or a connection lost
// mid-operation (a server restarted, a backend terminated), fails that
// operation with a checkpoint_error; the next one connects afresh.
//
// Time: leases and timestamps come from `clock` when one is given (its
// reading is sent with each statement; processes sharing a database should
// then share a clock), otherwise from the database server's clock, so
// processes with skewed clocks still agree on whose lease has lapsed.
//
// Every object passes the conformance suite
// (switchboard/testing/checkpoint_store_conformance.hpp). Thread-safety: as
// the interfaces say (any thread, concurrently); the object must outlive
// the operations it started.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/event_feed.hpp>
#include <switchboard/orchestrator/run_queue.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace switchboard::stores {

// Other processes' writes: the event feed and the run queue each keep one
// more connection that LISTENs on a channel of their own
// ("switchboard_feed_" or "switchboard_queue_" and the md5, in hex, of the
// schema holding the tables, so stores in other schemas stay apart), and
// after appends or enqueues commit they send at most one NOTIFY per
// channel per `notify_tick` (never one per row: a NOTIFY takes a lock at
// commit that every writer of the database shares). A notification wakes
// every feed wait() (each reads its run again) and every queue
// wait_for_ready(). Polling remains the fallback: a feed waiter reads
// again every `poll_while_listening`, or every `poll_without_listener`
// while the listening connection is down (it reconnects with a backoff
// and then wakes every waiter once, since something may have been missed).
struct postgres_wakeup_options {
  std::chrono::milliseconds notify_tick{15};
  std::chrono::milliseconds poll_while_listening{1'000};
  std::chrono::milliseconds poll_without_listener{100};
};

std::shared_ptr<orchestrator::checkpoint_store> make_postgres_checkpoint_store(const std::string& conninfo,
                                                                               orchestrator::store_clock clock = {});

std::shared_ptr<orchestrator::run_queue> make_postgres_run_queue(const std::string& conninfo,
                                                                 orchestrator::store_clock clock = {},
                                                                 postgres_wakeup_options wakeups = {});

std::shared_ptr<orchestrator::event_feed> make_postgres_event_feed(const std::string& conninfo,
                                                                   orchestrator::store_clock clock = {},
                                                                   postgres_wakeup_options wakeups = {});

}  // namespace switchboard::stores
