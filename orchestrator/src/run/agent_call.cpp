// Calling agents: one agent with its timeout, retries and envelope checks,
// and a parallel group of them.

#include "workflow_run.hpp"
#include "stream_relay.hpp"  // streaming: deltas to observers

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/agents/tool_journal.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace switchboard::orchestrator::detail {

namespace {

// The error record of an agent call that ended in `failure`; `n` is the
// node whose deadline passed, for a timeout.
protocol::error_record failure_record(std::exception_ptr failure, const std::string& agent,
                                      const compiled_node* n) {
  try {
    std::rethrow_exception(failure);
  } catch (const timeout_expired&) {
    return make_record("timeout", "agent '" + agent + "' did not answer within " +
                                      std::to_string(n->definition->timeout->count()) + " ms at node '" +
                                      n->name() + "'",
                       true);
  } catch (const models::model_error& e) {
    return make_record(models::to_string(e.errc()), "agent '" + agent + "': " + e.what(), e.retryable());
  } catch (const std::exception& e) {
    return make_record("agent_exception", "agent '" + agent + "' threw: " + e.what(), false);
  } catch (...) {
    return make_record("agent_exception", "agent '" + agent + "' threw something that is not an exception", false);
  }
}

// Waits `delay`; false when the wait was cancelled.
asio::awaitable<bool> wait_before_retry(std::chrono::milliseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return !ec;
}


}  // namespace

// ---------------------------------------------------------------- agent calls

std::optional<protocol::error_record> workflow_run::check_envelope(const agents::agent& a,
                                                                  const protocol::envelope& e) const {
  if (e.failed()) {
    auto record = *e.error;
    if (record.type.empty()) record.type = "agent_error";
    if (record.message.empty()) record.message = e.explanation;
    return record;
  }
  if (auto problem = unstorable(e)) {
    return make_record("invalid_envelope", "agent '" + std::string(a.name()) + "' returned an envelope that " +
                                               "cannot be stored: " + *problem,
                       false);
  }
  if (!hub_->options.validate_envelopes) return std::nullopt;
  try {
    auto errors = hub_->registry.validate(a, e);
    if (errors.empty()) return std::nullopt;
    return make_record("invalid_envelope", "agent '" + std::string(a.name()) +
                                               "' returned an envelope its output schema '" + a.output_schema() +
                                               "' refuses: " + protocol::to_string(errors),
                       false);
  } catch (const std::exception& err) {
    return make_record("invalid_envelope", err.what(), false);
  }
}

std::shared_ptr<detached_call> workflow_run::start_call(agents::agent& a, const std::string& instructions,
                                                       const asio::any_io_executor& strand) {
  if (!call_inputs_ || call_inputs_->answers.size() != state_.clarification_answers.size()) {
    call_inputs_ = std::make_shared<const run_inputs>(run_inputs{state_.input, state_.clarification_answers});
  }
  if (!call_outputs_ || !call_outputs_->matches(state_)) {
    call_outputs_ = output_snapshot::of(state_, call_outputs_.get());
  }
  auto call = std::make_shared<detached_call>(
      call_setup{call_inputs_, call_outputs_, hub_->models, hub_->logger, instructions});
  prepare_context(call->context(), a, strand);
  call->start(a, hub_->agent_executor(a, strand));
  return call;
}

void workflow_run::prepare_context(agents::agent_context& context, const agents::agent& a,
                                   const asio::any_io_executor& run_strand) {
  context.workflow_id = state_.id;
  context.traces = hub_->traces;
  give_tools(context, a);
  // Deltas to the observers that want them, on the run's strand.
  context.stream = make_stream_relay(
      hub_->observers, run_strand,
      {state_.id, state_.workflow_name, state_.step, state_.next_node, std::string(a.name())});
}

// What the agent noted for the audit log, once its run() is over: tokens
// always (they were spent), the prompt version and the model's text only
// with an answer in time.
void workflow_run::record_call(const agents::agent& a, agents::agent_context& context, step_outcome& out,
                               bool answered) {
  out.tokens += context.usage;
  // Calls made are on record whatever became of the answer.
  for (auto& call : context.tool_calls) {
    if (auto* record = call.if_object()) (*record)["agent"] = a.name();
    out.more().tool_calls.push_back(std::move(call));
  }
  context.tool_calls.clear();
  if (!answered) return;
  // Written only when there is something: a native agent's step makes no details.
  if (!context.model_attempts.empty()) out.more().model_attempts = std::move(context.model_attempts);
  auto version = context.used_prompt_version.empty() ? a.prompt_version() : context.used_prompt_version;
  if (!version.empty()) out.more().prompt_version = std::move(version);
  if (!context.raw_text.empty()) out.more().raw_text = std::move(context.raw_text);
}

namespace {

// An earlier attempt's answer on record is not this one's, and its tool
// calls come back replayed from the journal.
void forget_earlier_attempt(step_outcome& out) {
  if (!out.has_details()) return;
  auto& d = out.more();
  d.raw_text.clear();
  d.model_attempts.clear();
  d.tool_calls.clear();
  d.prompt_version.clear();
}

}  // namespace

// How an attempt ended: the pause it asked for (an exception that is no
// failure), what the agent noted (`finished`: its context, once its call is
// over), and the failure's record when it failed. A plain function, so the
// exceptions are sorted out of the coroutines that await the call.
std::optional<protocol::error_record> workflow_run::end_attempt(const compiled_node* deadline_of,
                                                                const agents::agent& a,
                                                                agents::agent_context* finished, step_outcome& out,
                                                                std::exception_ptr failure) {
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const agents::approval_required& pending) {
      out.more().approval = pending.calls();
      failure = nullptr;
    } catch (const agents::clarification_required& asked) {
      out.more().question = asked.question();
      failure = nullptr;
    } catch (...) {
    }
  }
  if (finished) record_call(a, *finished, out, !failure);
  if (!failure) return std::nullopt;
  return failure_record(failure, out.agent, deadline_of);
}

