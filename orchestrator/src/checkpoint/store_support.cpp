#include <switchboard/orchestrator/store_support.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <charconv>
#include <optional>
#include <ctime>
#include <string>

namespace switchboard::orchestrator::store_support {

namespace asio = boost::asio;

namespace {

std::string owner_text(const run_summary& run) {
  return "owner " + run.owner + ", since " + format_utc(run.updated_at);
}

}  // namespace

std::string format_utc(system_time t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buffer;
}

store_clock or_system_clock(store_clock clock) {
  if (clock) return clock;
  return [] { return std::chrono::system_clock::now(); };
}

void check_save_request(const save_request& run) {
  if (run.workflow_id.empty()) {
    throw checkpoint_error("checkpoint refused: empty workflow_id");
  }
  if (run.workflow_name.empty()) {
    throw checkpoint_error("checkpoint of workflow '" + run.workflow_id + "' refused: empty workflow_name");
  }
  if (run.step < 0) {
    throw checkpoint_error("checkpoint of workflow '" + run.workflow_id + "' refused: negative step " +
                           std::to_string(run.step));
  }
  if (!parse_workflow_status(to_string(run.status))) {
    throw checkpoint_error("checkpoint of workflow '" + run.workflow_id + "' refused: unknown status " +
                           std::to_string(static_cast<int>(run.status)));
  }
}

void check_new_run(const save_request& run) {
  check_save_request(run);
  if (run.status != workflow_status::running) {
    throw checkpoint_error("new run '" + run.workflow_id + "' refused: it must start as running, not " +
                           std::string(to_string(run.status)));
  }
  if (run.owner.empty()) {
    throw checkpoint_error("new run '" + run.workflow_id + "' refused: empty owner");
  }
}

workflow_status effective_status(workflow_status stored_status, system_time lease_expires, system_time now) {
  if (stored_status == workflow_status::running && lease_expires <= now) return workflow_status::interrupted;
  return stored_status;
}

bool selects(const list_request& request, const run_summary& run) {
  return (!request.status || run.status == *request.status) &&
         (request.workflow_name.empty() || run.workflow_name == request.workflow_name);
}

std::string make_cursor(std::int64_t save_order) { return "s" + std::to_string(save_order); }

std::optional<std::int64_t> parse_cursor(std::string_view store_name, std::string_view cursor) {
  if (cursor.empty()) return std::nullopt;
  std::int64_t order = 0;
  const char* first = cursor.data() + 1;
  const char* last = cursor.data() + cursor.size();
  if (cursor.front() != 's' || std::from_chars(first, last, order).ptr != last || order < 0) {
    throw checkpoint_error(std::string(store_name) + ": list refused: '" + std::string(cursor.substr(0, 64)) +
                           "' is not a cursor of this store");
  }
  return order;
}

checkpoint checkpoint_of(run_summary summary, std::string state_json, std::vector<std::string> journal) {
  checkpoint cp;
  cp.workflow_id = std::move(summary.workflow_id);
  cp.workflow_name = std::move(summary.workflow_name);
  cp.status = summary.status;
  cp.step = summary.step;
  cp.state_json = std::move(state_json);
  cp.journal = std::move(journal);
  cp.owner = std::move(summary.owner);
  cp.lease_expires = summary.lease_expires;
  cp.fence = summary.fence;
  cp.updated_at = summary.updated_at;
  return cp;
}

void check_claim(std::string_view store_name, const std::optional<run_summary>& stored,
                 const claim_request& request, system_time now) {
  using reason = claim_error::reason;
  const std::string id = "workflow '" + request.workflow_id + "'";
  if (request.owner.empty()) {
    throw checkpoint_error(std::string(store_name) + ": claim of " + id + " refused: empty owner");
  }
  if (!stored) {
    throw claim_error(reason::not_found, std::string(store_name) + ": no " + id, std::nullopt);
  }
  workflow_status status = effective_status(stored->status, stored->lease_expires, now);
  if (status == workflow_status::running && !request.dead_owner.empty() && stored->owner == request.dead_owner) {
    status = workflow_status::interrupted;
  }
  if (status == workflow_status::running) {
    throw claim_error(reason::owned,
                      id + " is being resumed by another process (" + owner_text(*stored) + ", lease until " +
                          format_utc(stored->lease_expires) + ")",
                      stored);
  }
  if (status != request.expected_status) {
    throw claim_error(reason::wrong_status, id + " is " + std::string(to_string(status)) + ", not " +
                                             std::string(to_string(request.expected_status)),
                      stored);
  }
  if (request.expected_step && *request.expected_step != stored->step) {
    throw claim_error(reason::step_changed,
                      id + " moved on since it was read (step " + std::to_string(*request.expected_step) +
                          ", now step " + std::to_string(stored->step) + ")",
                      stored);
  }
}

void check_save(std::string_view store_name, const std::optional<run_summary>& stored, const save_request& cp) {
  check_save_request(cp);
  const std::string id = "workflow '" + cp.workflow_id + "'";
  if (!stored) {
    throw checkpoint_error(std::string(store_name) + ": save refused: no " + id + " (create it first)");
  }
  if (stored->fence != cp.fence || stored->owner.empty() || stored->owner != cp.owner) {
    throw claim_error(claim_error::reason::stale_fence,
                      std::string(store_name) + ": save of " + id + " refused: fencing number " +
                          std::to_string(cp.fence) + " of owner " + cp.owner +
                          " is stale (the run was released or claimed since: fence " +
                          std::to_string(stored->fence) + ", " +
                          (stored->owner.empty() ? std::string("no owner") : owner_text(*stored)) + ")",
                      stored);
  }
  if (cp.step < stored->step) {
    throw checkpoint_error(std::string(store_name) + ": stale checkpoint of " + id + " refused: step " +
                           std::to_string(cp.step) + " is older than the stored step " + std::to_string(stored->step));
  }
}

void throw_exists(std::string_view store_name, const run_summary& stored) {
  throw claim_error(claim_error::reason::exists,
                    std::string(store_name) + ": a run with id '" + stored.workflow_id + "' already exists (" +
                        std::string(to_string(stored.status)) + ")",
                    stored);
}


// ---------------------------------------------------------------- run queue

void check_enqueue(std::string_view queue_name, const enqueue_request& request) {
  if (request.workflow_id.empty()) {
    throw checkpoint_error(std::string(queue_name) + ": enqueue refused: empty workflow_id");
  }
  if (request.workflow_name.empty()) {
    throw checkpoint_error(std::string(queue_name) + ": enqueue of '" + request.workflow_id +
                           "' refused: empty workflow_name");
  }
  if (request.why == ready_reason::lease_lapsed) {
    throw checkpoint_error(std::string(queue_name) + ": enqueue of '" + request.workflow_id +
                           "' refused: a run is enqueued new or resumed; lapsed leases are the queue's to find");
  }
}

void check_owner(std::string_view queue_name, const std::string& owner) {
  if (owner.empty()) throw checkpoint_error(std::string(queue_name) + ": claim refused: empty owner");
}

void throw_queued(std::string_view queue_name, const std::string& workflow_id) {
  throw claim_error(claim_error::reason::exists,
                    std::string(queue_name) + ": workflow '" + workflow_id + "' is already in the queue", std::nullopt);
}

void check_done(std::string_view queue_name, const std::string& workflow_id, std::optional<std::int64_t> stored_fence,
                std::int64_t fence) {
  if (!stored_fence) {
    throw claim_error(claim_error::reason::not_found,
                      std::string(queue_name) + ": workflow '" + workflow_id + "' is not in the queue", std::nullopt);
  }
  if (*stored_fence != fence) {
    throw claim_error(claim_error::reason::stale_fence,
                      std::string(queue_name) + ": done of workflow '" + workflow_id + "' refused: fencing number " +
                          std::to_string(fence) + " is stale (the run was claimed again since: fence " +
                          std::to_string(*stored_fence) + ")",
                      std::nullopt);
  }
}

// ---------------------------------------------------------------- event feed

void check_feed_id(std::string_view feed_name, const std::string& workflow_id) {
  if (workflow_id.empty()) throw checkpoint_error(std::string(feed_name) + ": append refused: empty workflow_id");
}

void check_feed_claim(std::string_view feed_name, const std::string& workflow_id, const feed_claim& claim) {
  check_feed_id(feed_name, workflow_id);
  if (claim.workflow_id.empty() || claim.owner.empty())
    throw checkpoint_error(std::string(feed_name) + ": append to the feed of workflow '" + workflow_id +
                           "' refused: its claim names no " + (claim.owner.empty() ? "owner" : "queued workflow"));
}

void throw_claim_not_held(std::string_view feed_name, const std::string& workflow_id, const feed_claim& claim) {
  throw claim_error(claim_error::reason::stale_fence,
                    std::string(feed_name) + ": append to the feed of workflow '" + workflow_id +
                        "' refused: the claim of '" + claim.workflow_id + "' with fencing number " +
                        std::to_string(claim.fence) + " is no longer held by '" + claim.owner + "'",
                    std::nullopt);
}

// A waiter's timer, in its sleeping coroutine's frame, and when it is due.
// The wait starts under the wakeups' lock and wake() cancels the timer
// under it: a wake-up before the wait ends it at once, none falls between,
// and the timer needs no strand of its own (it is only ever touched under
// that lock). The timer is made when the wait starts, with the awaiting
// coroutine's executor (its handler's): asking the coroutine for it would
// keep the answer (an any_io_executor, 48 bytes) in the frame for as long
// as the frame lives.
struct sleeper {
  std::optional<asio::steady_timer>* timer;
  std::chrono::steady_clock::time_point until;
  bool woken = false;
};

namespace {

// Under the wakeups' lock.
void wake(sleeper& s) {
  s.woken = true;
  if (*s.timer) (*s.timer)->cancel();
}

// Until `s`'s timer expires, `s` is woken, or the awaiting coroutine is
// cancelled (its slot reaches the timer).
auto sleep_until_woken(std::mutex& mutex, sleeper& s) {
  auto start_waiting = [&mutex, &s](auto handler) {
    std::lock_guard lock(mutex);
    auto& timer = *s.timer;
    if (!timer) timer.emplace(asio::get_associated_executor(handler));
    timer->expires_at(s.woken ? std::chrono::steady_clock::now() : s.until);
    timer->async_wait(std::move(handler));
  };
  auto token = asio::as_tuple(asio::use_awaitable);
  return asio::async_initiate<decltype(token), void(boost::system::error_code)>(std::move(start_waiting), token);
}

// Takes a sleeper out of its wakeups' list when its sleep ends, or when its
// coroutine is destroyed unfinished (its io_context went away), so no
// wake-up reaches a timer that is gone. Holds the wakeups' state: the
// wakeups may be gone by then.
template <class State>
class registration {
 public:
  registration(std::shared_ptr<State> state, typename decltype(State::waiters)::iterator entry)
      : state_(std::move(state)), entry_(entry) {}
  registration(const registration&) = delete;
  registration& operator=(const registration&) = delete;
  ~registration() {
    std::lock_guard lock(state_->mutex);
    state_->waiters.erase(entry_);
  }

