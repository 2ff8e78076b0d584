// The run loop: a workflow runs step by step on its strand until it
// completes, fails, pauses for clarification, is cancelled or interrupted;
// routing and the endings; how a run is started and awaited.

#include "workflow_run.hpp"

#include <switchboard/orchestrator/error.hpp>
#include <switchboard/protocol/limits.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace switchboard::orchestrator::detail {

protocol::error_record make_record(std::string_view type, std::string message, bool retryable,
                                   std::string_view agent) {
  return {std::string(type), std::move(message), retryable, std::string(agent)};
}

std::string format_confidence(double value) { return fmt::format("{:.2f}", value); }

std::string question_for(const protocol::envelope& e, std::string_view agent) {
  if (const auto* q = e.data.if_contains("clarification_question"); q && q->is_string() && !q->get_string().empty()) {
    return std::string(q->get_string());
  }
  std::string question = std::string(agent) + " is not sure: " + e.explanation;
  if (!e.reasoning.empty()) question += " (" + e.reasoning + ")";
  question += " Could you clarify?";
  return question;
}

// Adds a parallel group member's envelope to the group's merged envelope
// (start from confidence 1): data under the member's name, the lowest
// confidence, explanations and reasonings joined.
void merge_member(protocol::envelope& merged, const std::string& name, const protocol::envelope& member) {
  merged.data[name] = member.data;
  merged.confidence = std::min(merged.confidence, member.confidence);
  merged.explanation += (merged.explanation.empty() ? "" : " ") + member.explanation;
  merged.reasoning += (merged.reasoning.empty() ? "" : " ") + name + ": " + member.reasoning;
}

// Why an envelope cannot enter the state (a number that is not finite,
// data nested beyond the limits), or nullopt.
std::optional<std::string> unstorable(const protocol::envelope& e) {
  if (!std::isfinite(e.confidence)) return std::string("its confidence is not finite");
  if (auto problem = protocol::check_untrusted_value(e.data)) return "data: " + *problem;
  return std::nullopt;
}

asio::awaitable<bool> cancelled_now() {
  auto state = co_await asio::this_coro::cancellation_state;
  co_return state.cancelled() != asio::cancellation_type::none;
}


// ---------------------------------------------------------------- main loop

// A run continued from the store did not run its last step here: find it
// in the audit log (the last step that produced an envelope), so that an
// `end` node's result and a `clarify` node's question refer to it.
void workflow_run::restore_last_step() {
  for (auto it = state_.audit.rbegin(); it != state_.audit.rend(); ++it) {
    if (it->condition.starts_with("failed") || it->condition == "on_error") continue;
    const int node = w_.index_of(it->node);
    if (node == no_node) return;
    const auto& n = w_.nodes[node];
    last_node_ = node;
    if (n.kind() != node_kind::parallel) {
      last_agent_ = it->agent;
      return;
    }
    last_agent_ = n.name();
    protocol::envelope merged;
    merged.confidence = 1.0;
    for (const auto* member : n.group) {
      const std::string name(member->name());
      if (const auto* e = state_.latest(name)) merge_member(merged, name, *e);
    }
    last_group_ = std::make_unique<protocol::envelope>(std::move(merged));
    return;
  }
}

asio::awaitable<void> workflow_run::take_preparation() {
  auto preparing = std::move(preparing_);
  begin_with(co_await std::move(preparing));
}

// The run's coroutine holds only what spans its waits: what it says at the
// start (begin_run) and about a step that threw (fail_step) is in plain
// functions, so their events and texts are not in its frame while a step
// runs (g++ keeps every local and temporary of a coroutine in its frame).
asio::awaitable<void> workflow_run::go() {
  if (preparing_.valid()) co_await take_preparation();
  // Cancellation is observed explicitly (cancelled_now) so the run can still
  // record and checkpoint its `cancelled` state instead of unwinding.
  co_await asio::this_coro::throw_if_cancelled(false);
  const auto first = begin_run();
  if (saves_now()) co_await save();
  if (!first) {  // asked again: nothing runs
    if (gave_up_) co_await give_up_stored_run();  // a frame only when needed
    co_return;
  }
  int node = *first;
  const bool leased = stored_ && !lost_;
  if (leased) hub_->leases->hold();
  while (state_.status == workflow_status::running) {
    if (co_await cancelled_now()) {
      stop(state_.next_node);
      if (saves_now()) co_await save();
      break;
    }
    std::exception_ptr failure;
    try {
      node = co_await step(node);
    } catch (...) {
      failure = std::current_exception();
    }
    if (failure) {
      if (co_await cancelled_now()) stop(state_.next_node);
      else fail_step(failure);
    }
    // Saved with the node that runs next, so a continued run never runs a
    // completed step again.
    if (state_.status == workflow_status::running && node != no_node) state_.next_node = w_.nodes[node].name();
    if (saves_now()) co_await save();
  }
  if (leased) hub_->leases->release();
  if (gave_up_) co_await give_up_stored_run();  // a frame only when needed
  if (hub_->own_store && !is_paused(state_.status)) co_await forget();
  if (hub_->options.retention) co_await prune_finished_runs();
}

