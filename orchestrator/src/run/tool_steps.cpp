// Tool calls in a step: the durable journal handed to agents that use
// tools, the pause for approval and the decision a resume brings, and the
// calls' place in the audit log and the events.

#include "workflow_run.hpp"

#include <spdlog/spdlog.h>

namespace switchboard::orchestrator::detail {

// The checkpoint a journal append saves: the run as it stood when the step
// began (the step not counted, its node next), so that a crash during the
// step leaves a run that continues by running the step again.
std::optional<journal_target> workflow_run::journal_target_now() {
  const auto& store = hub_->options.store;
  // The hub's own store is written at pauses only (workflow_run::save).
  if (!store || !stored_ || lost_ || hub_->own_store) return std::nullopt;
  journal_target target;
  target.store = store;
  --state_.step;  // restored below: the step in flight is not counted yet
  target.header = make_save_request(state_, w_.identity, nullptr, hub_->options.owner_id, fence_);
  ++state_.step;
  target.header.status = workflow_status::running;
  return target;
}

void workflow_run::open_step_tools() {
  step_tools_ = std::make_shared<step_records>(state_.step, std::move(state_.tool_records), journal_target_now());
  state_.tool_records.clear();
}

// `kept`: the step will run again (paused for approval, interrupted), so its
// records stay in the state; otherwise they are done with.
void workflow_run::close_step_tools(bool kept) {
  if (step_tools_) {
    step_tools_->close();
    if (kept) {
      state_.tool_records = step_tools_->all();
      // Each was saved as it was kept, when the step had a journal to save to;
      // otherwise the next save carries them.
      if (step_tools_->journaled()) marks_.tool_records = state_.tool_records.size();
    }
    step_tools_.reset();
  }
  if (!kept) {
    state_.tool_records.clear();
    marks_.tool_records = 0;
  }
}

void workflow_run::give_tools(agents::agent_context& context, const agents::agent& a) {
  if (!a.uses_tools()) return;
  if (!step_tools_) open_step_tools();
  context.journal = std::make_shared<agent_tool_journal>(step_tools_, std::string(a.name()));
  context.needs_approval = hub_->approval_policy;
}

void workflow_run::pause_for_approval(const compiled_node& n, step_outcome& out) {
  if (step_in_flight_) {
    --state_.step;
    step_in_flight_ = false;
  }
  close_step_tools(true);
  state_.status = workflow_status::awaiting_approval;
  state_.next_node = n.name();
  state_.approval = approval_request{n.name(), std::move(*out.more().approval)};
  std::string summary;
  for (const auto& call : state_.approval->calls) {
    summary += (summary.empty() ? "" : "; ") + call.agent + " wants to call " + call.tool;
  }
  auto e = make_event(event_kind::approval_requested);
  e.node = n.name();
  e.agent = out.agent;
  e.question = summary;
  emit(e);
}

void workflow_run::pause_for_answer(const compiled_node& n, step_outcome& out) {
  if (step_in_flight_) {
    --state_.step;
    step_in_flight_ = false;
  }
  close_step_tools(true);
  auto& d = out.more();
  pause(n, std::move(*d.question), d.question_agent.empty() ? std::string_view(out.agent) : d.question_agent);
}

// One "approval" record per pending call, for the step that runs again.
void workflow_run::apply_decision() {
  if (!decision_ || !state_.approval) return;
  for (const auto& call : state_.approval->calls) {
    state_.tool_records.push_back(boost::json::object{{"kind", "approval"},
                                                      {"round", call.round},
                                                      {"id", call.id},
                                                      {"approved", decision_->approve},
                                                      {"reason", decision_->reason},
                                                      {"step", state_.step + 1},
                                                      {"agent", call.agent}});
  }
  hub_->logger->info("[{}] {} {} tool call(s) at node '{}'", state_.id,
                     decision_->approve ? "approved" : "rejected", state_.approval->calls.size(),
                     state_.approval->node);
  state_.approval.reset();
  decision_.reset();
}

// A tool_called event per call of the step; a call whose outcome is unknown
// (its process died while it ran) is also a warning: the user must check it.
void workflow_run::report_tool_calls(const step_outcome& out) {
  for (const auto& call : out.details().tool_calls) {
    const auto* entry = call.if_object();
    if (entry == nullptr) continue;
    const auto& record = *entry;
    auto e = make_event(event_kind::tool_called);
    e.agent = out.agent;
    e.tool_call = &record;
    emit(e);
    const auto* error = record.if_contains("error");
    const auto* code = error && error->is_object() ? error->as_object().if_contains("code") : nullptr;
    if (code && code->is_string() && code->get_string() == "unknown_outcome") {
      const auto* tool = record.if_contains("tool");
      hub_->logger->warn("[{}] the outcome of a call of tool '{}' is unknown: the process stopped while it ran; "
                         "it was not repeated, check its effect",
                         state_.id, tool && tool->is_string() ? std::string(tool->get_string()) : "?");
    }
  }
}

}  // namespace switchboard::orchestrator::detail
