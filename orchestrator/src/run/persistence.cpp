// Checkpoints: what a run writes to the store after every step, what it
// does when the store refuses, and the retention of finished runs.

#include "workflow_run.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

namespace switchboard::orchestrator::detail {

// Writes the head and what changed since the last save. The first save of
// a new run creates it in the store; every later one carries the fence the
// run was given. Marks advance only when the store took the record.
bool workflow_run::saves_now() const {
  if (!hub_->options.store || lost_ || gave_up_) return false;
  // The hub's own in-memory store serves one thing: resuming a paused run in
  // this process. Nothing else reads a running or ended run from it, and a
  // crash loses it anyway. So only a pause is written there; the journal
  // marks stay put until then, and the pause's record carries every step
  // since (tool records included: journal_target_now() gives none).
  return !hub_->own_store || is_paused(state_.status);
}

asio::awaitable<void> workflow_run::save() {
  if (!saves_now()) co_return;
  const auto& store = hub_->options.store;
  const auto& options = hub_->options;
  auto marks = marks_;
  auto cp = make_save_request(state_, w_.identity, &marks, options.owner_id, fence_);
  try {
    if (stored_) {
      co_await store->save(std::move(cp));
    } else if (!hub_->own_store) {
      co_await store->create(std::move(cp), options.lease);
      stored_ = true;
      fence_ = 1;
    } else {
      // First written at a pause: a run is created running, so it is created
      // bare (no journal record, which the save then carries once) and saved.
      save_request bare = cp;
      bare.status = workflow_status::running;
      bare.journal.clear();
      co_await store->create(std::move(bare), options.lease);
      stored_ = true;
      fence_ = 1;
      cp.fence = fence_;
      co_await store->save(std::move(cp));
    }
    marks_ = std::move(marks);
  } catch (const claim_error& err) {
    refused_save(err);
  } catch (const std::exception& err) {
    // The save may or may not have landed (a connection cut mid-statement):
    // saving again could write its records twice, so nothing more is saved
    // here and the run is given up at its end (give_up_stored_run).
    // A completion that was not kept is not one: the run is reported failed
    // (checkpoint_failed), so whoever serves it learns the store has it at
    // an earlier save; a cancel or an interruption stays what it is.
    hub_->logger->error("[{}] checkpoint failed: {}", state_.id, err.what());
    gave_up_ = true;
    if (state_.status == workflow_status::running || state_.status == workflow_status::awaiting_clarification ||
        state_.status == workflow_status::awaiting_approval || state_.status == workflow_status::completed) {
      state_.clarification.reset();
      state_.approval.reset();
      state_.result.reset();
      fail(make_record("checkpoint_failed", "workflow '" + state_.id + "': " + err.what(), false));
    }
  }
}

// After a save whose outcome is unknown: the stored run, still running under
// this hub (the lease keeper would renew it for as long as the hub runs
// anything), becomes interrupted at whatever save last landed, so another
// process, or a resume here, continues it from there. A save that did land
// and ended the run leaves nothing to release.
// Tried three times (the connection that failed the save is often not the
// only one cut): release is fenced, so a repeat is harmless.
asio::awaitable<void> workflow_run::give_up_stored_run() {
  if (!gave_up_ || lost_) co_return;
  const auto fence = stored_ ? fence_ : 1;  // a create that failed may still have made the run, with fence 1
  for (int attempt = 1;; ++attempt) {
    try {
      if (co_await hub_->options.store->release(state_.id, hub_->options.owner_id, fence))
        hub_->logger->warn("[{}] left interrupted at its last save for another process to continue", state_.id);
      else
        hub_->logger->info("[{}] not given up: the save that failed ended it, or another process holds it now",
                           state_.id);
      co_return;
    } catch (const std::exception& err) {
      if (attempt == 3) {
        hub_->logger->error("[{}] cannot give the run up ({}); it stays running under this hub, and another "
                            "process takes it over once this hub stops renewing its leases",
                            state_.id, err.what());
        co_return;
      }
    }
    asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(200 * attempt));
    co_await pause.async_wait(asio::use_awaitable);
  }
}

// The store refused the run: another run has its id, or another hub claimed
// it. Nothing more is saved; the stored run belongs to someone else.
void workflow_run::refused_save(const claim_error& err) {
  lost_ = true;
  hub_->logger->error("[{}] {}", state_.id, err.what());
  state_.clarification.reset();
  state_.approval.reset();
  const bool exists = err.why() == claim_error::reason::exists;
  auto record = make_record(exists ? "run_exists" : "lost_ownership",
                            "workflow '" + state_.id + "': " + err.what() +
                                (exists ? "" : "; this process stopped it without saving"),
                            false);
  if (state_.status == workflow_status::running || state_.status == workflow_status::awaiting_clarification ||
      state_.status == workflow_status::awaiting_approval) {
    fail(std::move(record));
  } else {
    state_.errors.push_back(std::move(record));
  }
}

// A hub given no store keeps only what resume() can continue: a run that
// ended any other way than paused leaves its in-memory store, so the store
// does not grow with every run the hub made.
asio::awaitable<void> workflow_run::forget() {
  if (!stored_ || lost_) co_return;
  try {
    co_await hub_->options.store->erase(state_.id);
  } catch (const std::exception& e) {
    hub_->logger->warn("[{}] cannot drop the ended run from memory: {}", state_.id, e.what());
  }
}

// hub_options::retention: at most once a minute per hub, when a run ends.
asio::awaitable<void> workflow_run::prune_finished_runs() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto now_ns = duration_cast<nanoseconds>(now.time_since_epoch()).count();
  auto last = hub_->last_prune_ns.load();
  if (now_ns - last < duration_cast<nanoseconds>(minutes(1)).count()) co_return;
  if (!hub_->last_prune_ns.compare_exchange_strong(last, now_ns)) co_return;
  try {
    const auto removed = co_await hub_->options.store->prune(now - *hub_->options.retention);
    if (removed > 0) hub_->logger->info("pruned {} finished run(s) older than the retention", removed);
  } catch (const std::exception& e) {
    hub_->logger->warn("cannot prune finished runs: {}", e.what());
  }
}

}  // namespace switchboard::orchestrator::detail