// An inline call's context: pointing into the state, at no cost beyond the
// call (nothing to give up: cancelling the run waits for run() to return).
agents::agent_context workflow_run::inline_context(const agents::agent& a, const std::string& instructions,
                                                   const asio::any_io_executor& run_strand) {
  agents::agent_context context{state_.input, state_, instructions, answers(), hub_->options.models,
                                hub_->logger, {}, {}, {}, {}};
  prepare_context(context, a, run_strand);
  return context;
}

// A node with a deadline, or an agent for the blocking pool: the agent runs
// detached and the run stops waiting at the deadline or when cancelled,
// whatever the agent does (detached_call.hpp).
asio::awaitable<void> workflow_run::call_detached(const compiled_node& n, agents::agent& a,
                                                  const std::string& instructions, step_outcome& out,
                                                  std::optional<protocol::error_record>& error) {
  std::optional<clock::time_point> deadline;
  if (n.definition->timeout) deadline = clock::now() + *n.definition->timeout;
  const auto strand = co_await asio::this_coro::executor;
  const auto call = start_call(a, instructions, strand);
  std::exception_ptr failure;
  try {
    co_await call->wait(deadline);
    call->take_answer(out.envelope);
  } catch (...) {
    failure = std::current_exception();
  }
  // A call still running may be writing its context: read only once finished.
  error = end_attempt(&n, a, call->finished() ? &call->context() : nullptr, out, failure);
}

