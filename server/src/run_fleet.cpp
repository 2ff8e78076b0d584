// Sharing runs with the other servers of one store (ADR 0036).
//
// The unit of work is a thread: its runs execute one at a time, in order,
// so the server that executes them must be one. A thread with work to do
// is in the run queue (keyed by the thread id); a server claims it
// (FOR UPDATE SKIP LOCKED on PostgreSQL: of racing servers exactly one
// wins), executes the thread's runs while renewing its lease, and when
// the thread has nothing left removes it from the queue (done, with its
// fence). A server that dies stops renewing; once the lease lapses the
// queue hands the thread to another server, which continues the run that
// was executing (the hub's own claim in the checkpoint store keeps its
// steps and tool calls from running twice).
//
// The catalog is the list of work: a server posting a run journals it
// first, then offers the thread to the queue. When the thread is already
// queued or claimed, the holder finds the run in the catalog before it
// lets the thread go: it re-reads the catalog after done() and offers the
// thread again when a run arrived meanwhile, so no run is left behind;
// and every server offers, once a lease, each thread the catalog says has
// work (a poster that died between journaling and offering).
//
// Once journaled, a run's record is written by the server holding its
// thread only; other servers ask for a cancel with an entry of its own
// (catalog::request_cancel), which the holder acts on.
#include "run_engine.hpp"

#include <switchboard/orchestrator/crash_point.hpp>
#include <switchboard/orchestrator/error.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <set>

