// The hub: runs compiled workflows, owns their state, calls agents, reads
// their envelopes and routes. Agents never call each other.
//
//   orchestrator::hub_options options;
//   options.store = stores::make_sqlite_checkpoint_store("state.db");  // switchboard::sqlite_store
//   orchestrator::hub hub{io.get_executor(), registry, options};
//   workflow_state s = co_await hub.run(workflow, input);
//   if (s.status == workflow_status::awaiting_clarification)
//     s = co_await hub.resume(workflow, s.id, "Tuesday afternoon");
//
// Many workflows run at once on one io_context (one thread or a pool); each
// workflow runs on its own strand and its state is touched only there.
//
// Deadlines: a node's timeout bounds each agent call whatever the agent
// does. At the deadline the step fails with an error record of type
// `timeout` (retried when the node's retry policy allows), the agent's
// coroutine is asked to stop, and the hub does not wait for it: an answer
// that comes later is dropped, never recorded, routed on or counted. An
// agent that blocks its thread (a sleep, a synchronous call) is the one
// exception to "on time": it holds the io_context thread it runs on, so
// every workflow on that thread stalls and the deadline fires only when it
// returns (its answer is still refused as late). Agents that must block
// declare it (agent::blocks_thread(), agents::run_on_thread_pool()) and run
// on the hub's own pool of hub_options::blocking_threads threads instead.
// Cancelling a run gives up a call under a deadline (or on the pool) at once
// too; a call without a deadline is awaited until the agent's run() returns.
//
// Tool calls (agents/tool_journal.hpp): every call an LLM agent's tool
// loop makes is journaled with the step and saved before it acts on it, so a
// recorded call is never made again, after a resume or a crash; each step's
// calls are in its audit entry (tool_calls) and in tool_called events. A call
// that needs approval pauses the run: status awaiting_approval, the pending
// calls in workflow_state::approval, resumable in another process with
// resume_options::decision; the node then runs again, replaying what it
// already did.
//
// run()/resume() complete when the workflow stops: completed, failed,
// cancelled, interrupted, awaiting_clarification or awaiting_approval. A failure inside the
// workflow (agent error, timeout, no route, step limit, a refused save) is
// not thrown: the returned state has status `failed` and error records.
// They throw orchestrator_error for misuse: run() of an input that cannot
// be stored (invalid_input, at the call); resume() of an unknown id
// (unknown_workflow), of a finished workflow (not_awaiting_clarification),
// of a run another hub owns (run_owned), of a run that moved on since the
// caller read it (run_moved_on), with or without an answer where the
// status asks the opposite (answer_required), with or without a decision
// where the status asks the opposite (decision_required), under a changed definition
// (workflow_mismatch, naming what changed; the stored run is kept).
// Cancellation: cancelling the awaiting coroutine (its cancellation slot,
// terminal) cancels the workflow; it then completes with status `cancelled`.
//
// start()/start_resume() are the same for callers who do not await: they
// return a workflow_handle at once; start_resume()'s misuse errors are
// rethrown by the handle's wait()/async_wait().
//
// Durable runs: with hub_options::store set, a run is owned by this hub
// while it works: created (run) or claimed (resume) in the store with a
// lease of hub_options::lease, renewed while it runs, and a fencing number
// that every save carries. Of several hubs resuming one run at once, in
// one process or many, exactly one wins; the others get run_owned. The
// state is saved after every step (the step's records are appended), so a
// step whose result was saved is never executed again: a run whose process
// died is `interrupted` once its lease expires (at once when its owner was
// a process of this host that no longer exists) and resume() without an
// answer continues it from the last saved step. Without a store, the hub
// keeps paused workflows in an in-memory store of its own.
//
// Lifetimes: the registry and the store must outlive the hub; a pending run
// keeps the hub's internals and its compiled workflow alive, so destroying
// the hub object while runs are pending is safe (they finish normally). An
// agent call the hub gave up (deadline, cancellation) may still be running
// in its agent: keep the registry's agents alive until the io_context has
// stopped. Destroying the hub's internals (the hub and its last run) waits
// for blocking agents inside a call on its pool to return.
//
// Thread-safety: all member functions may be called concurrently from any
// thread; add_observer() is for set-up time, before the first run.
#pragma once

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/events.hpp>
#include <switchboard/orchestrator/hub_metrics.hpp>
#include <switchboard/orchestrator/workflow.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <optional>
#include <string>
#include <string_view>

namespace spdlog { class logger; }

namespace switchboard::agents { class agent_registry; class trace_parents; }

