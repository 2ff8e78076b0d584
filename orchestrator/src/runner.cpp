// The coroutine that runs one workflow on its strand: calls agents, checks
// their envelopes, routes, pauses for clarification, checkpoints.

// g++ 12 reports Asio's own awaitable frame allocator/deallocator pair as
// mismatched (a known false positive, GCC bug 109224); nothing here allocates
// frames by hand.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
#include "detail/runner.hpp"

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/model/model_error.hpp>
#include <switchboard/agents/model/structured.hpp>
#include <switchboard/orchestrator/error.hpp>
#include <switchboard/protocol/coordination.hpp>
#include <switchboard/protocol/limits.hpp>

#include "detail/compiled.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace switchboard::orchestrator::detail {

namespace asio = boost::asio;
namespace json = boost::json;
using clock = std::chrono::steady_clock;

namespace {

struct timeout_expired {};
struct group_member_failed {};

struct step_outcome {
  std::string agent;                     // who answered
  protocol::envelope envelope;           // valid unless error or cancelled
  std::optional<protocol::error_record> error;
  bool cancelled = false;
  int attempts = 0;
  agents::token_usage tokens;
  std::string prompt_version;
  std::string note;
  std::chrono::microseconds duration{0};
};

struct choice {
  agents::agent* agent = nullptr;
  std::string instructions;
  std::string note;
  agents::token_usage tokens;
  std::optional<protocol::error_record> failure;
};

protocol::error_record make_record(std::string_view type, std::string message, bool retryable,
                                   std::string_view agent = {}) {
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

asio::awaitable<void> run_with_timeout(agents::agent& a, agents::agent_context& context,
                                       std::chrono::milliseconds limit, protocol::envelope& answer) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, limit);
  auto result = co_await (a.run(context) || timer.async_wait(asio::use_awaitable));
  if (result.index() == 1) throw timeout_expired{};
  answer = std::move(std::get<0>(result));
}

// One call of the agent into `answer` (throws timeout_expired past `limit`).
// A coroutine of its own so that the caller's frame, alive across retries,
// keeps no slots for the envelope a call returns.
asio::awaitable<void> run_agent(agents::agent& a, agents::agent_context& context,
                                std::optional<std::chrono::milliseconds> limit, protocol::envelope& answer) {
  if (limit) {
    co_await run_with_timeout(a, context, *limit, answer);
  } else {
    answer = co_await a.run(context);
  }
}

// Waits `delay`; false when the wait was cancelled.
asio::awaitable<bool> wait_before_retry(std::chrono::milliseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return !ec;
}

class workflow_run {
 public:
  workflow_run(std::shared_ptr<hub::impl> hub, std::shared_ptr<const compiled_workflow> workflow,
               prepared_run prepared, const std::atomic<bool>* interrupt = nullptr)
      : hub_(std::move(hub)),
        workflow_(std::move(workflow)),
        w_(workflow_->internals()),
        state_(std::move(prepared.state)),
        answer_(std::move(prepared.answer)),
        continuing_(prepared.continuing),
        stored_(prepared.stored.has_value()),
        marks_(prepared.stored.value_or(journal_marks{})),
        fence_(prepared.fence),
        interrupt_(interrupt) {
    if (stored_) restore_last_step();
  }

  // Runs until the workflow stops; the final state stays here for
  // take_state(). No parameters: an argument built inside
  // `co_await run.go(...)` is a temporary of the co_await expression, which
  // g++ 12 may destroy twice. No result either: an awaitable's frame keeps a
  // slot for its result (a workflow_state is ~570 bytes) for its whole life.
  asio::awaitable<void> go();
  workflow_state take_state() { return std::move(state_); }

