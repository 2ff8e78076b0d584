// A queue of runs ready to be worked on, shared by workers in one or many
// processes: the way a fleet of hubs divides runs among themselves.
//
// A run is ready when it is new (enqueued, never claimed), resumed (a
// paused run enqueued again with its answer or decision), or claimed by an
// owner whose lease lapsed. claim_next() takes the ready run enqueued
// first and makes the caller its owner for a lease: it is a
// compare-and-set, so of any number of racing claimants, across threads
// and processes, exactly one gets a given run; the others get another run
// or none. Every claim hands out a fencing number higher than any the
// queue handed out before, for any run, so a run done and enqueued again
// never hands out a number it had (ADR 0037: a claimant from before cannot
// pass for the new one); done() must carry it, so a claimant whose lease
// lapsed and whose run was claimed again can no longer remove it.
//
// The queue says who works on a run; the checkpoint store keeps what the
// run did. A worker that claims a run from the queue then creates it in
// the store (new) or claims it there (resumed, lapsed).
//
// Time is the queue's: leases are asked for as durations and end by the
// queue's clock (store_clock; a database server's now()).
//
// Asynchronous operations complete on the awaiting coroutine's executor;
// arguments are taken by value. Failures are thrown at the co_await as
// checkpoint_error (claim_error for an id already queued or a stale
// fence). Cancellation is not supported.
//
// Thread-safety: every member function may be called concurrently from any
// thread; the queue object must outlive the operations it started.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace switchboard::orchestrator {

// Why a claimed run was ready.
enum class ready_reason {
  new_run,       // enqueued as new: create it in the store and run it
  resumed,       // a paused run enqueued with its answer or decision: claim it in the store and resume it
  lease_lapsed,  // its previous claimant stopped renewing: claim it in the store as interrupted and continue it
};

std::string_view to_string(ready_reason why) noexcept;

struct enqueue_request {
  std::string workflow_id;
  std::string workflow_name;
  ready_reason why = ready_reason::new_run;  // new_run or resumed
  // What the claimant needs to start: the input of a new run, the answer
  // or decision of a resumed one (JSON text; the queue keeps it as is).
  std::string payload;
};

// A run claim_next() handed out.
struct queued_run {
  std::string workflow_id;
  std::string workflow_name;
  ready_reason why = ready_reason::new_run;
  std::string payload;
  std::string owner;
  system_time lease_expires{};  // by the queue's clock
  std::int64_t fence = 0;       // done() carries it
  // The claimant whose lease lapsed (why: lease_lapsed), else empty. When
  // it is the caller itself, nobody held the run in between.
  std::string previous_owner;
};

class run_queue {
 public:
  virtual ~run_queue() = default;

  // Makes `request.workflow_id` ready, after every run enqueued before it.
  // Refuses (claim_error exists) an id already in the queue, ready or
  // claimed; (checkpoint_error) an empty id or name.
  virtual boost::asio::awaitable<void> enqueue(enqueue_request request) = 0;

  // Claims for `owner` (not empty) the ready run enqueued first, for a lease
  // of `lease` from now; nullopt when no run is ready.
  virtual boost::asio::awaitable<std::optional<queued_run>> claim_next(std::string owner,
                                                                       std::chrono::milliseconds lease) = 0;

  // Extends to `lease` from now the lease of every run `owner` holds;
  // returns how many.
  virtual boost::asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) = 0;

  // The claimant holding `fence` is done with `workflow_id` (it finished,
  // paused or failed it): the run leaves the queue. Refuses (claim_error
  // stale_fence) a fence that is no longer the run's, (claim_error
  // not_found) an id not in the queue.
  virtual boost::asio::awaitable<void> done(std::string workflow_id, std::int64_t fence) = 0;

  // How many runs are in the queue, ready or claimed.
  virtual boost::asio::awaitable<std::size_t> size() = 0;

  // Completes when a run may have become ready (an enqueue this queue
  // heard of, in this process or, where the backend can tell, another), or
  // when `timeout` has passed: a worker with nothing to claim waits here
  // between tries instead of spinning. It may complete early (a wake-up is
  // a hint, never a claim); a lapsed lease is found by the next try only.
  // An enqueue between a claim_next() that found nothing and this wait
  // ends it at once where the backend wakes waiters (in-memory, PostgreSQL).
  // This default implementation waits the whole timeout.
  virtual boost::asio::awaitable<void> wait_for_ready(std::chrono::milliseconds timeout);
};

// A queue in this process's memory, reading `clock` (empty: the system clock).
std::shared_ptr<run_queue> make_in_memory_run_queue(store_clock clock = {});

}  // namespace switchboard::orchestrator