namespace switchboard::orchestrator {

struct hub_options {
  std::shared_ptr<checkpoint_store> store;   // null: an in-memory store of the hub's, paused runs only
  agents::model_set models;                  // what agents and coordinators may use
  std::shared_ptr<spdlog::logger> logger;    // null: spdlog's default logger
  bool validate_envelopes = true;            // check every envelope with agent_registry::validate
  bool collect_metrics = true;               // feed hub::metrics()
  // Who owns this hub's runs in the store; "" = this process
  // ("host:pid:start-time", which lets a hub of the same host see at once
  // that the owner of a running run is dead).
  std::string owner_id;
  // How long a claim holds without renewal; renewed every third of it.
  std::chrono::milliseconds lease{30'000};
  // Set: finished runs older than this are pruned from the store (checked
  // at most once a minute, when a run finishes).
  std::optional<std::chrono::seconds> retention;
  // Threads of the pool that runs blocking agents (agent::blocks_thread()),
  // started at the first call of one. At most this many blocking calls run
  // at once; the others queue, and one whose deadline passes in the queue
  // never starts. 0: no pool, blocking agents run on the workflow's strand
  // like any other (and block its thread).
  std::size_t blocking_threads = 4;
  // Decides which tool calls need the user's approval before they are made
  // (agents/tool_journal.hpp); empty: those of tools whose needs_approval()
  // is true. A call that needs it pauses the run (awaiting_approval).
  agents::approval_policy approval_policy;
};

struct run_options {
  std::string workflow_id;                   // "" = a fresh unique id
};

// The user's decision on the tool calls a run awaits approval for: every
// pending call is approved, or every one rejected (the model is told, with
// the reason, and the call is never made).
struct approval_decision {
  bool approve = false;
  std::string reason;                        // optional, sent to the model on rejection
};

struct resume_options {
  // The answer to a paused run's question; none to continue an
  // interrupted run.
  std::optional<std::string> answer;
  // The decision for a run awaiting approval (and only for one).
  std::optional<approval_decision> decision;
  // The pending calls the decider saw (approval_request::calls_key()):
  // refuse (run_moved_on) when the run now waits for other calls — the
  // step ran again after another decision and asked for new ones. Unset:
  // whatever calls are pending.
  std::optional<std::string> expected_calls;
  // The step the caller saw: refuse (run_moved_on) if the run moved on
  // since, for example an answer typed for a question another process
  // already answered. Unset: the step read when resuming.
  std::optional<std::int64_t> expected_step;
};

// A node's answer given by a person instead of its agent (hub::update_stored_run,
// the API's POST /threads/{id}/state).
struct state_update {
  std::string node;                          // an agent node; "" = where the run stopped
  boost::json::object data;                  // the answer's `data`, checked against the agent's output schema
  std::string explanation = "set by a person instead of the agent";
  // The step the caller saw: refused (run_moved_on) if the run moved on
  // since. Unset: the step read when updating.
  std::optional<std::int64_t> expected_step;
};

namespace detail { struct run_control; }

// True when `owner_id` is a hub owner id of this host whose process no
// longer exists: its running runs are interrupted, whatever their lease
// says. False when unknown (another host, a custom owner id).
bool is_dead_local_owner(std::string_view owner_id);

// A run started without awaiting it. Copies share the run. Thread-safe.
class workflow_handle {
 public:
  explicit workflow_handle(std::shared_ptr<detail::run_control> control);

  const std::string& id() const noexcept;
  // Cancels the whole workflow (the running agents see operation_aborted);
  // it completes with status `cancelled`. Idempotent; no-op once done.
  void cancel() const;
  // Stops the workflow like cancel(), but it completes with status
  // `interrupted` (a paused one stays paused): the step in flight is given
  // up, completed steps stay saved, and resume() without an answer
  // continues it. For shutdowns and signals. Idempotent; no-op once done.
  void interrupt() const;
  bool done() const;
  // Blocks until the run stops. Never call it on a thread that runs the
  // hub's io_context (it would wait for itself).
  workflow_state wait() const;
  // Suspends until the run stops; completes on the awaiting coroutine's
  // executor. The wait itself is not cancellable and does not cancel the
  // workflow; call cancel() to end the run early.
  boost::asio::awaitable<workflow_state> async_wait() const;
  // As async_wait(), without the state: for a waiter that may wait for
  // hours and wants no copy of the state in its frame meanwhile (the
  // server's runs). result() then gives it.
  boost::asio::awaitable<void> async_done() const;
  // Calls `done()` once the run stopped, posted to its associated executor
  // (bind_executor; the system executor otherwise), never inline: for a
  // waiter that keeps no coroutine frame at all while the run goes.
  // result() then gives the state.
  template <class Handler>
  void on_done(Handler done) const {
    when_stopped([h = std::move(done)]() mutable {
      const auto executor = boost::asio::get_associated_executor(h);
      boost::asio::post(executor, std::move(h));
    });
  }
  // The state the run stopped with, or its exception. Only once done().
  workflow_state result() const;

