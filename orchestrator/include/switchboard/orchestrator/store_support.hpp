// What every store backend shares, for those who write one (the in-memory
// and SQLite stores, a PostgreSQL or third-party backend): the rules that
// refuse malformed or stale requests with the same messages everywhere,
// the status a reader sees, list cursors, and the wake-up of event-feed
// and run-queue waiters. Applications never need it.
//
// Thread-safety: the functions are pure; feed_wakeups and queue_wakeups
// may be used from any thread.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/event_feed.hpp>
#include <switchboard/orchestrator/run_queue.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::orchestrator::store_support {

// The system clock when `clock` is empty.
store_clock or_system_clock(store_clock clock);

// Throws checkpoint_error when `run` has an empty workflow id or name or a
// negative step.
void check_save_request(const save_request& run);

// What create() refuses beyond check_save_request: a status other than
// running, an empty owner.
void check_new_run(const save_request& run);

// The status a reader sees: interrupted for a running run whose lease
// expired before `now`.
workflow_status effective_status(workflow_status stored_status, system_time lease_expires, system_time now);

// Throws claim_error when `request` may not claim `stored` (nullopt: no
// such run) at `now`. `stored.status` is the stored status.
void check_claim(std::string_view store_name, const std::optional<run_summary>& stored,
                 const claim_request& request, system_time now);

// Throws claim_error (stale_fence) or checkpoint_error (stale step, unknown
// run) when `run` may not replace `stored`.
void check_save(std::string_view store_name, const std::optional<run_summary>& stored, const save_request& run);

[[noreturn]] void throw_exists(std::string_view store_name, const run_summary& stored);

// Whether list_request `request` selects `run` (whose status is the
// effective one), cursor aside.
bool selects(const list_request& request, const run_summary& run);

// A list cursor is the save order of the last run of a page: the next page
// holds runs saved before it. parse_cursor throws checkpoint_error naming
// the store on text no store made.
std::string make_cursor(std::int64_t save_order);
std::optional<std::int64_t> parse_cursor(std::string_view store_name, std::string_view cursor);

// The checkpoint a load or claim returns: the summary's fields, the head
// and the whole journal (the one place a checkpoint is assembled).
checkpoint checkpoint_of(run_summary summary, std::string state_json, std::vector<std::string> journal);

// "2026-11-24T22:09:19Z"
std::string format_utc(system_time t);

// ---------------------------------------------------------------- run queue

// Throws checkpoint_error for an empty id or name, or a reason other than
// new_run or resumed.
void check_enqueue(std::string_view queue_name, const enqueue_request& request);
// Throws checkpoint_error for an empty owner.
void check_owner(std::string_view queue_name, const std::string& owner);
[[noreturn]] void throw_queued(std::string_view queue_name, const std::string& workflow_id);
// Throws claim_error unless `stored_fence` (nullopt: not queued) is `fence`.
void check_done(std::string_view queue_name, const std::string& workflow_id, std::optional<std::int64_t> stored_fence,
                std::int64_t fence);

// ---------------------------------------------------------------- event feed

// Throws checkpoint_error for an empty id.
void check_feed_id(std::string_view feed_name, const std::string& workflow_id);
// Throws checkpoint_error for an empty id, claim id or owner.
void check_feed_claim(std::string_view feed_name, const std::string& workflow_id, const feed_claim& claim);
// Throws claim_error (stale_fence): an append to `workflow_id` under
// `claim`, which the queue no longer holds.
[[noreturn]] void throw_claim_not_held(std::string_view feed_name, const std::string& workflow_id,
                                       const feed_claim& claim);

// A waiter of feed_wakeups or queue_wakeups, while it sleeps (store_support.cpp).
struct sleeper;

// Wakes the wait()s of a feed when an append arrives in this process. A
// waiter sleeps on a timer of its own; its wait starts under the wakeups'
// lock and notify() cancels the timer under it, so nothing spins, nothing
// races on the timer and no wake-up falls between a read and the sleep.
class feed_wakeups {
 public:
  // The wait() of every feed: reads `feed` (its read()) and, while that
  // returns nothing, sleeps until an append to `workflow_id` in this
  // process, `poll` (to see appends by other processes;
  // milliseconds::max(): never) or `timeout`. Cancelled through the
  // awaiting coroutine's slot: returns what the read returns then. Nothing
  // is copied for the reads: a stream may wait here for hours.
  boost::asio::awaitable<std::vector<feed_event>> wait_for_events(event_feed& feed, std::string workflow_id,
                                                                  std::int64_t after, std::size_t limit,
                                                                  std::chrono::milliseconds timeout,
                                                                  std::chrono::milliseconds poll);

  // An append to `workflow_id` was committed: wakes its waiters.
  void notify(std::string_view workflow_id);
  // Appends to some runs may have been committed (another process said
  // so, without saying which): wakes every waiter, each reads again.
  void notify_all();

 private:
  // The lock and the sleepers, shared with every sleeping frame: a frame
  // destroyed unfinished after the wakeups (when its io_context goes last)
  // still unregisters safely.
  struct state {
    std::mutex mutex;
    std::uint64_t notified = 0;  // appends seen in this process, all runs
    std::multimap<std::string_view, sleeper*, std::less<>> waiters;  // while they sleep
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
};

// Wakes the wait_for_ready()s of a run queue when a run may have become
// ready. A wait ends at the first notify() since the queue last looked for
// a run (looking(), at the start of every claim_next()), so an enqueue
// that lands between a claim that found nothing and the wait that follows
// still ends that wait; at its timeout; or when cancelled. Waiters sleep as
// feed_wakeups' do.
class queue_wakeups {
 public:
  // claim_next() is about to look: what was notified before is seen.
  void looking();
  // Completes at the first notify() since looking() or the last wait
  // ended (at once if one came), or after `timeout`.
  boost::asio::awaitable<void> wait(std::chrono::milliseconds timeout);
  // A run may have become ready: wakes every waiter.
  void notify();

 private:
  // Shared with every sleeping frame, as feed_wakeups' is.
  struct state {
    std::mutex mutex;
    std::uint64_t notified = 0;  // notify() calls
    std::uint64_t seen = 0;      // `notified` when the queue last looked
    std::list<sleeper*> waiters;  // while they sleep
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
};

}  // namespace switchboard::orchestrator::store_support