// The run's start: its answer or decision applied, the event that says how
// it starts, and the node it goes on from (no_node once it failed);
// nullopt when a pause stands again and nothing runs.
std::optional<int> workflow_run::begin_run() {
  state_.status = workflow_status::running;
  // Counted before the first event and saved with the state, so that the
  // next process to continue the run numbers its stretch one higher.
  ++state_.starts;
  if (answer_) {
    state_.clarification_answers.push_back(std::move(*answer_));
    answer_.reset();
    state_.clarification.reset();
    emit(make_event(event_kind::resumed));
  } else if (decision_ && state_.approval) {
    // Said on the event (apply_decision forgets it): metrics count decisions.
    auto e = make_event(event_kind::resumed);
    e.condition = decision_->approve ? "approved" : "rejected";
    apply_decision();
    emit(e);
  } else if (continuing_ && state_.approval) {
    // Claimed to be decided, but the decision was never saved: the calls
    // still wait. Nothing runs; approval is asked again.
    state_.status = workflow_status::awaiting_approval;
    auto e = make_event(event_kind::approval_requested);
    e.node = state_.approval->node;
    e.question = "the pending tool calls still wait for a decision";
    emit(e);
    return std::nullopt;
  } else if (continuing_ && state_.clarification) {
    // Claimed to be answered, but the answer was never saved (the process
    // died in between): the question stands. Nothing runs; it is asked again.
    const auto& rerun = w_.nodes[std::max(w_.index_of(state_.clarification->node), 0)];
    auto question = std::move(state_.clarification->question);
    auto agent = std::move(state_.clarification->agent);
    state_.clarification.reset();
    pause(rerun, std::move(question), agent);
    return std::nullopt;
  } else if (continuing_) {
    emit(make_event(event_kind::resumed));
  } else {
    emit(make_event(event_kind::workflow_started));
  }
  const int node = w_.index_of(state_.next_node);
  if (node == no_node) {
    fail(make_record("workflow_mismatch",
                     "workflow '" + w_.definition.name + "' has no node '" + state_.next_node + "' to continue from",
                     false));
  }
  return node;
}

// A step that threw (not a cancellation): the run fails with what it said.
void workflow_run::fail_step(const std::exception_ptr& failure) {
  std::string what = "unknown exception";
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  fail(make_record("internal_error", "workflow '" + state_.id + "' at node '" + state_.next_node + "': " + what,
                   false));
}

// A step is a coroutine only around the node's run: what comes before and
// after is in plain functions, so the step's frame (alive while the node
// runs) holds no events or other locals of theirs. The node's kind is
// chosen here, not in a coroutine of its own: one frame less held while
// the node runs, and one less made per step.
asio::awaitable<int> workflow_run::step(int index) {
  const auto& n = w_.nodes[index];
  if (const auto next = begin_step(n)) co_return *next;
  step_outcome out;
  switch (n.kind()) {
    case node_kind::agent: co_await call_agent(n, *n.agent, no_instructions, out); break;
    case node_kind::parallel: co_await run_group(n, out); break;
    case node_kind::coordinator: co_await run_coordinator(n, out); break;
    case node_kind::synthesis: co_await run_synthesis(n, out); break;
    default: break;
  }
  if (!out.failed() && !out.cancelled && !out.paused() && n.kind() != node_kind::parallel) store(n, out);
  co_return end_step(n, out);
}

