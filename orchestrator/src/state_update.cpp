#include "detail/state_update.hpp"

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/error.hpp>
#include <switchboard/protocol/limits.hpp>

#include "detail/compiled.hpp"

#include <utility>

namespace switchboard::orchestrator::detail {

namespace {

[[noreturn]] void refuse(const workflow_state& state, const std::string& why) {
  throw orchestrator_error(orchestrator_errc::invalid_update,
                           "update of workflow '" + state.id + "' (" + state.workflow_name + "): " + why);
}

const compiled_node& agent_node(const workflow_state& state, const compiled_workflow::impl& w,
                                const std::string& name) {
  const int index = w.index_of(name);
  if (index == no_node) refuse(state, "the workflow has no node '" + name + "'");
  const auto& n = w.nodes[index];
  // A group's answer is several agents' or a model's: no one answer to set.
  if (n.kind() != node_kind::agent || !n.agent)
    refuse(state, "node '" + name + "' is " + (n.kind() == node_kind::end ? "an " : "a ") +
                      std::string(to_string(n.kind())) + " node; only an agent node's answer can be set");
  return n;
}

// The answer as the agent would have given it, checked as the hub checks
// an agent's: storable, and what the agent's output schema accepts.
protocol::envelope checked_answer(const workflow_state& state, const compiled_node& n,
                                  const agents::agent_registry& registry, state_update& update) {
  protocol::envelope answer;
  answer.data = std::move(update.data);
  answer.explanation = update.explanation.empty() ? "set by a person instead of the agent" : update.explanation;
  answer.confidence = 1.0;
  answer.reasoning = "given through an update of the state, not by agent '" + std::string(n.agent->name()) + "'";
  if (auto problem = protocol::check_untrusted_value(answer.data))
    refuse(state, "node '" + n.name() + "': the values cannot be stored: " + *problem);
  std::vector<protocol::validation_error> errors;
  try {
    errors = registry.validate(*n.agent, answer);
  } catch (const std::exception& e) {
    refuse(state, "node '" + n.name() + "': " + e.what());
  }
  if (!errors.empty())
    refuse(state, "node '" + n.name() + "': agent '" + std::string(n.agent->name()) + "' output schema '" +
                      n.agent->output_schema() + "' refuses the values: " + protocol::to_string(errors));
  return answer;
}

const compiled_route& chosen_route(const workflow_state& state, const compiled_node& n,
                                   const protocol::envelope& answer) {
  for (const auto& r : n.routes)
    if (r.when->evaluate(answer)) return r;
  std::string tried;
  for (const auto& r : n.routes) tried += (tried.empty() ? "" : "; ") + r.text;
  refuse(state, "node '" + n.name() + "': no route matches the values (routes: " + tried + ")");
}

}  // namespace

void apply_state_update(workflow_state& state, const compiled_workflow& workflow,
                        const agents::agent_registry& registry, state_update update) {
  const auto& w = workflow.internals();
  const auto& node_name = update.node.empty() ? state.next_node : update.node;
  const auto& n = agent_node(state, w, node_name);
  auto answer = checked_answer(state, n, registry, update);
  const auto& route = chosen_route(state, n, answer);

  // Checked: from here on nothing throws but allocation.
  audit_entry step;
  step.step = state.step + 1;
  step.node = n.name();
  step.agent = std::string(n.agent->name());
  step.confidence = answer.confidence;
  step.explanation = answer.explanation;
  step.route = w.nodes[route.target].name();
  step.condition = route.text;
  step.note = "answer set through an update of the state; the agent did not run";
  state.step = step.step;
  state.add_output(step.agent, std::move(answer));
  state.audit.push_back(std::move(step));
  state.next_node = w.nodes[route.target].name();
  state.status = workflow_status::interrupted;
  // What the run waited for is answered by the update: a pending question
  // is not asked again, pending calls are never made.
  state.clarification.reset();
  state.approval.reset();
  state.tool_records.clear();
}

}  // namespace switchboard::orchestrator::detail
