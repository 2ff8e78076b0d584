// Where the hub keeps workflow runs between steps, so a run paused for
// clarification, or stopped by a crash, can be continued by another process.
//
// A stored run has one owner at a time. Starting a run (create) or taking
// over a paused or interrupted one (claim) makes the caller its owner for a
// lease (30 s by default in the hub, renewed while it works) and hands it a
// fencing number; every later save must carry that number, so a process that
// lost its run (its lease expired and another claimed it) can never
// overwrite the newer owner's state. claim() is a compare-and-set: of any
// number of racing claimants, across threads and processes, exactly one wins
// and the others get a claim_error that names the owner; nothing changes for
// them.
//
// A run whose owner stopped without finishing it is `interrupted`: stored as
// such when the owner released it (a signal, a shutdown), or reported as
// such when its status is `running` and its lease has expired.
//
// Each save appends the records a step produced (checkpoint::journal) and
// replaces the small head (checkpoint::state_json), so the cost of a save
// follows the size of the step, not of the whole run.
//
// Time is the store's: create(), claim() and renew() ask for a lease of a
// duration and the store computes when it ends, and stamps updated_at, with
// its own clock (store_clock for the in-memory and SQLite stores, the
// database server's now() for a shared database). Processes with skewed
// clocks then still agree on whose lease has lapsed.
//
// A save writes a save_request; a load or claim returns a checkpoint. The
// two differ on purpose: what only the store decides (the lease's end,
// updated_at, the whole journal) is never part of what a caller sends.
//
// Implementations: make_in_memory_checkpoint_store() here (tests,
// single-process use) and one library per backend in stores/ (SQLite:
// switchboard::sqlite_store, <switchboard/stores/sqlite_store.hpp>, the
// embedded default, whose I/O runs on a thread of its own). Every
// implementation passes the installed conformance suite
// <switchboard/testing/checkpoint_store_conformance.hpp>; the rules they
// share are in <switchboard/orchestrator/store_support.hpp>. The run queue
// (run_queue.hpp) and the event feed (event_feed.hpp) are the other two
// interfaces a backend provides.
//
// Asynchronous operations: each returns an awaitable that completes on the
// awaiting coroutine's executor; arguments are taken by value, so nothing
// needs to outlive the call. Failures are thrown at the co_await as
// checkpoint_error (claim_error for a refused claim or a stale save).
// Cancellation is not supported: an operation, once started, completes.
//
// Thread-safety: every member function may be called concurrently from any
// thread; the store object must outlive the operations it started.
#pragma once

#include <switchboard/orchestrator/workflow_status.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::orchestrator {

using system_time = std::chrono::system_clock::time_point;

// The clock a store reads for leases and updated_at. Empty: the system
// clock. Tests pass a clock they move by hand, so a lease lapses without
// waiting for it.
using store_clock = std::function<system_time()>;

// What create() and save() write.
struct save_request {
  std::string workflow_id;    // unique id of one run
  std::string workflow_name;  // the definition it runs
  // create(): running. save(): any status; a status other than running
  // releases the run (no owner, no lease).
  workflow_status status = workflow_status::running;
  std::int64_t step = 0;      // steps taken so far; never decreases
  std::string state_json;     // the state's head, replaces the stored one
  std::vector<std::string> journal;  // records to append after the stored ones (may be empty)
  std::string owner;          // the writer's owner id (not empty)
  // save(): the fencing number create() or claim() handed the owner;
  // ignored by create(), which hands out 1.
  std::int64_t fence = 0;
};

// A stored run as load() and claim() return it.
struct checkpoint {
  std::string workflow_id;
  std::string workflow_name;
  // As stored, except that a running run whose lease has lapsed reads as
  // interrupted.
  workflow_status status = workflow_status::running;
  std::int64_t step = 0;
  std::string state_json;     // the head of the last save
  std::vector<std::string> journal;  // every record so far, oldest first
  // owner is "" and lease_expires zero once its owner released the run
  // (paused, interrupted by its owner, finished); a run reported
  // interrupted because its lease lapsed keeps the dead owner.
  std::string owner;
  system_time lease_expires{};  // by the store's clock
  std::int64_t fence = 0;
  system_time updated_at{};     // by the store's clock
};

// What list() reports of a run, without its state.
struct run_summary {
  std::string workflow_id;
  std::string workflow_name;
  workflow_status status = workflow_status::running;  // as checkpoint::status
  std::int64_t step = 0;
  std::string owner;
  system_time lease_expires{};
  std::int64_t fence = 0;
  system_time updated_at{};
};

// Which runs list() returns, and how many at a time.
struct list_request {
  // Only runs in this status (as checkpoint::status reports it: interrupted
  // includes running runs whose lease lapsed, running excludes them).
  std::optional<workflow_status> status;
  std::string workflow_name;  // only runs of this definition ("" = any)
  std::size_t limit = 0;      // at most this many (0 = all)
  // Where the page starts: "" for the first, run_page::next_cursor for the
  // next. Opaque text, meaningful only to the store that made it.
  std::string cursor;
};

// One page of list(): the most recently saved run first.
struct run_page {
  std::vector<run_summary> runs;
  // Where the next page starts; "" when this page is the last. A run saved
  // again while a caller pages moves to the front: a later page does not
  // show it again (an earlier one may have shown its older save).
  std::string next_cursor;
};