// Where the run goes without running `n` (end, fail, clarify, step limit),
// or nullopt once the step has started.
std::optional<int> workflow_run::begin_step(const compiled_node& n) {
  state_.next_node = n.name();
  switch (n.kind()) {
    case node_kind::end:
      complete();
      return no_node;
    case node_kind::fail:
      fail(make_record("failed_by_definition",
                       "workflow '" + w_.definition.name + "' reached fail node '" + n.name() + "'" +
                           (n.definition->message.empty() ? "" : ": " + n.definition->message),
                       false));
      return no_node;
    case node_kind::clarify: {
      const auto* e = last_envelope();
      const auto& rerun = w_.nodes[last_node_ == no_node ? w_.entry : last_node_];
      pause(rerun, e ? question_for(*e, last_agent_) : "Could you give more details?", last_agent_);
      return no_node;
    }
    default:
      break;
  }
  if (state_.step >= w_.definition.max_steps) {
    fail(make_record("step_limit", "workflow '" + w_.definition.name + "' stopped at node '" + n.name() +
                                       "' after " + std::to_string(state_.step) + " steps (max_steps " +
                                       std::to_string(w_.definition.max_steps) + ")",
                     false));
    return no_node;
  }
  ++state_.step;
  step_in_flight_ = true;
  auto started = make_event(event_kind::step_started);
  started.agent = n.agent ? n.agent->name() : std::string_view{};
  emit(started);
  return std::nullopt;
}

// Where the run goes after `n` ran.
int workflow_run::end_step(const compiled_node& n, step_outcome& out) {
  if (out.cancelled) {
    stop(n.name());
    return no_node;
  }
  if (out.details().approval) {
    pause_for_approval(n, out);
    return no_node;
  }
  if (out.details().question) {
    pause_for_answer(n, out);
    return no_node;
  }
  step_in_flight_ = false;
  close_step_tools(false);
  if (const auto& error = out.details().error) {
    if (n.on_error != no_node) {
      state_.errors.push_back(*error);  // handled, but still on record
      state_.audit.back().route = w_.nodes[n.on_error].name();
      state_.audit.back().condition = "on_error";
      auto e = make_event(event_kind::routed);
      e.target = w_.nodes[n.on_error].name();
      e.condition = "on_error";
      emit(e);
      return n.on_error;
    }
    fail(*error);
    return no_node;
  }
  const auto* e = last_envelope();
  if (n.clarify && e->confidence < n.threshold) {
    state_.audit.back().condition =
        "clarification: confidence " + format_confidence(e->confidence) + " < " + format_confidence(n.threshold);
    pause(n, question_for(*e, last_agent_), n.kind() == node_kind::parallel ? std::string_view{} : last_agent_);
    return no_node;
  }
  return route(n, *e);
}

void workflow_run::store(const compiled_node& n, step_outcome& out) {
  last_node_ = static_cast<int>(&n - w_.nodes.data());
  last_agent_ = out.agent;
  last_group_.reset();
  state_.add_output(out.agent, std::move(out.envelope));
}

const protocol::envelope* workflow_run::last_envelope() const {
  if (last_group_) return last_group_.get();
  return last_agent_.empty() ? nullptr : state_.latest(last_agent_);
}

// ---------------------------------------------------------------- routing and endings

int workflow_run::route(const compiled_node& n, const protocol::envelope& e) {
  for (const auto& r : n.routes) {
    if (!r.when->evaluate(e)) continue;
    const auto& target = w_.nodes[r.target].name();
    state_.audit.back().route = target;
    state_.audit.back().condition = r.text;
    auto routed = make_event(event_kind::routed);
    routed.node = n.name();
    routed.agent = last_agent_;
    routed.target = target;
    routed.condition = r.text;
    emit(routed);
    return r.target;
  }
  std::string tried;
  for (const auto& r : n.routes) tried += (tried.empty() ? "" : "; ") + r.text;
  fail(make_record("no_route",
                   "workflow '" + w_.definition.name + "' node '" + n.name() + "': no route matched the envelope of '" +
                       last_agent_ + "' (confidence " + format_confidence(e.confidence) + "); routes: " + tried,
                   false, last_agent_));
  return no_node;
}

void workflow_run::pause(const compiled_node& rerun, std::string question, std::string_view agent) {
  const int rounds = static_cast<int>(state_.clarification_answers.size());
  if (rounds >= w_.definition.max_clarification_rounds) {
    fail(make_record("clarification_limit",
                     "workflow '" + w_.definition.name + "' node '" + rerun.name() +
                         "' still needs clarification after " + std::to_string(rounds) +
                         " round(s) (max_clarification_rounds " +
                         std::to_string(w_.definition.max_clarification_rounds) + "): " + question,
                     false, agent));
    return;
  }
  state_.status = workflow_status::awaiting_clarification;
  state_.next_node = rerun.name();
  state_.clarification = clarification_request{std::move(question), rerun.name(), std::string(agent), rounds + 1};
  auto e = make_event(event_kind::paused);
  e.node = rerun.name();
  e.agent = agent;
  e.question = state_.clarification->question;
  emit(e);
}

