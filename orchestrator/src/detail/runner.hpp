// The hub's internals shared by hub.cpp and the run (orchestrator/src/run/): the hub's
// configuration and the coroutine that runs one workflow.
#pragma once

#include <switchboard/orchestrator/hub.hpp>

#include "lease_keeper.hpp"
#include "run_control.hpp"
#include "state_journal.hpp"

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace boost::asio { class thread_pool; }

namespace switchboard::orchestrator {

namespace detail {

// A run ready to go: its state and where it comes from.
struct prepared_run {
  workflow_state state;
  std::optional<std::string> answer;  // a paused run's answer, appended when it continues
  bool continuing = false;            // an interrupted run, continued without an answer
  std::optional<approval_decision> decision;  // for the calls a paused run awaits approval for
  // With a store: set once the run is stored (claimed): the fence it holds
  // and how much of the state is already in its journal. Unset: a new run,
  // created by its first save.
  std::optional<journal_marks> stored;
  std::int64_t fence = 0;
};

}  // namespace detail

struct hub::impl {
  impl(boost::asio::any_io_executor executor, const agents::agent_registry& registry, hub_options options);
  // Waits for blocking agents still inside a call on the pool to return.
  ~impl();

  std::string new_id();
  detail::prepared_run initial_state(const compiled_workflow& workflow, boost::json::value input, run_options& run);
  // A stored run about to be claimed: its checkpoint and its status, a
  // running run of a dead owner of this host counting as interrupted.
  struct claimable {
    checkpoint cp;
    workflow_status status = workflow_status::running;
    std::string dead_owner;  // the owner to take over ("" = none)
  };
  // Reads `id` for a claim (reading again once its owner is known dead);
  // throws unknown_workflow naming `verb`.
  boost::asio::awaitable<claimable> read_for_claim(std::string id, std::string_view verb);
  // Claims `run` for this hub at `expected_step`; the store's refusals
  // become orchestrator_errors naming `verb`.
  boost::asio::awaitable<checkpoint> take(const claimable& run, std::int64_t expected_step,
                                          std::string_view verb = "resume");
  // Saves a run take() claimed to change it (cancel, update). A refusal
  // (another process claimed it meanwhile) is lost_ownership; any other
  // failure may or may not have landed, so the run is given back (release)
  // rather than left running under this hub's renewed lease, and rethrown.
  boost::asio::awaitable<void> save_taken(save_request request, std::string_view verb);
  // Claims a paused or interrupted run for resume(); throws the misuse errors.
  boost::asio::awaitable<detail::prepared_run> claim(std::shared_ptr<const compiled_workflow> workflow,
                                                     std::string id, resume_options options);

  // Where agent `a` runs for a run on `run_strand`: a strand of the
  // blocking pool (started on first use) when `a` blocks its thread and the
  // pool is enabled, else `run_strand` itself.
  boost::asio::any_io_executor agent_executor(const agents::agent& a, const boost::asio::any_io_executor& run_strand);

  // ---- Configuration: set by the constructor and never changed, so read
  // from any thread without a lock.
  const boost::asio::any_io_executor executor;
  const agents::agent_registry& registry;
  // options.store was made by the hub (it was given none): a run that ends
  // other than paused leaves it, so it holds what resume() can continue and
  // no more.
  const bool own_store;
  const hub_options options;  // with an owner id and a store, always
  // options.models, shared with the agent calls a run gave up (they may
  // outlive the hub).
  const std::shared_ptr<const agents::model_set> models;
  // options.approval_policy (null when empty), shared with agent calls for the same reason.
  const std::shared_ptr<const agents::approval_policy> approval_policy;
  const std::shared_ptr<spdlog::logger> logger;
  const std::string id_prefix;

  // ---- Services: what runs share and change; each safe from any thread.
  std::vector<std::shared_ptr<observer>> observers;  // added before runs start (hub::add_observer)
  std::shared_ptr<const agents::trace_parents> traces;  // null: tracing off (hub::set_trace_parents)
  hub_metrics metrics;
  std::atomic<std::uint64_t> id_counter{0};
  // Renews the leases of this hub's runs (one timer for all of them).
  const std::shared_ptr<detail::lease_keeper> leases;
  std::atomic<std::int64_t> last_prune_ns{0};  // when finished runs were last pruned (retention)

  // hub_options::blocking_threads threads for blocking agents. Calls on it
  // hold no reference to the hub, so the hub is never destroyed on one of
  // its threads (which could not join itself).
  std::once_flag blocking_pool_started;
  std::unique_ptr<boost::asio::thread_pool> blocking_pool;
};

namespace detail {

// A new strand on `executor`. When that is an io_context's executor the
// strand is built on the concrete type, so it fits inside an
// any_io_executor: a strand over any_io_executor does not, and every async
// operation of the run would then copy it to the heap.
boost::asio::any_io_executor make_run_strand(const boost::asio::any_io_executor& executor);

// Runs (or resumes) a workflow on a new strand of the hub's executor until
// it stops, for callers that await the run: cancelling the awaiting
// coroutine cancels the run. Never throws for workflow failures; they end
// in the returned state.
boost::asio::awaitable<workflow_state> run_on_own_strand(std::shared_ptr<hub::impl> hub,
                                                         std::shared_ptr<const compiled_workflow> workflow,
                                                         prepared_run run);

// The same, co_spawned on control->strand and cancellable through
// control->signal, once `prepare` produced the run (its exception goes to
// the handle); control->finish() receives the final state.
void spawn(std::shared_ptr<hub::impl> hub, std::shared_ptr<run_control> control,
           std::shared_ptr<const compiled_workflow> workflow, boost::asio::awaitable<prepared_run> prepare);

}  // namespace detail

}  // namespace switchboard::orchestrator