 private:
  // Calls `waiter` on the thread that stopped the run (at once if it has).
  void when_stopped(boost::asio::any_completion_handler<void()> waiter) const;

  std::shared_ptr<detail::run_control> control_;
};

class hub {
 public:
  hub(boost::asio::any_io_executor executor, const agents::agent_registry& registry,
      hub_options options = {});
  ~hub();
  hub(const hub&) = delete;
  hub& operator=(const hub&) = delete;

  boost::asio::awaitable<workflow_state> run(std::shared_ptr<const compiled_workflow> workflow,
                                             boost::json::value input, run_options options);
  // run() with default options. An overload, not a default argument: a
  // defaulted argument of an awaited call is a temporary of the co_await
  // (g++ 12; README, "Development").
  boost::asio::awaitable<workflow_state> run(std::shared_ptr<const compiled_workflow> workflow,
                                             boost::json::value input) {
    return run(std::move(workflow), std::move(input), run_options{});
  }
  workflow_handle start(std::shared_ptr<const compiled_workflow> workflow,
                        boost::json::value input, run_options options = {});

  // Continues a workflow awaiting clarification: the unsure node runs again
  // with `answer` appended to agent_context::clarification_answers.
  boost::asio::awaitable<workflow_state> resume(std::shared_ptr<const compiled_workflow> workflow,
                                                std::string workflow_id, std::string answer);
  // Continues a paused run (options.answer set) or an interrupted one (no
  // answer), claiming it first.
  boost::asio::awaitable<workflow_state> resume(std::shared_ptr<const compiled_workflow> workflow,
                                                std::string workflow_id, resume_options options);
  workflow_handle start_resume(std::shared_ptr<const compiled_workflow> workflow, std::string workflow_id,
                               resume_options options);
  workflow_handle start_resume(std::shared_ptr<const compiled_workflow> workflow, std::string workflow_id,
                               std::string answer);

  // The last saved state of a workflow (from the store, or this hub's
  // memory of paused runs), or nullopt. Throws orchestrator_error
  // (corrupt_checkpoint) when a stored state cannot be read.
  boost::asio::awaitable<std::optional<workflow_state>> find(std::string workflow_id) const;

  // Cancels a stored run that is paused or interrupted (claiming it first,
  // so a run another hub is working on is refused with run_owned); returns
  // its final state, status `cancelled`.
  boost::asio::awaitable<workflow_state> cancel_stored_run(std::string workflow_id);

  // Records `update.data` as the answer of `update.node`'s agent, as if the
  // node had run (confidence 1, a step of its own in the audit log), and
  // leaves the run interrupted where that node's routes lead: resuming it
  // without an answer goes on from there. Only a paused or interrupted run
  // (claimed first, like a resume); a pending question or pending tool calls
  // are dropped, so those calls are never made. Nothing is saved when it
  // throws one of these orchestrator_errors: unknown_workflow; run_owned (running);
  // not_awaiting_clarification (finished); workflow_mismatch; invalid_update
  // (no such agent node, data the agent's schema refuses, no route
  // matches); run_moved_on (not at update.expected_step, or moved on while
  // being claimed) or lost_ownership (claimed by another process before the
  // save). A save that fails otherwise (it may have landed) gives the run
  // back (checkpoint_store::release) and rethrows.
  boost::asio::awaitable<workflow_state> update_stored_run(std::shared_ptr<const compiled_workflow> workflow,
                                                           std::string workflow_id, state_update update);

  // This hub's owner id in the store (hub_options::owner_id, or this
  // process's).
  const std::string& owner_id() const noexcept;

  void add_observer(std::shared_ptr<observer> o);
  // Where agents' model requests and tool calls sit in the runs' traces
  // (agents/trace_parents.hpp): given to every agent call. Set-up time only,
  // before the first run, like add_observer; never set when tracing is off.
  void set_trace_parents(std::shared_ptr<const agents::trace_parents> traces);
  const hub_metrics& metrics() const noexcept;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace switchboard::orchestrator
