// The events of each run, kept in order so another process can follow a
// run: a server streaming a run it does not execute, a client reconnecting
// where it left off.
//
// Each run has its own feed. append() adds an event at the next position
// (1, 2, 3, ... per run, never reused); read() returns events after a
// position; wait() does the same but, when there is nothing yet, suspends
// until an append arrives or a timeout passes. A waiter holds no thread and
// does not spin: an append in the same process wakes it at once; an append
// by another process sharing a file-based backend is seen at the latest
// after the backend's wake-up interval (SQLite: 100 ms; a database server
// pushes it with LISTEN/NOTIFY).
//
// Events are opaque text to the feed (the hub's events as JSON).
//
// Asynchronous operations complete on the awaiting coroutine's executor;
// arguments are taken by value. Failures are thrown at the co_await as
// checkpoint_error. A cancellation of the coroutine awaiting wait() reaches
// the timer it sleeps on (Asio's cancellation slot), so a waiter can be
// stopped; the other operations are not cancellable.
//
// Thread-safety: every member function may be called concurrently from any
// thread; the feed object must outlive the operations it started.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace switchboard::orchestrator {

struct feed_event {
  std::int64_t position = 0;  // 1-based, consecutive within a run
  std::string event;
  system_time at{};           // when it was appended, by the feed's clock
};

// A claim in the run queue of the feed's own store, which an append may
// be made under: it lands only while `owner` holds `workflow_id` with
// `fence` (ADR 0037). A server whose claim on a thread lapsed and was taken
// by another then adds nothing to the streams of that thread's runs.
struct feed_claim {
  std::string workflow_id;  // the queued id (serve: the thread's)
  std::string owner;
  std::int64_t fence = 0;
};

class event_feed {
 public:
  virtual ~event_feed() = default;

  // Appends `event` to the feed of `workflow_id` (not empty); returns its
  // position.
  virtual boost::asio::awaitable<std::int64_t> append(std::string workflow_id, std::string event) = 0;

  // Appends `events` to the feed of `workflow_id` at consecutive positions,
  // in their order, as one write where the backend can (one transaction: a
  // run's burst of events costs one commit); returns the last position, 0
  // for no events. This default appends them one by one.
  virtual boost::asio::awaitable<std::int64_t> append_all(std::string workflow_id, std::vector<std::string> events);

  // As append_all(), but only while `claim` is held, checked in the same
  // transaction as the append (no claim can be taken between the check
  // and the write). Refuses (claim_error stale_fence) when the queue holds
  // `claim.workflow_id` under another owner or fence, or not at all;
  // nothing is appended then. A feed whose store has no run queue
  // (in-memory) refuses every claimed append (checkpoint_error): a claim
  // it cannot check is never taken as held.
  virtual boost::asio::awaitable<std::int64_t> append_claimed(std::string workflow_id,
                                                              std::vector<std::string> events, feed_claim claim);

  // Up to `limit` (0: no limit) events of `workflow_id` after position
  // `after` (0: from the first), oldest first; empty when there are none
  // (or no such run).
  virtual boost::asio::awaitable<std::vector<feed_event>> read(std::string workflow_id, std::int64_t after,
                                                               std::size_t limit) = 0;

  // As read(), but when there is nothing after `after` it waits for an
  // append until `timeout` has passed (then returns empty).
  virtual boost::asio::awaitable<std::vector<feed_event>> wait(std::string workflow_id, std::int64_t after,
                                                               std::size_t limit,
                                                               std::chrono::milliseconds timeout) = 0;

  // Removes the feed of `workflow_id`; returns how many events it held.
  virtual boost::asio::awaitable<std::size_t> erase(std::string workflow_id) = 0;
};

// A feed in this process's memory, reading `clock` (empty: the system clock).
std::shared_ptr<event_feed> make_in_memory_event_feed(store_clock clock = {});

}  // namespace switchboard::orchestrator
