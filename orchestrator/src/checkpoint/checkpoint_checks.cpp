#include "checkpoint_checks.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace switchboard::orchestrator::detail {
namespace {

constexpr std::array<std::string_view, 5> known_statuses{
    "running", "awaiting_clarification", "completed", "failed", "cancelled"};

}  // namespace

void check_checkpoint(const checkpoint& cp) {
  if (cp.workflow_id.empty()) {
    throw checkpoint_error("checkpoint refused: empty workflow_id");
  }
  if (cp.workflow_name.empty()) {
    throw checkpoint_error("checkpoint of workflow '" + cp.workflow_id +
                           "' refused: empty workflow_name");
  }
  if (cp.step < 0) {
    throw checkpoint_error("checkpoint of workflow '" + cp.workflow_id +
                           "' refused: negative step " + std::to_string(cp.step));
  }
  if (std::find(known_statuses.begin(), known_statuses.end(), cp.status) == known_statuses.end()) {
    throw checkpoint_error("checkpoint of workflow '" + cp.workflow_id + "' refused: unknown status '" +
                           cp.status +
                           "' (expected running, awaiting_clarification, completed, failed or cancelled)");
  }
}

void throw_stale_step(std::string_view store_name, const checkpoint& cp, std::int64_t stored_step) {
  throw checkpoint_error(std::string(store_name) + ": stale checkpoint of workflow '" + cp.workflow_id +
                         "' refused: step " + std::to_string(cp.step) + " is older than the stored step " +
                         std::to_string(stored_step));
}

}  // namespace switchboard::orchestrator::detail