void workflow_run::complete() {
  if (const auto* e = last_envelope()) state_.result = *e;
  state_.status = workflow_status::completed;
  emit(make_event(event_kind::workflow_completed));
}

void workflow_run::fail(protocol::error_record record) {
  close_step_tools(false);
  state_.approval.reset();
  state_.errors.push_back(std::move(record));
  state_.status = workflow_status::failed;
  auto e = make_event(event_kind::workflow_failed);
  e.error = &state_.errors.back();
  emit(e);
}

void workflow_run::cancel(std::string_view node) {
  close_step_tools(false);
  state_.approval.reset();
  state_.errors.push_back(
      make_record("cancelled", "workflow '" + state_.id + "' was cancelled at node '" + std::string(node) + "'",
                  false));
  state_.status = workflow_status::cancelled;
  auto e = make_event(event_kind::workflow_cancelled);
  e.node = node;
  emit(e);
}

// Gives up the step in flight (its outputs were never stored) and stops
// the run resumable: the interrupted step runs again when it continues.
void workflow_run::interrupt(std::string_view node) {
  if (step_in_flight_) {
    --state_.step;
    step_in_flight_ = false;
  }
  close_step_tools(true);  // the step runs again: what its tools did is replayed
  state_.status = workflow_status::interrupted;
  auto e = make_event(event_kind::workflow_interrupted);
  e.node = node;
  emit(e);
}

void workflow_run::stop(std::string_view node) {
  if (interrupt_ && interrupt_->load()) {
    interrupt(node);
  } else {
    cancel(node);
  }
}


// Every run allocates one workflow_run. Up to 1,000 bytes it is served from
// glibc's per-thread cache or, on a miss, its small bins; a larger request
// is a large-bin one, which searches the bins and consolidates the fast
// bins first (≈ 6,000 instructions per in-process run, bench/e2e/callgrind.sh).
#if defined(__GLIBCXX__) && !defined(_GLIBCXX_DEBUG)
static_assert(sizeof(workflow_run) <= 1000, "move what few runs use out of workflow_run (see its members)");
#endif

namespace {

// The run goes on `strand`; this frame (on the caller's executor) owns it
// and is the only one with a slot for the final state.
asio::awaitable<workflow_state> await_run(std::unique_ptr<workflow_run> run, asio::any_io_executor strand) {
  auto going = asio::co_spawn(strand, run->go(), asio::use_awaitable);
  co_await std::move(going);
  co_return run->take_state();
}

}  // namespace

asio::any_io_executor make_run_strand(const asio::any_io_executor& executor) {
  if (const auto* io = executor.target<asio::io_context::executor_type>()) return asio::make_strand(*io);
  return asio::make_strand(executor);
}

asio::awaitable<workflow_state> run_on_own_strand(std::shared_ptr<hub::impl> hub,
                                                  std::shared_ptr<const compiled_workflow> workflow,
                                                  prepared_run prepared) {
  // Not a coroutine: the run (with its state) is built once on the heap
  // instead of in a frame that would also keep these parameters' copies.
  auto strand = make_run_strand(hub->executor);
  return await_run(std::make_unique<workflow_run>(std::move(hub), std::move(workflow), std::move(prepared)),
                   std::move(strand));
}

// Prepares the run (a claim, for a resume) and runs it; the handle gets the
// final state, or the exception of a refused claim. The completion owns the
// run: no coroutine is kept only to hold it while it goes.
void spawn(std::shared_ptr<hub::impl> hub, std::shared_ptr<run_control> control,
           std::shared_ptr<const compiled_workflow> workflow, asio::awaitable<prepared_run> prepare) {
  auto slot = control->signal.slot();
  auto run =
      std::make_unique<workflow_run>(std::move(hub), std::move(workflow), &control->interrupt, std::move(prepare));
  auto going = run->go();
  asio::co_spawn(control->strand, std::move(going),
                 asio::bind_cancellation_slot(slot, [control, run = std::move(run)](std::exception_ptr error) {
                   if (error) control->finish(error, std::nullopt);
                   else control->finish(nullptr, run->take_state());
                 }));
}

}  // namespace switchboard::orchestrator::detail
