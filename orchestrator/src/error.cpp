#include <switchboard/orchestrator/error.hpp>

namespace switchboard::orchestrator {

std::string_view to_string(orchestrator_errc code) noexcept {
  switch (code) {
    case orchestrator_errc::invalid_workflow: return "invalid_workflow";
    case orchestrator_errc::invalid_workflow_file: return "invalid_workflow_file";
    case orchestrator_errc::unknown_workflow: return "unknown_workflow";
    case orchestrator_errc::not_awaiting_clarification: return "not_awaiting_clarification";
    case orchestrator_errc::workflow_mismatch: return "workflow_mismatch";
    case orchestrator_errc::corrupt_checkpoint: return "corrupt_checkpoint";
    case orchestrator_errc::step_limit: return "step_limit";
    case orchestrator_errc::clarification_limit: return "clarification_limit";
    case orchestrator_errc::no_route: return "no_route";
    case orchestrator_errc::agent_failed: return "agent_failed";
    case orchestrator_errc::invalid_envelope: return "invalid_envelope";
    case orchestrator_errc::timeout: return "timeout";
    case orchestrator_errc::cancelled: return "cancelled";
    case orchestrator_errc::coordinator_failed: return "coordinator_failed";
    case orchestrator_errc::failed_by_definition: return "failed_by_definition";
    case orchestrator_errc::run_owned: return "run_owned";
    case orchestrator_errc::run_moved_on: return "run_moved_on";
    case orchestrator_errc::answer_required: return "answer_required";
    case orchestrator_errc::invalid_input: return "invalid_input";
    case orchestrator_errc::run_exists: return "run_exists";
    case orchestrator_errc::lost_ownership: return "lost_ownership";
    case orchestrator_errc::checkpoint_failed: return "checkpoint_failed";
    case orchestrator_errc::decision_required: return "decision_required";
    case orchestrator_errc::invalid_update: return "invalid_update";
  }
  return "unknown";
}

namespace {

class category final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "switchboard.orchestrator"; }

  std::string message(int value) const override {
    switch (static_cast<orchestrator_errc>(value)) {
      case orchestrator_errc::invalid_workflow: return "invalid workflow definition";
      case orchestrator_errc::invalid_workflow_file: return "invalid workflow file";
      case orchestrator_errc::unknown_workflow: return "no workflow with that id";
      case orchestrator_errc::not_awaiting_clarification: return "workflow is not awaiting clarification";
      case orchestrator_errc::workflow_mismatch: return "checkpoint belongs to another workflow definition";
      case orchestrator_errc::corrupt_checkpoint: return "checkpoint state cannot be read";
      case orchestrator_errc::step_limit: return "workflow exceeded its step limit";
      case orchestrator_errc::clarification_limit: return "workflow exceeded its clarification rounds";
      case orchestrator_errc::no_route: return "no route matched";
      case orchestrator_errc::agent_failed: return "agent failed";
      case orchestrator_errc::invalid_envelope: return "agent returned an invalid envelope";
      case orchestrator_errc::timeout: return "node timed out";
      case orchestrator_errc::cancelled: return "workflow cancelled";
      case orchestrator_errc::coordinator_failed: return "coordinator failed; default agent used";
      case orchestrator_errc::failed_by_definition: return "workflow reached a fail node";
      case orchestrator_errc::run_owned: return "the run is owned by another process";
      case orchestrator_errc::run_moved_on: return "the run moved on since it was read";
      case orchestrator_errc::answer_required: return "the answer does not fit the run's status";
      case orchestrator_errc::invalid_input: return "the input cannot be stored";
      case orchestrator_errc::run_exists: return "a run with that id exists";
      case orchestrator_errc::lost_ownership: return "another process took the run over";
      case orchestrator_errc::checkpoint_failed: return "the checkpoint could not be saved";
      case orchestrator_errc::decision_required: return "approve or reject the pending tool calls (and only then)";
      case orchestrator_errc::invalid_update: return "the state update does not fit the workflow";
    }
    return "unknown orchestrator error";
  }
};

}  // namespace

const boost::system::error_category& orchestrator_category() noexcept {
  static const category instance;
  return instance;
}

}  // namespace switchboard::orchestrator
