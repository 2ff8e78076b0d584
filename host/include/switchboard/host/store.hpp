// Where a host keeps workflow runs: the checkpoint store a URL names.
//
//   memory          an in-memory store: nothing outlives the process
//   sqlite:PATH     an SQLite database file (created 0600; its directory must exist)
//   postgres://...  a PostgreSQL database that many processes and machines
//   postgresql://...  share: libpq's own URI, completed by the PG* environment
//                   variables (PGPASSWORD, PGPASSFILE, ...); the tables are
//                   created on first use (switchboard::postgres_store)
//   ""              the default: sqlite:<state directory>/workflows.db
//
// A password may be written in a postgres URL, but is better kept in
// PGPASSFILE or PGPASSWORD: printable_store_url leaves it out of anything
// shown, and no message or log ever carries it.
//
// The URL is the invoker's configuration (a command line, a server's
// settings), never stored state. open_store is the one place that maps a
// scheme to a backend.
//
// Thread-safety: plain functions; state_directory and the default URL read
// the environment and may create the state directory. The stores returned
// are safe to use from any thread (checkpoint_store.hpp).
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/event_feed.hpp>
#include <switchboard/orchestrator/run_queue.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace switchboard::host {

// A store URL, read.
struct store_url {
  enum class backend { memory, sqlite, postgres };
  backend scheme = backend::memory;
  std::filesystem::path path;  // sqlite: the database file, as written; otherwise empty
  std::string conninfo;        // postgres: the URL as written (libpq reads it); otherwise empty
};

// Reads `url`; host_error(bad_store_url) naming it (its password left out)
// when it is neither "memory", "sqlite:PATH" with a non-empty PATH, nor a
// postgres:// or postgresql:// URL. A postgres URL is checked by libpq when
// opened.
store_url parse_store_url(std::string_view url);

// `url` with a relative SQLite path made absolute ("sqlite:runs.db" as
// "sqlite:/cwd/runs.db"), so that a command printed for later finds the
// same file from any directory. Anything else (a postgres URL, an
// unreadable URL) is returned unchanged: open_store reports it.
std::string absolute_store_url(std::string_view url);

// `url` as it may be shown (a command printed for later, a message): a
// URL such as postgres://... without its password ("postgresql://app:pw@db/runs"
// as "postgresql://app@db/runs", a password= parameter dropped), so that
// libpq takes it from PGPASSWORD or PGPASSFILE instead. Anything else is
// returned unchanged.
std::string printable_store_url(std::string_view url);

// The user's state directory: SWITCHBOARD_STATE_DIR, else
// $XDG_STATE_HOME/switchboard, else ~/.local/state/switchboard. Created
// private (0700) when missing; a directory of another user's, or a symbolic
// link, is refused, one of this user's with looser modes tightened. Throws
// std::runtime_error naming the directory when it cannot be used.
std::filesystem::path state_directory();

// "sqlite:<state directory>/workflows.db".
std::string default_store_url();

// Opens the store `url` names ("" = default_store_url()). Throws
// host_error(bad_store_url) for a URL parse_store_url refuses, and the
// backend's checkpoint_error (naming the file, or the server without the
// password) when it cannot open.
std::shared_ptr<orchestrator::checkpoint_store> open_store(std::string_view url);

// The event feed kept with the store `url` names (the same database file
// for SQLite, the same database for PostgreSQL; the process's memory for
// "memory"), for a server that streams runs and replays them. Throws as
// open_store does.
std::shared_ptr<orchestrator::event_feed> open_event_feed(std::string_view url);

// The run queue kept with the store `url` names, for hubs that divide runs
// among themselves. Throws as open_store does.
std::shared_ptr<orchestrator::run_queue> open_run_queue(std::string_view url);

// Whether processes on several machines can share the store `url` names
// (PostgreSQL): a server then divides its runs with the others through the
// run queue instead of running every run it was sent.
bool is_shared_store(std::string_view url);

}  // namespace switchboard::host