 private:
  std::shared_ptr<State> state_;
  typename decltype(State::waiters)::iterator entry_;
};

}  // namespace

// The sleep is in this frame, not a coroutine of its own: a stream may wait
// here for hours, and a second frame would be held as long.
asio::awaitable<std::vector<feed_event>> feed_wakeups::wait_for_events(event_feed& feed, std::string workflow_id,
                                                                        std::int64_t after, std::size_t limit,
                                                                        std::chrono::milliseconds timeout,
                                                                        std::chrono::milliseconds poll) {
  using clock = std::chrono::steady_clock;
  // A timeout too long to add to now() waits for ever.
  const auto start = clock::now();
  const auto deadline = timeout >= std::chrono::hours(24 * 365) ? clock::time_point::max() : start + timeout;
  std::optional<asio::steady_timer> timer;  // made at the first sleep (most waits find events at once)
  for (;;) {
    std::uint64_t seen = 0;
    {
      std::lock_guard lock(state_->mutex);
      seen = state_->notified;
    }
    auto events = co_await feed.read(workflow_id, after, limit);
    const auto now = clock::now();
    if (!events.empty() || now >= deadline) co_return events;
    auto until = deadline;
    if (poll < std::chrono::hours(24 * 365) && now + poll < until) until = now + poll;
    sleeper s{&timer, until};
    decltype(state::waiters)::iterator entry;
    {
      std::lock_guard lock(state_->mutex);
      // An append between the read and now: read again at once.
      if (state_->notified != seen) continue;
      entry = state_->waiters.emplace(workflow_id, &s);
    }
    const registration unregister(state_, entry);
    co_await sleep_until_woken(state_->mutex, s);
  }
}

void feed_wakeups::notify(std::string_view workflow_id) {
  std::lock_guard lock(state_->mutex);
  ++state_->notified;
  auto [first, last] = state_->waiters.equal_range(workflow_id);
  for (auto it = first; it != last; ++it) wake(*it->second);
}

void feed_wakeups::notify_all() {
  std::lock_guard lock(state_->mutex);
  ++state_->notified;
  for (auto& [id, s] : state_->waiters) wake(*s);
}

void queue_wakeups::looking() {
  std::lock_guard lock(state_->mutex);
  state_->seen = state_->notified;
}

asio::awaitable<void> queue_wakeups::wait(std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  // A timeout too long to add to now() waits for ever.
  const auto until = timeout >= std::chrono::hours(24 * 365) ? clock::time_point::max() : clock::now() + timeout;
  std::optional<asio::steady_timer> timer;  // made when the sleep starts
  sleeper s{&timer, until};
  decltype(state::waiters)::iterator entry;
  {
    std::lock_guard lock(state_->mutex);
    // A run may have become ready since the queue last looked: look again now.
    if (state_->notified != state_->seen) {
      state_->seen = state_->notified;
      co_return;
    }
    entry = state_->waiters.insert(state_->waiters.end(), &s);
  }
  const registration unregister(state_, entry);
  co_await sleep_until_woken(state_->mutex, s);
  std::lock_guard lock(state_->mutex);
  state_->seen = state_->notified;
}

void queue_wakeups::notify() {
  std::lock_guard lock(state_->mutex);
  ++state_->notified;
  for (auto* s : state_->waiters) wake(*s);
}

}  // namespace switchboard::orchestrator::store_support
