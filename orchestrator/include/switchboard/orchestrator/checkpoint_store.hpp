// Where the hub keeps workflow state between steps, so a workflow paused for
// clarification in one process can be resumed by another, including after
// the first was killed.
//
// The hub writes a checkpoint after every step; save() is atomic (a
// transaction in SQLite): a reader sees the old checkpoint or the new one,
// never a mix. Implementations: in_memory_checkpoint_store (tests, embedded
// single-process use) and sqlite_checkpoint_store (the embedded default).
// Every implementation passes the conformance suite in
// tests/orchestrator/checkpoint_store_conformance.hpp.
//
// Thread-safety: every member function may be called concurrently from any
// thread. Calls are synchronous and short (a local file at most); the hub
// calls them from its strands.
#pragma once

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::orchestrator {

struct checkpoint {
  std::string workflow_id;    // unique id of one run
  std::string workflow_name;  // the definition it runs
  std::string status;         // "running", "awaiting_clarification", "completed", "failed", "cancelled"
  std::int64_t step = 0;      // steps taken so far; increases with every save
  std::string state_json;     // the serialized workflow state
  // Set by the store when it saves (the value passed to save() is ignored).
  std::chrono::system_clock::time_point updated_at{};
};

class checkpoint_store {
 public:
  virtual ~checkpoint_store() = default;

  // Inserts or replaces the checkpoint of cp.workflow_id. Refuses (throws
  // checkpoint_error) a checkpoint whose step is lower than the stored one:
  // a stale writer must not overwrite newer state. An equal step replaces
  // (a status change without a new step). Also refuses an empty workflow_id
  // or workflow_name, a negative step and a status outside the five above.
  virtual void save(const checkpoint& cp) = 0;

  // The latest checkpoint of `workflow_id`, or nullopt.
  virtual std::optional<checkpoint> load(std::string_view workflow_id) const = 0;

  // Ids of the workflows in `status` ("" = every status), oldest first:
  // ordered by their last save, least recently saved first.
  virtual std::vector<std::string> list(std::string_view status = {}) const = 0;

  // Removes a workflow's checkpoint; returns whether one existed.
  virtual bool erase(std::string_view workflow_id) = 0;
};

class checkpoint_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::shared_ptr<checkpoint_store> make_in_memory_checkpoint_store();

// Opens (creating if needed) an SQLite database at `path`, WAL mode, busy
// timeout so two processes can share it. Throws checkpoint_error naming the
// file and SQLite's message on failure: a missing directory, an unwritable
// path, a file that is not an SQLite database. The directory is not created.
// One connection per store, serialized by a mutex; open one store per file
// and process and share it. synchronous=NORMAL: a killed process loses
// nothing it committed.
std::shared_ptr<checkpoint_store> make_sqlite_checkpoint_store(const std::filesystem::path& path);

// "memory" or "sqlite:PATH" (the form `switchboard run --store` takes).
// Throws checkpoint_error on anything else.
std::shared_ptr<checkpoint_store> open_checkpoint_store(std::string_view spec);

}  // namespace switchboard::orchestrator