asio::awaitable<void> workflow_run::call_agent(const compiled_node& n, agents::agent& a,
                                               const std::string& instructions, step_outcome& out) {
  out.agent = a.name();
  const auto started = clock::now();
  const auto& policy = n.definition->retry;
  auto backoff = policy.backoff;
  for (int attempt = 1;; ++attempt) {
    out.attempts = attempt;
    std::optional<protocol::error_record> error;
    forget_earlier_attempt(out);
    if (n.definition->timeout || a.blocks_thread()) {
      co_await call_detached(n, a, instructions, out, error);
    } else {
      // A node without a deadline, an agent that does not block (the usual
      // case): it runs inside this coroutine, not one of its own, which
      // would be one more frame made per call and held while the agent works.
      const auto run_strand = co_await asio::this_coro::executor;  // g++ 12: named before co_await
      auto context = inline_context(a, instructions, run_strand);
      std::exception_ptr failure;
      try {
        out.envelope = co_await a.run(context);
      } catch (...) {
        failure = std::current_exception();
      }
      error = end_attempt(nullptr, a, &context, out, failure);
    }
    if (out.paused()) break;  // not a failure: the step pauses, nothing is retried
    if (!error) error = check_envelope(a, out.envelope);
    if (!error) break;
    if (out.has_details()) out.more().prompt_version.clear();  // recorded for answers only
    if (co_await cancelled_now()) {
      out.cancelled = true;
      break;
    }
    error->agent = out.agent;
    if (!error->retryable || attempt >= policy.max_attempts) {
      out.more().error = std::move(error);
      break;
    }
    hub_->logger->warn("[{}] agent '{}' attempt {}/{} failed ({}), retrying: {}", state_.id, out.agent,
                       attempt, policy.max_attempts, error->type, error->message);
    if (backoff.count() > 0) {
      if (!co_await wait_before_retry(backoff)) {
        out.cancelled = true;
        break;
      }
      backoff = std::chrono::milliseconds(
          static_cast<std::int64_t>(static_cast<double>(backoff.count()) * policy.backoff_multiplier));
    }
  }
  out.duration = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started);
  if (!out.cancelled && !out.paused()) finish_call(n, out);
}

// Audit entry and event for one agent call (or synthesis). The entry is
// made in place: moving a whole audit_entry in costs more than filling it.
void workflow_run::finish_call(const compiled_node& n, step_outcome& out) {
  auto& entry = state_.audit.emplace_back();
  entry.step = state_.step;
  entry.node = n.name();
  entry.agent = out.agent;
  const auto& d = out.details();
  entry.prompt_version = d.prompt_version;
  entry.duration = out.duration;
  entry.tokens = out.tokens;
  entry.attempts = out.attempts;
  entry.note = d.note;
  entry.keep_raw_text(d.raw_text);
  if (out.has_details()) entry.model_attempts = std::move(out.more().model_attempts);
  entry.tool_calls = d.tool_calls;
  if (d.error) {
    entry.explanation = d.error->message;
    entry.condition = "failed: " + d.error->type;
  } else {
    entry.confidence = out.envelope.confidence;
    entry.explanation = out.envelope.explanation;
  }

  report_tool_calls(out);
  auto e = make_event(d.error ? event_kind::step_failed : event_kind::step_completed);
  e.node = n.name();
  e.agent = out.agent;
  e.envelope = d.error ? nullptr : &out.envelope;
  e.error = d.error ? &*d.error : nullptr;
  e.prompt_version = d.prompt_version;
  e.duration = out.duration;
  e.tokens = out.tokens;
  e.attempts = out.attempts;
  emit(e);
}

// ---------------------------------------------------------------- parallel groups

asio::awaitable<void> workflow_run::group_member(const compiled_node& n, std::size_t i,
                                                 std::vector<step_outcome>& results) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await call_agent(n, *n.group[i], no_instructions, results[i]);
  if (n.definition->cancel_rest_on_failure && results[i].failed()) throw group_member_failed{};
}