namespace switchboard::server {

namespace asio = boost::asio;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace {

bool is_terminal(std::string_view status) {
  return status == "success" || status == "error" || status == "timeout" || status == "interrupted";
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds how_long) {
  asio::steady_timer timer(co_await asio::this_coro::executor, how_long);
  co_await timer.async_wait(asio::use_awaitable);
}

}  // namespace

bool run_engine::stopping() const {
  std::scoped_lock lock(mutex_);
  return shutting_down_;
}

void run_engine::share_runs(fleet_settings settings) {
  fleet_ = std::move(settings);
  records_.on_cancel_read([this](const std::string& id, const std::string& action) { on_cancel_read(id, action); });
}

// Runs `task` counted as a background task from now (shutdown() waits for
// it), not from when it first runs.
void run_engine::spawn_counted(asio::awaitable<void> task) {
  {
    std::scoped_lock lock(mutex_);
    ++background_tasks_;
  }
  asio::co_spawn(executor_, counted(this, std::move(task)), asio::detached);
}

asio::awaitable<void> run_engine::counted(run_engine* engine, asio::awaitable<void> task) {
  struct uncount {
    run_engine* engine;
    ~uncount() {
      std::scoped_lock lock(engine->mutex_);
      --engine->background_tasks_;
    }
  } guard{engine};
  try {
    co_await std::move(task);
  } catch (const std::exception& e) {
    spdlog::error("serve: a background task failed: {}", e.what());
  }
}

// ---------------------------------------------------------------- posting

// A run that may only start if its thread is idle everywhere (a resume,
// or multitask_strategy reject), before it is journaled: the thread is put
// in the queue first, which only one server can do while the thread is
// queued or claimed — refused, the thread is busy elsewhere (409). A
// resume then checks the stored run still waits at the step its poster
// saw: an answer that arrives after another was taken and its run went on
// is refused here too (409), not executed to be refused by the hub. The
// reservation names the run: a server that claims it before the run is
// journaled waits for it a moment rather than letting the thread go (which
// would let a second answer reserve it). One left by a refusal is
// harmless: its claimant finds no run and lets the thread go.
asio::awaitable<void> run_engine::reserve_thread(const run_record& run, served_workflow& workflow) {
  const bool resume = run.workflow_run != run.run_id;
  const auto why = resume ? orch::ready_reason::resumed : orch::ready_reason::new_run;
  // A thread whose record is no longer busy may still be held for a moment
  // by the server that ended its run (it writes the record, then lets the
  // thread go): that moment is waited out, up to two seconds.
  for (int look = 0;; ++look) {
    if (co_await offer_thread(run.thread_id, why, run.run_id)) break;
    const auto thread = records_.thread(run.thread_id);
    if (look >= 40 || !thread || thread->status == "busy")
      throw api_error(409, "Thread " + run.thread_id + " is busy: its run is being answered or still running");
    co_await sleep_for(std::chrono::milliseconds(50));
    co_await records_.sync();
  }
  if (!resume) co_return;
  const auto stored = co_await workflow.hub->find(run.workflow_run);
  const auto* seen = run.kwargs.if_contains("resume_from_step");
  const bool still_waiting = stored && orch::is_paused(stored->status) && seen && seen->is_int64() &&
                             seen->get_int64() == stored->step;
  if (!still_waiting)
    throw api_error(409, "Thread " + run.thread_id + " is not waiting for this answer any more: it was answered");
}

// A run posted here is journaled; its thread goes to the queue (it may be
// there already: queued, or claimed by a server that will find the run in
// the catalog before it lets the thread go), and this server tries to
// claim at once.
asio::awaitable<void> run_engine::offer_run(const run_record& run) {
  co_await offer_thread(run.thread_id, orch::ready_reason::new_run);
  spawn_counted(claim_soon());
}

// Puts the thread in the queue; false when it is already there (queued or
// claimed by a server, which will find the thread's runs in the catalog).
// `run_id`: the run the offer is for, when one is journaled next.
asio::awaitable<bool> run_engine::offer_thread(std::string thread_id, orch::ready_reason why, std::string run_id) {
  orch::enqueue_request request{
      .workflow_id = thread_id, .workflow_name = "serve.thread", .why = why, .payload = std::move(run_id)};
  try {
    co_await fleet_.queue->enqueue(std::move(request));
    co_return true;
  } catch (const orch::claim_error& e) {
    if (e.why() != orch::claim_error::reason::exists) throw;
    co_return false;
  }
}

// ---------------------------------------------------------------- claiming

// Claims the thread that has waited longest, if there is room here, and
// serves it in a coroutine of its own; false when there was no room or no
// thread ready.
asio::awaitable<bool> run_engine::claim_one() {
  {
    std::scoped_lock lock(mutex_);
    if (shutting_down_ || claimed_.size() >= fleet_.max_threads) co_return false;
  }
  auto claimed = co_await fleet_.queue->claim_next(fleet_.owner, fleet_.lease);
  if (!claimed) co_return false;
  orch::crash_point("serve.claimed");
  if (claimed->why == orch::ready_reason::lease_lapsed)
    spdlog::info("serve: thread {} was held by a server that stopped renewing; it continues here",
                 claimed->workflow_id);
  {
    std::scoped_lock lock(mutex_);
    // A thread this server is still serving, claimed again: the coroutine
    // serving it goes on, with the new fence. When nobody held it in between
    // (this server's own claim lapsed: its renewals failed for a lease), the
    // hold goes on and so does the run executing under it; when another
    // server did, that server may have continued the run, and what this one
    // still records of it is refused (its saves by the checkpoint store's
    // fence, its stream's records by the queue's: a new hold).
    const auto held = claimed_.find(claimed->workflow_id);
    const bool serving = held != claimed_.end();
    const bool unbroken = serving && claimed->previous_owner == fleet_.owner;
    const auto since = unbroken ? held->second.since : claimed->fence;
    claimed_[claimed->workflow_id] = {.fence = claimed->fence, .since = since};
    if (serving) co_return true;
    ++background_tasks_;
  }
  const bool taken_over = claimed->why == orch::ready_reason::lease_lapsed;
  asio::co_spawn(executor_, counted(this, serve_thread(claimed->workflow_id, claimed->payload, taken_over)),
                 asio::detached);
  co_return true;
}

// A run posted here: this server tries to claim at once rather than at its
// next look at the queue (it may get an older thread: the queue is first
// come, first served).
asio::awaitable<void> run_engine::claim_soon() {
  try {
    co_await claim_one();
  } catch (const std::exception& e) {
    spdlog::warn("serve: claiming a thread from the run queue failed: {}", e.what());
  }
}

// Claims threads while there is room; waits on the queue when none is
// ready. Once a lease, offers every thread the catalog says has work.
asio::awaitable<void> run_engine::claim_threads() {
  background_task task{*this};
  auto next_sweep = std::chrono::steady_clock::now() + fleet_.lease;
  for (;;) {
    if (stopping()) co_return;
    bool claimed = false;
    bool failed = false;
    try {
      if (std::chrono::steady_clock::now() >= next_sweep) {
        next_sweep = std::chrono::steady_clock::now() + fleet_.lease;
        co_await offer_threads_with_work();
      }
      claimed = co_await claim_one();
    } catch (const std::exception& e) {
      if (!stopping()) spdlog::warn("serve: claiming a thread from the run queue failed: {}; trying again", e.what());
      failed = true;
    }
    if (stopping()) co_return;
    if (failed) co_await sleep_for(fleet_.idle_poll);
    else if (!claimed) co_await fleet_.queue->wait_for_ready(fleet_.idle_poll);
  }
}

// Every thread with a run pending or left running goes to the queue (one
// there already, queued or claimed, stays as it is).
asio::awaitable<void> run_engine::offer_threads_with_work() {
  for (const auto& id : records_.threads_with_work()) co_await offer_thread(id, orch::ready_reason::new_run);
}

// Keeps every claim alive: one statement for all of this server's threads.
asio::awaitable<void> run_engine::renew_claims() {
  background_task task{*this};
  auto next_renewal = std::chrono::steady_clock::now() + fleet_.lease / 3;
  for (;;) {
    // Until the threads this server holds are handed back, a shutdown still
    // renews: a short nap then, rather than a third of a lease.
    const auto nap = stopping() ? std::chrono::milliseconds(100)
                                : std::chrono::ceil<std::chrono::milliseconds>(next_renewal -
                                                                               std::chrono::steady_clock::now());
    bool cut_short = false;
    try {
      co_await sleep_for(nap);
    } catch (const boost::system::system_error&) {
      cut_short = true;  // by the shutdown
    }
    // Cancelled once, every later wait would throw at once: this loop goes
    // on (renewing) until the threads are handed back.
    if (cut_short) co_await asio::this_coro::reset_cancellation_state();
    {
      std::scoped_lock lock(mutex_);
      if (shutting_down_ && claimed_.empty() && executing_ == 0) co_return;
    }
    if (std::chrono::steady_clock::now() < next_renewal) continue;
    next_renewal = std::chrono::steady_clock::now() + fleet_.lease / 3;
    try {
      co_await fleet_.queue->renew(fleet_.owner, fleet_.lease);
    } catch (const std::exception& e) {
      spdlog::warn("serve: renewing this server's claims failed: {}", e.what());
    }
  }
}

// ---------------------------------------------------------------- serving a thread

// The thread's run to execute next: one left running (its server died or
// stopped), else the oldest pending.
std::optional<run_record> run_engine::next_run_of(const std::string& thread_id) const {
  std::optional<run_record> pending;
  for (auto& run : records_.runs_of(thread_id)) {  // oldest first
    if (run.status == "running") return std::move(run);
    if (run.status == "pending" && !pending) pending = std::move(run);
  }
  return pending;
}

std::string run_engine::running_run_of(const std::string& thread_id) const {
  for (const auto& run : records_.runs_of(thread_id))
    if (run.status == "running") return run.run_id;
  return {};
}

// Executes the thread's runs, oldest first, until none is left; then lets
// the thread go. A pending run with a cancel requested is withdrawn, not
// executed. Shutting down, it lets the thread go at once, for another
// server (or the next start) to continue. `awaited`: the run the claim
// was offered for (a reservation), which may be journaled a moment later.
asio::awaitable<void> run_engine::serve_thread(std::string thread_id, std::string awaited, bool taken_over) {
  int failures = 0;
  for (int look = 0;; ++look) {
    bool failed = false;
    std::optional<run_record> next;
    try {
      co_await records_.sync();
      if (taken_over) co_await end_stream_left_open(thread_id);
      taken_over = false;
      if (!stopping()) next = next_run_of(thread_id);
      if (!next && !awaited.empty() && !records_.run(awaited) && look < 20 && !stopping()) {
        co_await sleep_for(std::chrono::milliseconds(100));  // its poster is journaling it
        continue;
      }
      if (!next) break;
      if (const auto action = records_.cancel_requested(next->run_id); !action.empty() && next->status == "pending") {
        co_await withdraw(*next, action);
        continue;
      }
      co_await execute(next->run_id);
    } catch (const std::exception& e) {
      spdlog::warn("serve: thread {}: {}", thread_id, e.what());
      failed = true;
    }
    if (failed) {
      // The database away, a run of a graph this server does not serve:
      // a few more tries, then the thread goes back for any server.
      if (stopping() || ++failures >= 3) break;
      co_await sleep_for(fleet_.idle_poll);
      continue;
    }
    failures = 0;
    std::scoped_lock lock(mutex_);
    if (!claimed_.contains(thread_id)) co_return;  // let go when its run ended (let_go_if_idle)
  }
  co_await release_thread(thread_id);
}

// Taking over a thread from a server that stopped renewing: the thread's
// last ended run may have lost its stream's end with that server (it ends
// the record, then the stream); it is written here. (Written twice, it is
// harmless: readers stop at the first.)
asio::awaitable<void> run_engine::end_stream_left_open(const std::string& thread_id) {
  std::optional<run_record> last_ended;
  for (auto& run : records_.runs_of(thread_id))  // oldest first
    if (is_terminal(run.status)) last_ended = std::move(run);
  if (!last_ended || co_await stream_has_end(last_ended->run_id)) co_return;
  spdlog::info("serve: run {} ended on a server that stopped before ending its stream; its stream ends here",
               last_ended->run_id);
  co_await end_stream(*last_ended);
}

// A run whose end was refused under the hold it executed under (another
// server held its thread meanwhile) and which still ended here, its last
// save accepted: when this server holds the thread now, it writes the end
// under its current claim, unless the stream has one (the other server's,
// written before it let the thread go).
asio::awaitable<void> run_engine::end_stream_if_held(const run_record& run) {
  {
    std::scoped_lock lock(mutex_);
    if (!claimed_.contains(run.thread_id)) co_return;
  }
  if (co_await stream_has_end(run.run_id)) co_return;
  spdlog::info("serve: run {}: its thread was held by another server meanwhile; its stream ends here", run.run_id);
  co_await end_stream(run);
}

// Whether the run's stream holds its end record.
asio::awaitable<bool> run_engine::stream_has_end(const std::string& run_id) {
  for (std::int64_t after = 0;;) {
    const auto events = co_await feed_->read(run_id, after, 256);
    for (const auto& e : events) {
      after = e.position;
      if (split_record(e.event).name == end_of_run) co_return true;
    }
    if (events.size() < 256) co_return false;
  }
}

// A run of a thread held here ended: when the thread has nothing more to
// run, it leaves the queue now, before anyone learns that the run ended —
// a caller that answers as soon as its wait returns must find it free.
asio::awaitable<void> run_engine::let_go_if_idle(const std::string& thread_id) {
  {
    std::scoped_lock lock(mutex_);
    if (!claimed_.contains(thread_id) || shutting_down_) co_return;
  }
  try {
    co_await records_.sync();
  } catch (const std::exception& e) {
    co_return;  // serve_thread looks again
  }
  if (next_run_of(thread_id)) co_return;  // serve_thread runs it next
  co_await release_thread(thread_id);
}

// Takes the thread out of the queue, then offers it again if a run arrived
// meanwhile (its poster's offer was refused while this server held it) or
// one is left because this server is stopping.
asio::awaitable<void> run_engine::release_thread(const std::string& thread_id) {
  std::int64_t fence = 0;
  {
    std::scoped_lock lock(mutex_);
    const auto it = claimed_.find(thread_id);
    if (it == claimed_.end()) co_return;  // let go already
    fence = it->second.fence;
    claimed_.erase(it);
  }
  // Until the database takes it: a thread this server no longer serves must
  // not stay claimed (its claims are renewed together, so it would never lapse).
  for (int attempt = 1;; ++attempt) {
    bool failed = false;
    try {
      co_await fleet_.queue->done(thread_id, fence);
    } catch (const orch::claim_error& e) {
      // Another server claimed it after this one's lease lapsed: it is theirs.
      spdlog::warn("serve: thread {} was claimed by another server meanwhile: {}", thread_id, e.what());
      co_return;
    } catch (const std::exception& e) {
      if (attempt == 1 || attempt % 30 == 0)
        spdlog::warn("serve: thread {} could not leave the run queue: {}; trying again", thread_id, e.what());
      failed = true;
    }
    if (!failed) break;
    if (stopping() && attempt >= 3) co_return;  // gone with this process: its claim lapses
    co_await sleep_for(std::chrono::seconds(1));
  }
  // A run posted meanwhile (its offer refused while this server held the
  // thread), or one left running: the thread goes back to the queue.
  for (int attempt = 1;; ++attempt) {
    bool failed = false;
    try {
      co_await records_.sync();
      if (next_run_of(thread_id)) co_await offer_thread(thread_id, orch::ready_reason::new_run);
    } catch (const std::exception& e) {
      spdlog::warn("serve: thread {} could not be offered again: {}; trying again", thread_id, e.what());
      failed = true;
    }
    if (!failed) break;
    if (stopping() && attempt >= 3) co_return;  // the next sweep offers it (offer_threads_with_work)
    co_await sleep_for(std::chrono::seconds(1));
  }
}

// A run this server could not keep: another server claimed it (this one
// stalled past its lease; its saves were refused), a save failed (the
// database went away mid-step), or its stored run is still another
// server's after waiting a lease (settled_state). Its record is not this
// server's to end: the run stays `running` in the catalog, and the thread
// goes back to the queue (a lost one is someone else's already), so a
// server continues the run from its last saved step once the store's
// lease on it lapses.
asio::awaitable<bool> run_engine::left_to_another_server(const run_record& run, const orch::workflow_state& state) {
  const auto* error = state.first_error();
  // run_exists: another server started the run first (this one stalled
  // before the run's first save, and its thread was taken over).
  bool lost = error && (error->type == "lost_ownership" || error->type == "checkpoint_failed" ||
                        error->type == "run_exists");
  // Failed here, but the store does not say so: the failure was this
  // server's losing the run (a tool's record refused by the fence, inside
  // an agent), and the run is another server's to end.
  if (!lost && state.status == orch::workflow_status::failed) {
    const auto stored = co_await workflow_of(run.graph_id).hub->find(run.workflow_run);
    lost = stored && stored->status != orch::workflow_status::failed;
  }
  if (!lost && state.status != orch::workflow_status::running) co_return false;
  spdlog::warn("serve: run {} ({}): left for another server to continue", run.run_id,
               error ? error->type : "still running elsewhere");
  co_await release_thread(run.thread_id);
  co_return true;
}

// ---------------------------------------------------------------- cancelling

// A run of any server is cancelled through the catalog: the server
// holding its thread acts on the request when it reads it (on_cancel_read),
// this one at once.
asio::awaitable<void> run_engine::request_cancel(std::string run_id, std::string action) {
  co_await records_.request_cancel(run_id, action);
  on_cancel_read(run_id, action);
}

void run_engine::on_cancel_read(const std::string& run_id, const std::string& action) {
  const auto run = records_.run(run_id);
  if (!run || is_terminal(run->status)) return;
  std::optional<orch::workflow_handle> handle;
  {
    std::scoped_lock lock(mutex_);
    if (!claimed_.contains(run->thread_id)) return;  // held elsewhere, or by nobody yet: they read it
    if (!cancel_actions_.try_emplace(run_id, action).second) return;  // already acted on
    if (const auto it = handles_.find(run_id); it != handles_.end()) handle = it->second;
  }
  // Without a handle yet: heed_cancel_requests finds the action (or the catalog's
  // request) when the run gets one; a pending run is withdrawn by serve_thread.
  if (!handle) return;
  if (action == "rollback") handle->cancel();
  else handle->interrupt();
}

// ---------------------------------------------------------------- continuing

// The stored state of a hub run this server is about to continue. A run
// still `running` belongs to a server whose lease in the checkpoint store
// has not lapsed yet (its claim on the thread lapsed first): wait for it,
// for up to a lease and a bit, so that the run is continued rather than
// ended as it stood (still running after that: left_to_another_server).
asio::awaitable<std::optional<orch::workflow_state>> run_engine::settled_state(served_workflow& workflow,
                                                                              const std::string& hub_run) {
  const auto give_up = std::chrono::steady_clock::now() + fleet_.lease + std::chrono::seconds(2);
  for (;;) {
    auto state = co_await workflow.hub->find(hub_run);
    if (!state || state->status != orch::workflow_status::running || std::chrono::steady_clock::now() > give_up ||
        stopping())
      co_return state;
    co_await sleep_for(std::chrono::milliseconds(250));
  }
}

// At start-up: every thread with a run pending or left running is offered
// to the queue; then this server starts claiming.
asio::awaitable<void> run_engine::recover_shared() {
  co_await offer_threads_with_work();
  asio::co_spawn(loops_, claim_threads(), asio::bind_cancellation_slot(stop_claiming_.slot(), asio::detached));
  asio::co_spawn(loops_, renew_claims(), asio::bind_cancellation_slot(stop_renewing_.slot(), asio::detached));
  asio::co_spawn(loops_, follow_catalog(), asio::bind_cancellation_slot(stop_following_.slot(), asio::detached));
}

// Reads the other servers' changes as they come, so that a request to
// cancel a run executing here is acted on between its steps.
asio::awaitable<void> run_engine::follow_catalog() {
  background_task task{*this};
  for (;;) {
    if (stopping()) co_return;
    bool failed = false;
    try {
      co_await records_.follow(std::chrono::milliseconds(500));
    } catch (const std::exception& e) {
      if (!stopping()) spdlog::warn("serve: following the catalog's journal failed: {}", e.what());
      failed = true;
    }
    if (stopping()) co_return;
    // A pause between reads: every append of this server's wakes the
    // follower, and one read then takes in what a burst appended.
    co_await sleep_for(failed ? fleet_.idle_poll : std::chrono::milliseconds(50));
  }
}

}  // namespace switchboard::server
