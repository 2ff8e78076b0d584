// Synthesis nodes: the final answer from every agent's output, written by
// an agent, a model, or deterministically.

#include "workflow_run.hpp"

#include <switchboard/models/model_error.hpp>
#include <switchboard/models/detail/structured_ladder.hpp>
#include <switchboard/models/structured.hpp>

#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace switchboard::orchestrator::detail {

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
  out.more().note = "deterministic synthesis";
  return out;
}

// The synthesis model's request, sent through the structured ladder into
// `answer`. A plain function, as for a coordinator's choice: the request
// and its options live in the ladder's call, not in a waiting frame.
namespace {

constexpr std::string_view synthesis_prompt = "synthesis@1";  // the prompt's version, recorded with the step

}  // namespace

asio::awaitable<void> workflow_run::ask_for_synthesis(const compiled_node& n, models::chat_model& model,
                                                      models::structured_result& answer) {
  models::chat_request request;
  request.messages.push_back(
      {models::chat_role::system,
       "Write the final answer for the user from the outputs of the agents below. Answer with a JSON object "
       "{\"answer\": \"...\", \"explanation\": \"one or two sentences\", \"confidence\": 0.0-1.0}."});
  request.messages.push_back({models::chat_role::user, outputs_summary(state_, true)});
  request.prompt_version = synthesis_prompt;
  models::structured_options so;
  so.schema = *n.model_schema;
  so.schema_name = "synthesis_answer";
  // The invoker's limits (attempts, total time, rung) bind the hub's own calls too.
  models::apply_call_limits(hub_->options.models.limits(), so);
  return models::detail::complete_structured_into(model, std::move(request), std::move(so), answer);
}

// The model's synthesis as the step's envelope.
void workflow_run::take_synthesis(const compiled_node& n, models::structured_result& answer, step_outcome& out) {
  out.tokens = answer.usage;
  out.more().raw_text = std::move(answer.last.text);
  const auto& value = answer.value.as_object();
  out.envelope.data["answer"] = value.at("answer");
  out.envelope.explanation = std::string(value.at("explanation").as_string());
  out.envelope.confidence = value.at("confidence").to_number<double>();
  out.envelope.reasoning = "Synthesized by the model from " + std::to_string(state_.outputs.size()) + " output(s).";
  if (auto problem = unstorable(out.envelope)) {
    out.more().error = make_record("invalid_envelope", "synthesis node '" + n.name() + "': the model's answer " +
                                                           "cannot be stored: " + *problem,
                                   false, n.name());
  }
}

asio::awaitable<void> workflow_run::synthesize_by_model(const compiled_node& n, step_outcome& out) {
  out.agent = n.name();
  out.attempts = 1;
  out.more().prompt_version = synthesis_prompt;
  auto* model = hub_->options.models.find(n.definition->synthesis.model_role);
  if (!model) {
    out.more().error = make_record("not_configured",
                                   "synthesis node '" + n.name() + "': no model for role '" +
                                       n.definition->synthesis.model_role + "' (nor 'default') is configured",
                                   false, n.name());
    co_return;
  }
  models::structured_result answer;
  try {
    auto ladder = ask_for_synthesis(n, *model, answer);
    co_await std::move(ladder);
    take_synthesis(n, answer, out);
  } catch (const models::model_error& e) {
    out.more().error = make_record(models::to_string(e.errc()), "synthesis node '" + n.name() + "': " + e.what(),
                                   e.retryable(), n.name());
  } catch (const std::exception& e) {
    out.more().error =
        make_record("agent_exception", "synthesis node '" + n.name() + "': " + e.what(), false, n.name());
  }
  if (out.failed()) out.cancelled = co_await cancelled_now();
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

}  // namespace switchboard::orchestrator::detail