struct claim_request {
  std::string workflow_id;
  std::string owner;                         // the claimant's owner id
  std::chrono::milliseconds lease{30'000};
  // The status the claimant expects: awaiting_clarification (to answer),
  // awaiting_approval (to decide) or interrupted (to continue).
  workflow_status expected_status = workflow_status::awaiting_clarification;
  // Refuse when the run moved on since the claimant read it (for example an
  // answer typed for a question another process has already answered).
  std::optional<std::int64_t> expected_step;
  // A running checkpoint owned by this owner counts as interrupted even
  // before its lease expires: the caller knows that owner is dead (a
  // process of this host that no longer exists).
  std::string dead_owner;
};

class checkpoint_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A claim, create or save refused because of the run's ownership or status.
class claim_error : public checkpoint_error {
 public:
  enum class reason {
    not_found,      // claim: no run with that id
    owned,          // claim: another owner holds a live lease
    wrong_status,   // claim: the run is not in the expected status
    step_changed,   // claim: the run moved on since the claimant read it
    exists,         // create: a run with that id is already stored
    stale_fence,    // save: the run was claimed by someone else since
  };
  claim_error(reason why, std::string message, std::optional<run_summary> current)
      : checkpoint_error(std::move(message)), reason_(why), current_(std::move(current)) {}

  reason why() const noexcept { return reason_; }
  // The stored run as it was when the request was refused (none when absent).
  const std::optional<run_summary>& current() const noexcept { return current_; }

 private:
  reason reason_;
  std::optional<run_summary> current_;
};

class checkpoint_store {
 public:
  virtual ~checkpoint_store() = default;

  // Stores a new run owned by run.owner (not empty) with fence 1 and a lease
  // of `lease` from now; run.status must be running. Refuses (claim_error
  // exists) when a run with that id is stored. Also refuses (checkpoint_error)
  // an empty workflow_id or workflow_name or a negative step.
  virtual boost::asio::awaitable<void> create(save_request run, std::chrono::milliseconds lease) = 0;

  // Atomically makes request.owner the owner of a run in the expected
  // status (see claim_request): status becomes running, fence the stored
  // one + 1, lease `request.lease` from now. Returns the claimed checkpoint
  // (with its new fence and whole journal). Refuses with claim_error.
  virtual boost::asio::awaitable<checkpoint> claim(claim_request request) = 0;

  // Replaces the head, status and step of run.workflow_id and appends
  // run.journal, in one transaction; the lease stays the store's. run.fence
  // must be the stored fence (claim_error stale_fence otherwise: another
  // owner claimed the run). A save whose status is not running releases the
  // run (owner cleared). Refuses (checkpoint_error) a step lower than the
  // stored one, an unknown id, and the malformed requests create() refuses.
  virtual boost::asio::awaitable<void> save(save_request run) = 0;

  // Extends to `lease` from now the lease of every running run `owner`
  // holds; returns how many.
  virtual boost::asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) = 0;

  // Gives a run up without saving it: when `owner` still holds
  // `workflow_id` as running under `fence`, the run becomes interrupted at
  // its last save (owner cleared, no lease), so renew() no longer extends
  // it and anyone may claim it; returns whether it did. For an owner whose
  // last save failed with an outcome it cannot know (a cut connection): a
  // save that did land ended the run already (nothing to release), one that
  // lands later is refused (the owner is gone). A store that does not
  // implement it returns false, and the run waits for its owner's lease.
  virtual boost::asio::awaitable<bool> release(std::string workflow_id, std::string owner, std::int64_t fence) {
    (void)workflow_id, (void)owner, (void)fence;
    co_return false;
  }

  // The checkpoint of `workflow_id` with its whole journal, or nullopt.
  virtual boost::asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) = 0;

  // The runs `request` selects, most recently saved first, a page at a time.
  virtual boost::asio::awaitable<run_page> list(list_request request) = 0;

  // Removes a run whatever its status or owner; returns whether one existed.
  virtual boost::asio::awaitable<bool> erase(std::string workflow_id) = 0;

  // Removes the finished runs (completed, failed, cancelled) last saved
  // before `finished_before` (compared with updated_at, the store's time),
  // and gives the space they took back; returns how many were removed.
  virtual boost::asio::awaitable<std::size_t> prune(system_time finished_before) = 0;
};

// Forwards every operation to another store. A decorator (fault injection,
// metrics, tracing) derives from it and overrides only what it changes.
class forwarding_checkpoint_store : public checkpoint_store {
 public:
  explicit forwarding_checkpoint_store(std::shared_ptr<checkpoint_store> inner) : inner_(std::move(inner)) {}

  boost::asio::awaitable<void> create(save_request run, std::chrono::milliseconds lease) override {
    return inner_->create(std::move(run), lease);
  }
  boost::asio::awaitable<checkpoint> claim(claim_request request) override {
    return inner_->claim(std::move(request));
  }
  boost::asio::awaitable<void> save(save_request run) override { return inner_->save(std::move(run)); }
  boost::asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    return inner_->renew(std::move(owner), lease);
  }
  boost::asio::awaitable<bool> release(std::string workflow_id, std::string owner, std::int64_t fence) override {
    return inner_->release(std::move(workflow_id), std::move(owner), fence);
  }
  boost::asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    return inner_->load(std::move(workflow_id));
  }
  boost::asio::awaitable<run_page> list(list_request request) override { return inner_->list(std::move(request)); }
  boost::asio::awaitable<bool> erase(std::string workflow_id) override { return inner_->erase(std::move(workflow_id)); }
  boost::asio::awaitable<std::size_t> prune(system_time finished_before) override {
    return inner_->prune(finished_before);
  }

 protected:
  checkpoint_store& inner() const noexcept { return *inner_; }

 private:
  std::shared_ptr<checkpoint_store> inner_;
};

// Every run `request` selects, all pages read (request.limit is the page size).
boost::asio::awaitable<std::vector<run_summary>> list_all(checkpoint_store& store, list_request request = {});

// A store in this process's memory, reading `clock` (empty: the system clock).
std::shared_ptr<checkpoint_store> make_in_memory_checkpoint_store(store_clock clock = {});

}  // namespace switchboard::orchestrator