 private:
  // The node coroutines write their outcome into `out` rather than return it:
  // a returned step_outcome is a temporary that g++ keeps in the awaiting
  // frame once per co_await, and frames are most of the memory a workflow in
  // flight holds.
  asio::awaitable<int> step(int index);
  std::optional<int> begin_step(const compiled_node& n);
  int end_step(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> run_node(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> call_agent(const compiled_node& n, agents::agent& a, const std::string& instructions,
                                   step_outcome& out);
  asio::awaitable<void> run_group(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> group_member(const compiled_node& n, std::size_t i, std::vector<step_outcome>& results);
  asio::awaitable<void> run_coordinator(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> choose(const compiled_node& n, choice& result);
  asio::awaitable<void> run_synthesis(const compiled_node& n, step_outcome& out);
  asio::awaitable<void> synthesize_by_model(const compiled_node& n, step_outcome& out);
  step_outcome synthesize_deterministically(const compiled_node& n);

  std::optional<protocol::error_record> check_envelope(const agents::agent& a, const protocol::envelope& e) const;
  void finish_call(const compiled_node& n, step_outcome& out);
  void store(const compiled_node& n, step_outcome& out);
  int route(const compiled_node& n, const protocol::envelope& e);
  void pause(const compiled_node& rerun, std::string question, std::string_view agent);
  void complete();
  void fail(protocol::error_record record);
  void restore_last_step();
  void cancel(std::string_view node);
  void interrupt(std::string_view node);
  void stop(std::string_view node);  // cancel or interrupt, as asked
  asio::awaitable<void> save();
  void refused_save(const claim_error& e);
  asio::awaitable<void> prune_finished_runs();
  std::vector<std::string> node_names() const;
  void emit(const event& e);
  void log(const event& e) const;
  event make_event(event_kind kind) const;
  const protocol::envelope* last_envelope() const;
  std::span<const std::string> answers() const { return state_.clarification_answers; }

  std::shared_ptr<hub::impl> hub_;
  std::shared_ptr<const compiled_workflow> workflow_;
  const compiled_workflow::impl& w_;
  workflow_state state_;
  int last_node_ = no_node;                  // the node of the last agent step
  std::string last_agent_;                   // whose envelope that step produced
  std::optional<protocol::envelope> last_group_;  // a group's merged envelope
  std::optional<std::string> answer_;             // the clarification answer a resume continues with
  bool continuing_ = false;                       // an interrupted run continues
  bool stored_ = false;                           // the run exists in the store (created or claimed)
  bool lost_ = false;                             // a save was refused: the run is no longer ours
  bool step_in_flight_ = false;                   // begin_step started a step that did not end
  journal_marks marks_;                           // how much of state_ the store has
  definition_identity identity_;                  // built at the first save
  std::int64_t fence_ = 0;
  const std::atomic<bool>* interrupt_;            // set: a cancellation is an interruption
};

// Passed instead of `{}`: a temporary std::string inside a co_await
// expression is destroyed twice by g++ 12.
const std::string no_instructions;

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
    last_group_ = std::move(merged);
    return;
  }
}

asio::awaitable<void> workflow_run::go() {
  // Cancellation is observed explicitly (cancelled_now) so the run can still
  // record and checkpoint its `cancelled` state instead of unwinding.
  co_await asio::this_coro::throw_if_cancelled(false);
  state_.status = workflow_status::running;
  if (answer_) {
    state_.clarification_answers.push_back(std::move(*answer_));
    answer_.reset();
    state_.clarification.reset();
    emit(make_event(event_kind::resumed));
  } else if (continuing_ && state_.clarification) {
    // Claimed to be answered, but the answer was never saved (the process
    // died in between): the question stands. Nothing runs; it is asked again.
    const auto& rerun = w_.nodes[std::max(w_.index_of(state_.clarification->node), 0)];
    auto question = std::move(state_.clarification->question);
    auto agent = std::move(state_.clarification->agent);
    state_.clarification.reset();
    pause(rerun, std::move(question), agent);
    co_await save();
    co_return;
  } else if (continuing_) {
    emit(make_event(event_kind::resumed));
  } else {
    emit(make_event(event_kind::workflow_started));
  }
  int node = w_.index_of(state_.next_node);
  if (node == no_node) {
    fail(make_record("workflow_mismatch",
                     "workflow '" + w_.definition.name + "' has no node '" + state_.next_node + "' to continue from",
                     false));
  }
  co_await save();
  const bool leased = hub_->options.store && stored_ && !lost_;
  if (leased) hold_lease(hub_);
  while (state_.status == workflow_status::running) {
    if (co_await cancelled_now()) {
      stop(state_.next_node);
      co_await save();
      break;
    }
    std::exception_ptr failure;
    try {
      node = co_await step(node);
    } catch (...) {
      failure = std::current_exception();
    }
    if (failure) {
      if (co_await cancelled_now()) {
        stop(state_.next_node);
      } else {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(failure);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        fail(make_record("internal_error", "workflow '" + state_.id + "' at node '" + state_.next_node +
                                               "': " + what, false));
      }
    }
    // Saved with the node that runs next, so a continued run never runs a
    // completed step again.
    if (state_.status == workflow_status::running && node != no_node) state_.next_node = w_.nodes[node].name();
    co_await save();
  }
  if (leased) release_lease(hub_);
  hub_->remember_paused(state_);
  if (hub_->options.retention) co_await prune_finished_runs();
}

// A step is a coroutine only around the node's run: what comes before and
// after is in plain functions, so the step's frame (alive while the node
// runs) holds no events or other locals of theirs.
asio::awaitable<int> workflow_run::step(int index) {
  const auto& n = w_.nodes[index];
  if (const auto next = begin_step(n)) co_return *next;
  step_outcome out;
  co_await run_node(n, out);
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
  step_in_flight_ = false;
  if (out.error) {
    if (n.on_error != no_node) {
      state_.errors.push_back(*out.error);  // handled, but still on record
      state_.audit.back().route = w_.nodes[n.on_error].name();
      state_.audit.back().condition = "on_error";
      auto e = make_event(event_kind::routed);
      e.target = w_.nodes[n.on_error].name();
      e.condition = "on_error";
      emit(e);
      return n.on_error;
    }
    fail(*out.error);
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

asio::awaitable<void> workflow_run::run_node(const compiled_node& n, step_outcome& out) {
  switch (n.kind()) {
    case node_kind::agent: co_await call_agent(n, *n.agent, no_instructions, out); break;
    case node_kind::parallel: co_await run_group(n, out); break;
    case node_kind::coordinator: co_await run_coordinator(n, out); break;
    case node_kind::synthesis: co_await run_synthesis(n, out); break;
    default: break;
  }
  if (!out.error && !out.cancelled && n.kind() != node_kind::parallel) store(n, out);
}

void workflow_run::store(const compiled_node& n, step_outcome& out) {
  last_node_ = static_cast<int>(&n - w_.nodes.data());
  last_agent_ = out.agent;
  last_group_.reset();
  state_.add_output(out.agent, std::move(out.envelope));
}

const protocol::envelope* workflow_run::last_envelope() const {
  if (last_group_) return &*last_group_;
  return last_agent_.empty() ? nullptr : state_.latest(last_agent_);
}

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

asio::awaitable<void> workflow_run::call_agent(const compiled_node& n, agents::agent& a,
                                               const std::string& instructions, step_outcome& out) {
  out.agent = a.name();
  const auto started = clock::now();
  const auto& policy = n.definition->retry;
  auto backoff = policy.backoff;
  for (int attempt = 1;; ++attempt) {
    out.attempts = attempt;
    agents::agent_context context{state_.input, state_, instructions, answers(), hub_->options.models,
                                  hub_->logger, {}, {}, {}, {}};
    std::optional<protocol::error_record> error;
    try {
      co_await run_agent(a, context, n.definition->timeout, out.envelope);
      error = check_envelope(a, out.envelope);
    } catch (const timeout_expired&) {
      error = make_record("timeout", "agent '" + out.agent + "' did not answer within " +
                                         std::to_string(n.definition->timeout->count()) + " ms at node '" +
                                         n.name() + "'",
                          true);
    } catch (const agents::model_error& e) {
      error = make_record(agents::to_string(e.errc()), "agent '" + out.agent + "': " + e.what(), e.retryable());
    } catch (const std::exception& e) {
      error = make_record("agent_exception", "agent '" + out.agent + "' threw: " + e.what(), false);
    }
    out.tokens += context.usage;
    if (!error) {
      out.prompt_version = context.used_prompt_version.empty() ? a.prompt_version() : context.used_prompt_version;
      break;
    }
    if (co_await cancelled_now()) {
      out.cancelled = true;
      break;
    }
    error->agent = out.agent;
    if (!error->retryable || attempt >= policy.max_attempts) {
      out.error = std::move(error);
      break;
    }
    hub_->logger->warn("[{}] agent '{}' attempt {}/{} failed ({}), retrying: {}", state_.id, out.agent, attempt,
                       policy.max_attempts, error->type, error->message);
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
  if (!out.cancelled) finish_call(n, out);
}

// Audit entry and event for one agent call (or synthesis).
void workflow_run::finish_call(const compiled_node& n, step_outcome& out) {
  audit_entry entry;
  entry.step = state_.step;
  entry.node = n.name();
  entry.agent = out.agent;
  entry.prompt_version = out.prompt_version;
  entry.duration = out.duration;
  entry.tokens = out.tokens;
  entry.attempts = out.attempts;
  entry.note = out.note;
  if (out.error) {
    entry.explanation = out.error->message;
    entry.condition = "failed: " + out.error->type;
  } else {
    entry.confidence = out.envelope.confidence;
    entry.explanation = out.envelope.explanation;
  }
  state_.audit.push_back(std::move(entry));

  auto e = make_event(out.error ? event_kind::step_failed : event_kind::step_completed);
  e.node = n.name();
  e.agent = out.agent;
  e.envelope = out.error ? nullptr : &out.envelope;
  e.error = out.error ? &*out.error : nullptr;
  e.prompt_version = out.prompt_version;
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
  if (n.definition->cancel_rest_on_failure && results[i].error) throw group_member_failed{};
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
  const step_outcome* first_failure = nullptr;
  for (auto& r : results) {
    group.tokens += r.tokens;
    group.attempts = std::max(group.attempts, r.attempts);
    if (r.error && !first_failure) first_failure = &r;
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
    if (r.error) continue;
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
    group.error = *first_failure->error;
    group.error->message = "parallel group '" + n.name() + "': " + group.error->message;
    entry.explanation = group.error->message;
    entry.condition = "failed: " + group.error->type;
    last_group_.reset();
  } else {
    entry.confidence = merged.confidence;
    entry.explanation = merged.explanation;
    last_group_ = std::move(merged);
  }
  state_.audit.push_back(std::move(entry));
}

// ---------------------------------------------------------------- coordinator

std::string coordination_prompt_system(const compiled_node& n) {
  std::string text =
      "You coordinate a multi-agent workflow. Choose the one agent best suited to handle the next step and "
      "give it any additional instructions it needs. Answer with a JSON object "
      "{\"agent_name\": \"...\", \"additional_instructions\": \"...\"}.\n\nAgents:\n";
  for (const auto* a : n.group) {
    text += "- ";
    text += a->name();
    text += ": ";
    text += a->description();
    text += '\n';
  }
  if (!n.definition->coordinator.instructions.empty()) text += "\n" + n.definition->coordinator.instructions + "\n";
  return text;
}

std::string outputs_summary(const workflow_state& state, bool with_data) {
  std::string text = "Input:\n" + json::serialize(state.input) + "\n";
  if (!state.outputs.empty()) text += "\nOutputs so far:\n";
  for (const auto& h : state.outputs) {
    const auto& e = h.runs.back();
    text += "- " + h.agent + " (confidence " + format_confidence(e.confidence) + "): " + e.explanation + "\n";
    if (with_data) text += "  data: " + json::serialize(e.data) + "\n";
  }
  if (!state.clarification_answers.empty()) text += "\nClarifications from the user:\n";
  for (const auto& answer : state.clarification_answers) text += "- " + answer + "\n";
  return text;
}

asio::awaitable<void> workflow_run::choose(const compiled_node& n, choice& result) {
  const auto& options = n.definition->coordinator;
  auto candidate = [&](std::string_view name) -> agents::agent* {
    auto it = std::find(n.candidate_names.begin(), n.candidate_names.end(), name);
    return it == n.candidate_names.end() ? nullptr : n.group[it - n.candidate_names.begin()];
  };
  std::string failure;
  if (options.router) {
    try {
      auto request = options.router(state_.input, state_);
      if (auto* a = candidate(request.agent_name)) {
        result.agent = a;
        result.instructions = std::move(request.additional_instructions);
        result.note = "router chose '" + request.agent_name + "'";
        co_return;
      }
      failure = "router chose '" + request.agent_name + "', which is not a candidate";
    } catch (const std::exception& e) {
      failure = std::string("router threw: ") + e.what();
    }
  } else if (auto* model = hub_->options.models.find(options.model_role)) {
    std::exception_ptr thrown;
    try {
      agents::chat_request request;
      request.messages.push_back({agents::chat_role::system, coordination_prompt_system(n)});
      request.messages.push_back({agents::chat_role::user, outputs_summary(state_, false)});
      request.prompt_version = "coordinator@1";
      agents::structured_options so;
      so.schema = *n.model_schema;
      so.schema_name = "coordination_request";
      auto answer = co_await agents::complete_structured(*model, std::move(request), std::move(so));
      result.tokens = answer.usage;
      auto parsed = protocol::read_coordination_request(answer.value, n.candidate_names);
      if (parsed.request) {
        result.agent = candidate(parsed.request->agent_name);
        result.instructions = std::move(parsed.request->additional_instructions);
        result.note = "coordinator chose '" + parsed.request->agent_name + "'";
        co_return;
      }
      failure = "the model's choice was refused: " + protocol::to_string(parsed.errors);
    } catch (const agents::structured_output_error& e) {
      result.tokens = e.usage();
      failure = e.what();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (co_await cancelled_now()) throw boost::system::system_error(asio::error::operation_aborted);
  } else {
    failure = "no model for role '" + options.model_role + "' (nor 'default') is configured";
  }
  result.agent = n.default_agent;
  result.note = "default agent '" + options.default_agent + "' used: " + failure;
  result.failure = make_record("coordinator_failed",
                               "coordinator node '" + n.name() + "': " + failure + "; using default agent '" +
                                   options.default_agent + "'",
                               false, n.name());
}

asio::awaitable<void> workflow_run::run_coordinator(const compiled_node& n, step_outcome& out) {
  choice chosen;
  co_await choose(n, chosen);
  if (chosen.failure) {
    hub_->logger->warn("[{}] {}", state_.id, chosen.failure->message);
    state_.errors.push_back(*chosen.failure);
    auto failed = make_event(event_kind::step_failed);
    failed.node = n.name();
    failed.agent = n.name();
    failed.error = &state_.errors.back();
    emit(failed);
  }
  co_await call_agent(n, *chosen.agent, chosen.instructions, out);
  out.tokens += chosen.tokens;
  if (!state_.audit.empty()) {
    state_.audit.back().note = chosen.note;
    state_.audit.back().tokens += chosen.tokens;
  }
  out.note = std::move(chosen.note);
}

// ---------------------------------------------------------------- synthesis

step_outcome workflow_run::synthesize_deterministically(const compiled_node& n) {
  step_outcome out;
  out.agent = n.name();
  out.attempts = 1;
  json::object outputs;
  std::string answer;
  double confidence = state_.outputs.empty() ? 0.0 : 1.0;
  for (const auto& h : state_.outputs) {
    const auto& e = h.runs.back();
    outputs[h.agent] = e.data;
    confidence = std::min(confidence, e.confidence);
    answer += (answer.empty() ? "" : " ") + e.explanation;
  }
  out.envelope.data["answer"] = answer;
  out.envelope.data["outputs"] = std::move(outputs);
  out.envelope.confidence = confidence;
  out.envelope.explanation = answer.empty() ? "No agent produced output." : answer;
  out.envelope.reasoning = "Combined the latest output of " + std::to_string(state_.outputs.size()) +
                           " agent(s); confidence is the lowest of theirs.";
  out.note = "deterministic synthesis";
  return out;
}

asio::awaitable<void> workflow_run::synthesize_by_model(const compiled_node& n, step_outcome& out) {
  out.agent = n.name();
  out.attempts = 1;
  out.prompt_version = "synthesis@1";
  auto* model = hub_->options.models.find(n.definition->synthesis.model_role);
  if (!model) {
    out.error = make_record("not_configured",
                            "synthesis node '" + n.name() + "': no model for role '" +
                                n.definition->synthesis.model_role + "' (nor 'default') is configured",
                            false, n.name());
    co_return;
  }
  try {
    agents::chat_request request;
    request.messages.push_back(
        {agents::chat_role::system,
         "Write the final answer for the user from the outputs of the agents below. Answer with a JSON object "
         "{\"answer\": \"...\", \"explanation\": \"one or two sentences\", \"confidence\": 0.0-1.0}."});
    request.messages.push_back({agents::chat_role::user, outputs_summary(state_, true)});
    request.prompt_version = out.prompt_version;
    agents::structured_options so;
    so.schema = *n.model_schema;
    so.schema_name = "synthesis_answer";
    auto answer = co_await agents::complete_structured(*model, std::move(request), std::move(so));
    out.tokens = answer.usage;
    const auto& value = answer.value.as_object();
    out.envelope.data["answer"] = value.at("answer");
    out.envelope.explanation = std::string(value.at("explanation").as_string());
    out.envelope.confidence = value.at("confidence").to_number<double>();
    out.envelope.reasoning = "Synthesized by the model from " + std::to_string(state_.outputs.size()) + " output(s).";
    if (auto problem = unstorable(out.envelope)) {
      out.error = make_record("invalid_envelope", "synthesis node '" + n.name() + "': the model's answer " +
                                                      "cannot be stored: " + *problem,
                              false, n.name());
    }
  } catch (const agents::model_error& e) {
    out.error = make_record(agents::to_string(e.errc()), "synthesis node '" + n.name() + "': " + e.what(),
                            e.retryable(), n.name());
  } catch (const std::exception& e) {
    out.error = make_record("agent_exception", "synthesis node '" + n.name() + "': " + e.what(), false, n.name());
  }
  if (out.error) out.cancelled = co_await cancelled_now();
}

asio::awaitable<void> workflow_run::run_synthesis(const compiled_node& n, step_outcome& out) {
  if (n.agent) {
    co_await call_agent(n, *n.agent, no_instructions, out);
    co_return;
  }
  const auto started = clock::now();
  if (n.model_schema) {
    co_await synthesize_by_model(n, out);
  } else {
    out = synthesize_deterministically(n);
  }
  out.duration = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started);
  if (!out.cancelled) finish_call(n, out);
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
  state_.errors.push_back(std::move(record));
  state_.status = workflow_status::failed;
  auto e = make_event(event_kind::workflow_failed);
  e.error = &state_.errors.back();
  emit(e);
}

void workflow_run::cancel(std::string_view node) {
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

// Writes the head and what changed since the last save. The first save of
// a new run creates it in the store; every later one carries the fence the
// run was given. Marks advance only when the store took the record.
asio::awaitable<void> workflow_run::save() {
  const auto& store = hub_->options.store;
  if (!store || lost_) co_return;
  const auto& options = hub_->options;
  auto marks = marks_;
  checkpoint cp;
  cp.workflow_id = state_.id;
  cp.workflow_name = state_.workflow_name;
  cp.status = std::string(to_string(state_.status));
  cp.step = state_.step;
  if (identity_.fingerprint.empty()) identity_ = {workflow_->fingerprint(), node_names()};
  cp.state_json = state_head(state_, identity_);
  if (auto record = next_journal_record(state_, marks)) cp.journal.push_back(std::move(*record));
  cp.owner = options.owner_id;
  cp.lease_expires = std::chrono::system_clock::now() + options.lease;
  cp.fence = fence_;
  try {
    if (stored_) {
      co_await store->save(std::move(cp));
    } else {
      co_await store->create(std::move(cp), options.lease);
      stored_ = true;
      fence_ = 1;
    }
    marks_ = std::move(marks);
  } catch (const claim_error& err) {
    refused_save(err);
  } catch (const std::exception& err) {
    hub_->logger->error("[{}] checkpoint failed: {}", state_.id, err.what());
    if (state_.status == workflow_status::running || state_.status == workflow_status::awaiting_clarification) {
      state_.clarification.reset();
      fail(make_record("checkpoint_failed", "workflow '" + state_.id + "': " + err.what(), false));
    }
  }
}

// The store refused the run: another run has its id, or another hub claimed
// it. Nothing more is saved; the stored run belongs to someone else.
void workflow_run::refused_save(const claim_error& err) {
  lost_ = true;
  hub_->logger->error("[{}] {}", state_.id, err.what());
  state_.clarification.reset();
  const bool exists = err.why() == claim_error::reason::exists;
  auto record = make_record(exists ? "run_exists" : "lost_ownership",
                            "workflow '" + state_.id + "': " + err.what() +
                                (exists ? "" : "; this process stopped it without saving"),
                            false);
  if (state_.status == workflow_status::running || state_.status == workflow_status::awaiting_clarification) {
    fail(std::move(record));
  } else {
    state_.errors.push_back(std::move(record));
  }
}

std::vector<std::string> workflow_run::node_names() const {
  std::vector<std::string> names;
  names.reserve(w_.nodes.size());
  for (const auto& n : w_.nodes) names.push_back(n.name());
  return names;
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

// ---------------------------------------------------------------- events

event workflow_run::make_event(event_kind kind) const {
  event e{};
  e.kind = kind;
  e.workflow_id = state_.id;
  e.workflow_name = state_.workflow_name;
  e.step = state_.step;
  e.node = state_.next_node;
  return e;
}

void workflow_run::emit(const event& e) {
  if (hub_->options.collect_metrics) hub_->metrics.on_event(e);
  for (const auto& o : hub_->observers) o->on_event(e);
  log(e);
}

void workflow_run::log(const event& e) const {
  auto& logger = *hub_->logger;
  switch (e.kind) {
    case event_kind::step_completed:
      logger.info("[{}] step {} {}/{}: {} (confidence {:.2f})", e.workflow_id, e.step, e.node, e.agent,
                  e.envelope->explanation, e.envelope->confidence);
      logger.debug("[{}] step {} {} reasoning: {}", e.workflow_id, e.step, e.agent, e.envelope->reasoning);
      break;
    case event_kind::step_failed:
      logger.warn("[{}] step {} {}/{} failed ({}): {}", e.workflow_id, e.step, e.node, e.agent, e.error->type,
                  e.error->message);
      break;
    case event_kind::routed:
      logger.debug("[{}] {} -> {} ({})", e.workflow_id, e.node, e.target, e.condition);
      break;
    case event_kind::paused:
      logger.info("[{}] awaiting clarification at {}: {}", e.workflow_id, e.node, e.question);
      break;
    case event_kind::resumed:
      logger.info("[{}] resumed at {}", e.workflow_id, e.node);
      break;
    case event_kind::workflow_started:
      logger.debug("[{}] workflow '{}' started at {}", e.workflow_id, e.workflow_name, e.node);
      break;
    case event_kind::workflow_completed:
      logger.info("[{}] workflow '{}' completed after {} steps", e.workflow_id, e.workflow_name, e.step);
      break;
    case event_kind::workflow_failed:
      logger.warn("[{}] workflow '{}' failed ({}): {}", e.workflow_id, e.workflow_name, e.error->type,
                  e.error->message);
      break;
    case event_kind::workflow_cancelled:
      logger.info("[{}] workflow '{}' cancelled at {}", e.workflow_id, e.workflow_name, e.node);
      break;
    case event_kind::step_started:
      logger.trace("[{}] step {} {} started", e.workflow_id, e.step, e.node);
      break;
  }
}

}  // namespace

namespace {

// The run goes on `strand`; this frame (on the caller's executor) owns it
// and is the only one with a slot for the final state.
asio::awaitable<workflow_state> await_run(std::unique_ptr<workflow_run> run, asio::any_io_executor strand) {
  auto going = asio::co_spawn(strand, run->go(), asio::use_awaitable);
  co_await std::move(going);
  co_return run->take_state();
}

// Prepares the run (a claim, for a resume) and runs it; the handle gets the
// final state, or the exception of a refused claim.
asio::awaitable<void> prepare_and_run(std::shared_ptr<hub::impl> hub, std::shared_ptr<run_control> control,
                                      std::shared_ptr<const compiled_workflow> workflow,
                                      asio::awaitable<prepared_run> prepare) {
  auto run = std::make_unique<workflow_run>(std::move(hub), std::move(workflow), co_await std::move(prepare),
                                            &control->interrupt);
  co_await run->go();
  control->finish(nullptr, run->take_state());
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

void spawn(std::shared_ptr<hub::impl> hub, std::shared_ptr<run_control> control,
           std::shared_ptr<const compiled_workflow> workflow, asio::awaitable<prepared_run> prepare) {
  auto slot = control->signal.slot();
  auto going = prepare_and_run(std::move(hub), control, std::move(workflow), std::move(prepare));
  asio::co_spawn(control->strand, std::move(going),
                 asio::bind_cancellation_slot(slot, [control](std::exception_ptr error) {
                   if (error) control->finish(error, std::nullopt);
                 }));
}

}  // namespace switchboard::orchestrator::detail
