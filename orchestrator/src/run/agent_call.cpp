// Calling agents: one agent with its timeout, retries and envelope checks,
// and a parallel group of them.

// g++ 12 reports Asio's own awaitable frame allocator/deallocator pair as
// mismatched (a known false positive, GCC bug 109224); nothing here allocates
// frames by hand.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
#include "workflow_run.hpp"

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/model/model_error.hpp>

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

}  // namespace switchboard::orchestrator::detail
