#include <switchboard/orchestrator/workflow_status.hpp>

namespace switchboard::orchestrator {

std::string_view to_string(workflow_status status) noexcept {
  switch (status) {
    case workflow_status::running: return "running";
    case workflow_status::awaiting_clarification: return "awaiting_clarification";
    case workflow_status::completed: return "completed";
    case workflow_status::failed: return "failed";
    case workflow_status::cancelled: return "cancelled";
    case workflow_status::interrupted: return "interrupted";
    case workflow_status::awaiting_approval: return "awaiting_approval";
  }
  return "?";
}

std::optional<workflow_status> parse_workflow_status(std::string_view text) noexcept {
  for (auto s : {workflow_status::running, workflow_status::awaiting_clarification, workflow_status::completed,
                 workflow_status::failed, workflow_status::cancelled, workflow_status::interrupted,
                 workflow_status::awaiting_approval}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

}  // namespace switchboard::orchestrator
