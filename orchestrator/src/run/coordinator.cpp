// Coordinator nodes: a router function or a model chooses which candidate
// agent runs next; the default agent runs when the choice fails.

#include "workflow_run.hpp"

#include <switchboard/models/detail/structured_ladder.hpp>
#include <switchboard/models/structured.hpp>
#include <switchboard/protocol/coordination.hpp>

#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace switchboard::orchestrator::detail {

namespace {


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


}  // namespace

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

namespace {

agents::agent* candidate_named(const compiled_node& n, std::string_view name) {
  auto it = std::find(n.candidate_names.begin(), n.candidate_names.end(), name);
  return it == n.candidate_names.end() ? nullptr : n.group[it - n.candidate_names.begin()];
}

}  // namespace

// Each way of choosing is its own function, so that the frame of `choose`
// (allocated on every coordinator step) stays small: the model's request
// and answer live only in the frame of a step that asks a model.
asio::awaitable<void> workflow_run::choose(const compiled_node& n, choice& result) {
  const auto& options = n.definition->coordinator;
  std::optional<std::string> failure;
  if (options.router) {
    failure = choose_by_router(n, result);
  } else if (auto* model = hub_->options.models.find(options.model_role)) {
    failure = co_await choose_by_model(n, *model, result);
  } else {
    failure = "no model for role '" + options.model_role + "' (nor 'default') is configured";
  }
  if (!failure) co_return;
  result.agent = n.default_agent;
  result.note = "default agent '" + options.default_agent + "' used: " + *failure;
  result.failure = make_record("coordinator_failed",
                               "coordinator node '" + n.name() + "': " + *failure + "; using default agent '" +
                                   options.default_agent + "'",
                               false, n.name());
}

// nullopt once the router chose a candidate, else why its choice cannot be used.
std::optional<std::string> workflow_run::choose_by_router(const compiled_node& n, choice& result) {
  try {
    auto request = n.definition->coordinator.router(state_.input, state_);
    if (auto* a = candidate_named(n, request.agent_name)) {
      result.agent = a;
      result.instructions = std::move(request.additional_instructions);
      result.note = "router chose '" + request.agent_name + "'";
      return std::nullopt;
    }
    return "router chose '" + request.agent_name + "', which is not a candidate";
  } catch (const std::exception& e) {
    return std::string("router threw: ") + e.what();
  }
}

// The model's request for a choice among `n`'s candidates, sent through the
// structured ladder into `answer`. A plain function: the request and its
// options live in the ladder's call, not in the waiting coroutine's frame.
asio::awaitable<void> workflow_run::ask_for_choice(const compiled_node& n, models::chat_model& model,
                                                   models::structured_result& answer) {
  models::chat_request request;
  request.messages.push_back({models::chat_role::system, coordination_prompt_system(n)});
  request.messages.push_back({models::chat_role::user, outputs_summary(state_, false)});
  request.prompt_version = "coordinator@1";
  models::structured_options so;
  so.schema = *n.model_schema;
  so.schema_name = "coordination_request";
  // The invoker's limits (attempts, total time, rung) bind the hub's own calls too.
  models::apply_call_limits(hub_->options.models.limits(), so);
  return models::detail::complete_structured_into(model, std::move(request), std::move(so), answer);
}

// nullopt once the model's answer names a candidate, else why it cannot be used.
std::optional<std::string> workflow_run::take_choice(const compiled_node& n, const models::structured_result& answer,
                                                     choice& result) {
  result.tokens = answer.usage;
  auto parsed = protocol::read_coordination_request(answer.value, n.candidate_names);
  if (!parsed.request) return "the model's choice was refused: " + protocol::to_string(parsed.errors);
  result.agent = candidate_named(n, parsed.request->agent_name);
  result.instructions = std::move(parsed.request->additional_instructions);
  result.note = "coordinator chose '" + parsed.request->agent_name + "'";
  return std::nullopt;
}

// nullopt once the model chose a candidate, else why it did not.
asio::awaitable<std::optional<std::string>> workflow_run::choose_by_model(const compiled_node& n,
                                                                         models::chat_model& model,
                                                                         choice& result) {
  models::structured_result answer;
  std::string failure;
  try {
    auto ladder = ask_for_choice(n, model, answer);
    co_await std::move(ladder);
    auto chosen = take_choice(n, answer, result);
    if (!chosen) co_return std::nullopt;
    failure = std::move(*chosen);
  } catch (const models::structured_output_error& e) {
    result.tokens = e.usage();
    failure = e.what();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (co_await cancelled_now()) throw boost::system::system_error(asio::error::operation_aborted);
  co_return failure;
}

namespace {

// Who keeps a coordinator's choice in the step's tool journal.
std::string chooser_of(const compiled_node& n) { return "coordinator:" + n.name(); }

}  // namespace

// A step that runs again (after an approval, a crash) goes to the agent
// chosen the first time, whose tool calls the journal holds: choosing anew
// could send it to another agent, and what the first one did (or was
// approved to do) would be lost or done again.
bool workflow_run::recorded_choice(const compiled_node& n, choice& chosen) const {
  const auto records = step_tools_ ? step_tools_->all() : state_.tool_records;
  for (const auto& record : records) {
    const auto* by = record.if_contains("agent");
    const auto* kind = record.if_contains("kind");
    if (!by || !kind || !by->is_string() || by->get_string() != chooser_of(n) || *kind != "choice") continue;
    const auto* name = record.if_contains("chose");
    const auto* instructions = record.if_contains("instructions");
    if (!name || !name->is_string()) continue;
    for (std::size_t i = 0; i < n.candidate_names.size(); ++i) {
      if (n.candidate_names[i] != name->get_string()) continue;
      chosen.agent = n.group[i];
      if (instructions && instructions->is_string()) chosen.instructions = std::string(instructions->get_string());
      chosen.note = "'" + n.candidate_names[i] + "' as chosen when this step first ran (its tool calls are recorded)";
      return true;
    }
  }
  return false;
}

// Keeps the choice when the chosen agent may call tools (only then can the
// step's journal hold anything it must come back to).
asio::awaitable<void> workflow_run::keep_choice(const compiled_node& n, const choice& chosen) {
  if (chosen.agent == nullptr || !chosen.agent->uses_tools()) co_return;
  if (!step_tools_) open_step_tools();
  boost::json::object record{{"kind", "choice"},
                             {"round", 1},
                             {"chose", chosen.agent->name()},
                             {"instructions", chosen.instructions}};
  const auto records = step_tools_;
  co_await records->append(chooser_of(n), std::move(record));
}

asio::awaitable<void> workflow_run::run_coordinator(const compiled_node& n, step_outcome& out) {
  choice chosen;
  if (!recorded_choice(n, chosen)) {
    co_await choose(n, chosen);
    co_await keep_choice(n, chosen);
  }
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
  // A paused call wrote no entry: the last one is an earlier step's.
  if (!state_.audit.empty() && !out.paused()) {
    state_.audit.back().note = chosen.note;
    state_.audit.back().tokens += chosen.tokens;
  }
  if (!chosen.note.empty()) out.more().note = std::move(chosen.note);
}

}  // namespace switchboard::orchestrator::detail
