// The SQLite backend (library switchboard::sqlite_store): the embedded
// default store of runs, with the checkpoint store, the run queue and the
// event feed each kept in one database file that several processes of one
// machine may share.
//
// Each factory opens (creating if needed) the SQLite database at `path`:
// WAL mode, a busy timeout so several processes can share it,
// synchronous=NORMAL (a killed process loses nothing it committed). A new
// file is created readable and writable by its owner only (0600), whatever
// the umask. Throws checkpoint_error naming the file and SQLite's message
// on failure: a missing directory, an unwritable path, a file that is not
// an SQLite database or one written by a newer format. The directory is not
// created. Each object has its own connection and its own thread, on which
// its operations run one at a time, in order; leases and times read `clock`
// (empty: the system clock; processes sharing a file should share a clock).
//
// The checkpoint store commits the creates and saves of several runs that
// are ready at the same moment in one transaction (group commit), and the
// event feed its appends; each caller is told its outcome once its own
// write has committed, and a refused write (a stale fence) fails alone.
//
// Every object passes the conformance suite
// (switchboard/testing/checkpoint_store_conformance.hpp). Thread-safety: as
// the interfaces say (any thread, concurrently).
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/event_feed.hpp>
#include <switchboard/orchestrator/run_queue.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

namespace switchboard::stores {

std::shared_ptr<orchestrator::checkpoint_store> make_sqlite_checkpoint_store(const std::filesystem::path& path,
                                                                             orchestrator::store_clock clock = {});

std::shared_ptr<orchestrator::run_queue> make_sqlite_run_queue(const std::filesystem::path& path,
                                                               orchestrator::store_clock clock = {});

std::shared_ptr<orchestrator::event_feed> make_sqlite_event_feed(const std::filesystem::path& path,
                                                                 orchestrator::store_clock clock = {});

// What an SQLite checkpoint store or event feed has written since it
// opened: creates and saves (checkpoint store) or append calls (event feed),
// and the transactions that committed them (fewer than the writes when
// several were committed together).
struct sqlite_write_counts {
  std::uint64_t writes = 0;
  std::uint64_t transactions = 0;
};

// The counts of `store` when it is an SQLite checkpoint store (from
// make_sqlite_checkpoint_store); nullopt for any other store.
std::optional<sqlite_write_counts> write_counts_of(const orchestrator::checkpoint_store& store);
// The same for an SQLite event feed (from make_sqlite_event_feed).
std::optional<sqlite_write_counts> write_counts_of(const orchestrator::event_feed& feed);

}  // namespace switchboard::stores
