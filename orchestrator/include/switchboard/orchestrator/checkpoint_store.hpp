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
// Implementations: in_memory_checkpoint_store (tests, single-process use)
// and sqlite_checkpoint_store (the embedded default, whose I/O runs on a
// thread of its own, never on the caller's). Every implementation passes the
// conformance suite in tests/orchestrator/checkpoint_store_conformance.hpp.
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

#include <boost/asio/awaitable.hpp>

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

using system_time = std::chrono::system_clock::time_point;

struct checkpoint {
  std::string workflow_id;    // unique id of one run
  std::string workflow_name;  // the definition it runs
  // "running", "awaiting_clarification", "awaiting_approval", "interrupted", "completed",
  // "failed", "cancelled". load() and claim() report a running checkpoint
  // whose lease has expired as "interrupted".
  std::string status;
  std::int64_t step = 0;      // steps taken so far; never decreases
  std::string state_json;     // the state's head, replaced by every save
  // save(): records to append after the stored ones (may be empty).
  // load()/claim(): every record so far, oldest first.
  std::vector<std::string> journal;
  // Ownership. create() and claim() set them; save() must carry the fence
  // it was handed. owner is "" and lease_expires zero once its owner
  // released the run (paused, interrupted by its owner, finished); a run
  // reported interrupted because its lease expired keeps the dead owner.
  std::string owner;
  system_time lease_expires{};
  std::int64_t fence = 0;
  system_time updated_at{};   // set by the store
};

// What list() reports of a run, without its state.
struct run_summary {
  std::string workflow_id;
  std::string workflow_name;
  std::string status;         // as checkpoint::status ("interrupted" for an expired lease)
  std::int64_t step = 0;
  std::string owner;
  system_time lease_expires{};
  std::int64_t fence = 0;
  system_time updated_at{};
};

struct claim_request {
  std::string workflow_id;
  std::string owner;                         // the claimant's owner id
  std::chrono::milliseconds lease{30'000};
  // The status the claimant expects: "awaiting_clarification" (to answer),
  // "awaiting_approval" (to decide)
  // or "interrupted" (to continue).
  std::string expected_status;
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

  // Stores a new run owned by cp.owner (not empty) with fence 1 and a lease
  // of `lease` from now; cp.status must be "running". Refuses (claim_error
  // exists) when a run with that id is stored. Also refuses (checkpoint_error)
  // an empty workflow_id or workflow_name or a negative step.
  virtual boost::asio::awaitable<void> create(checkpoint cp, std::chrono::milliseconds lease) = 0;

  // Atomically makes request.owner the owner of a run in the expected
  // status (see claim_request): status becomes "running", fence the stored
  // one + 1, lease `request.lease` from now. Returns the claimed checkpoint
  // (with its new fence and whole journal). Refuses with claim_error.
  virtual boost::asio::awaitable<checkpoint> claim(claim_request request) = 0;

  // Replaces the head, status and step of cp.workflow_id and appends
  // cp.journal, in one transaction. cp.fence must be the stored fence
  // (claim_error stale_fence otherwise: another owner claimed the run). A
  // save whose status is not "running" releases the run (owner cleared).
  // Refuses (checkpoint_error) a step lower than the stored one, an unknown
  // id, and the malformed checkpoints create() refuses.
  virtual boost::asio::awaitable<void> save(checkpoint cp) = 0;

  // Extends to `lease` from now the lease of every running run `owner`
  // holds; returns how many.
  virtual boost::asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) = 0;

  // The checkpoint of `workflow_id` with its whole journal, or nullopt.
  virtual boost::asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) = 0;

  // Runs in `status` ("" = every status; "interrupted" includes running
  // runs whose lease expired, "running" excludes them), least recently
  // saved first.
  virtual boost::asio::awaitable<std::vector<run_summary>> list(std::string status) = 0;

  // Removes a run whatever its status or owner; returns whether one existed.
  virtual boost::asio::awaitable<bool> erase(std::string workflow_id) = 0;

  // Removes the finished runs (completed, failed, cancelled) last saved
  // before `finished_before`, and gives the space they took back; returns
  // how many were removed.
  virtual boost::asio::awaitable<std::size_t> prune(system_time finished_before) = 0;
};

// Forwards every operation to another store. A decorator (fault injection,
// metrics, tracing) derives from it and overrides only what it changes.
class forwarding_checkpoint_store : public checkpoint_store {
 public:
  explicit forwarding_checkpoint_store(std::shared_ptr<checkpoint_store> inner) : inner_(std::move(inner)) {}

  boost::asio::awaitable<void> create(checkpoint cp, std::chrono::milliseconds lease) override {
    return inner_->create(std::move(cp), lease);
  }
  boost::asio::awaitable<checkpoint> claim(claim_request request) override {
    return inner_->claim(std::move(request));
  }
  boost::asio::awaitable<void> save(checkpoint cp) override { return inner_->save(std::move(cp)); }
  boost::asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    return inner_->renew(std::move(owner), lease);
  }
  boost::asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    return inner_->load(std::move(workflow_id));
  }
  boost::asio::awaitable<std::vector<run_summary>> list(std::string status) override {
    return inner_->list(std::move(status));
  }
  boost::asio::awaitable<bool> erase(std::string workflow_id) override { return inner_->erase(std::move(workflow_id)); }
  boost::asio::awaitable<std::size_t> prune(system_time finished_before) override {
    return inner_->prune(finished_before);
  }

 protected:
  checkpoint_store& inner() const noexcept { return *inner_; }

 private:
  std::shared_ptr<checkpoint_store> inner_;
};

std::shared_ptr<checkpoint_store> make_in_memory_checkpoint_store();

// Opens (creating if needed) an SQLite database at `path`, WAL mode, busy
// timeout so several processes can share it. A new file is created readable
// and writable by its owner only (0600), whatever the umask. Throws
// checkpoint_error naming the file and SQLite's message on failure: a
// missing directory, an unwritable path, a file that is not an SQLite
// database. The directory is not created. Every operation runs on the
// store's own thread, in order. synchronous=NORMAL: a killed process loses
// nothing it committed.
std::shared_ptr<checkpoint_store> make_sqlite_checkpoint_store(const std::filesystem::path& path);

// "memory" or "sqlite:PATH" (the form `switchboard run --store` takes).
// Throws checkpoint_error on anything else.
std::shared_ptr<checkpoint_store> open_checkpoint_store(std::string_view spec);

// "running", "awaiting_clarification", "awaiting_approval", "interrupted", "completed", "failed",
// "cancelled".
bool is_checkpoint_status(std::string_view status) noexcept;
// completed, failed, cancelled: nothing will run again.
bool is_finished_status(std::string_view status) noexcept;

}  // namespace switchboard::orchestrator