asio::awaitable<void> workflow_run::run_group(const compiled_node& n, step_outcome& group) {
  std::vector<step_outcome> results(n.group.size());
  auto executor = co_await asio::this_coro::executor;
  using member_op = decltype(asio::co_spawn(executor, std::declval<asio::awaitable<void>>(), asio::deferred));
  std::vector<member_op> ops;
  ops.reserve(n.group.size());
  for (std::size_t i = 0; i < n.group.size(); ++i) {
    ops.push_back(asio::co_spawn(executor, group_member(n, i, results), asio::deferred));
  }
  const auto started = clock::now();
  auto [order, exceptions] = co_await asio::experimental::make_parallel_group(std::move(ops))
                                 .async_wait(asio::experimental::wait_for_one_error(), asio::use_awaitable);
  (void)order;
  for (const auto& ex : exceptions) {
    if (!ex) continue;
    try {
      std::rethrow_exception(ex);
    } catch (const group_member_failed&) {
    }  // anything else is a bug in the hub: let it propagate
  }

  group.agent = n.name();
  group.duration = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started);
  if (co_await cancelled_now()) {
    group.cancelled = true;
    co_return;
  }
  // A member's tool calls wait for approval: the whole step pauses, and
  // runs again (its members' recorded calls replayed) once decided.
  for (auto& r : results) {
    if (!r.details().approval) continue;
    auto& approval = group.more().approval;
    if (!approval) approval.emplace();
    for (auto& call : *r.more().approval) approval->push_back(std::move(call));
  }
  if (group.details().approval) co_return;
  // A member asks the user: the whole step pauses on its question, and runs
  // again with the answer. One answer cannot be told apart between two
  // askers, so two members asking at once fail the step, naming both.
  std::vector<const step_outcome*> asking;
  for (const auto& r : results)
    if (r.details().question) asking.push_back(&r);
  if (asking.size() == 1) {
    group.more().question = asking.front()->details().question;
    group.more().question_agent = asking.front()->agent;
    co_return;
  }
  if (asking.size() > 1) {
    std::string names;
    for (const auto* r : asking) names += (names.empty() ? "'" : ", '") + r->agent + "'";
    for (auto& r : results)
      if (r.details().question)
        r.more().error = make_record("several_questions",
                                     "agents " + names + " of group '" + n.name() +
                                         "' asked the user at once; a step pauses for one question: "
                                         "run them in nodes of their own",
                                     false, r.agent);
  }
  const step_outcome* first_failure = nullptr;
  for (auto& r : results) {
    group.tokens += r.tokens;
    group.attempts = std::max(group.attempts, r.attempts);
    if (r.has_details())
      for (auto& call : r.more().tool_calls) group.more().tool_calls.push_back(std::move(call));
    if (r.failed() && !first_failure) first_failure = &r;
  }
  // Store what succeeded, each under its own name; record what was cut short.
  protocol::envelope merged;
  merged.confidence = 1.0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto& r = results[i];
    std::string name(n.group[i]->name());
    if (r.cancelled) {
      state_.errors.push_back(make_record("cancelled", "agent '" + name + "' in parallel group '" + n.name() +
                                                          "' was cancelled because agent '" +
                                                          (first_failure ? first_failure->agent : "?") + "' failed",
                                          false, name));
      continue;
    }
    if (r.failed()) continue;
    merge_member(merged, name, r.envelope);
    state_.add_output(name, std::move(r.envelope));
  }
  last_node_ = static_cast<int>(&n - w_.nodes.data());
  last_agent_ = n.name();

  audit_entry entry;
  entry.step = state_.step;
  entry.node = n.name();
  entry.duration = group.duration;
  entry.tokens = group.tokens;
  entry.attempts = group.attempts;
  if (first_failure) {
    auto& error = group.more().error;
    error = *first_failure->details().error;
    error->message = "parallel group '" + n.name() + "': " + error->message;
    entry.explanation = error->message;
    entry.condition = "failed: " + error->type;
    last_group_.reset();
  } else {
    entry.confidence = merged.confidence;
    entry.explanation = merged.explanation;
    last_group_ = std::make_unique<protocol::envelope>(std::move(merged));
  }
  entry.tool_calls = group.details().tool_calls;
  state_.audit.push_back(std::move(entry));
  report_tool_calls(group);
}

}  // namespace switchboard::orchestrator::detail
