#include "checkpoint_checks.hpp"

#include <algorithm>
#include <array>
#include <ctime>
#include <string>

namespace switchboard::orchestrator {

namespace {

constexpr std::array<std::string_view, 7> known_statuses{
    "running", "awaiting_clarification", "awaiting_approval", "interrupted", "completed", "failed", "cancelled"};

}  // namespace

bool is_checkpoint_status(std::string_view status) noexcept {
  return std::find(known_statuses.begin(), known_statuses.end(), status) != known_statuses.end();
}

bool is_finished_status(std::string_view status) noexcept {
  return status == "completed" || status == "failed" || status == "cancelled";
}

namespace detail {

namespace {

std::string owner_text(const run_summary& run) {
  return "owner " + run.owner + ", since " + format_utc(run.updated_at);
}

}  // namespace

std::string format_utc(system_time t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buffer;
}

void check_checkpoint(const checkpoint& cp) {
  if (cp.workflow_id.empty()) {
    throw checkpoint_error("checkpoint refused: empty workflow_id");
  }
  if (cp.workflow_name.empty()) {
    throw checkpoint_error("checkpoint of workflow '" + cp.workflow_id + "' refused: empty workflow_name");
  }
  if (cp.step < 0) {
    throw checkpoint_error("checkpoint of workflow '" + cp.workflow_id + "' refused: negative step " +
                           std::to_string(cp.step));
  }
  if (!is_checkpoint_status(cp.status)) {
    throw checkpoint_error("checkpoint of workflow '" + cp.workflow_id + "' refused: unknown status '" + cp.status +
                           "' (expected running, awaiting_clarification, awaiting_approval, interrupted, completed, failed or "
                           "cancelled)");
  }
}

void check_new_run(const checkpoint& cp) {
  check_checkpoint(cp);
  if (cp.status != "running") {
    throw checkpoint_error("new run '" + cp.workflow_id + "' refused: it must start as running, not " + cp.status);
  }
  if (cp.owner.empty()) {
    throw checkpoint_error("new run '" + cp.workflow_id + "' refused: empty owner");
  }
}

std::string effective_status(std::string_view stored_status, system_time lease_expires, system_time now) {
  if (stored_status == "running" && lease_expires <= now) return "interrupted";
  return std::string(stored_status);
}

void check_claim(std::string_view store_name, const std::optional<run_summary>& stored,
                 const claim_request& request, system_time now) {
  using reason = claim_error::reason;
  const std::string id = "workflow '" + request.workflow_id + "'";
  if (request.owner.empty()) {
    throw checkpoint_error(std::string(store_name) + ": claim of " + id + " refused: empty owner");
  }
  if (!stored) {
    throw claim_error(reason::not_found, std::string(store_name) + ": no " + id, std::nullopt);
  }
  std::string status = effective_status(stored->status, stored->lease_expires, now);
  if (status == "running" && !request.dead_owner.empty() && stored->owner == request.dead_owner) {
    status = "interrupted";
  }
  if (status == "running") {
    throw claim_error(reason::owned,
                      id + " is being resumed by another process (" + owner_text(*stored) + ", lease until " +
                          format_utc(stored->lease_expires) + ")",
                      stored);
  }
  if (status != request.expected_status) {
    throw claim_error(reason::wrong_status, id + " is " + status + ", not " + request.expected_status, stored);
  }
  if (request.expected_step && *request.expected_step != stored->step) {
    throw claim_error(reason::step_changed,
                      id + " moved on since it was read (step " + std::to_string(*request.expected_step) +
                          ", now step " + std::to_string(stored->step) + ")",
                      stored);
  }
}

void check_save(std::string_view store_name, const std::optional<run_summary>& stored, const checkpoint& cp) {
  check_checkpoint(cp);
  const std::string id = "workflow '" + cp.workflow_id + "'";
  if (!stored) {
    throw checkpoint_error(std::string(store_name) + ": save refused: no " + id + " (create it first)");
  }
  if (stored->fence != cp.fence || stored->owner.empty() || stored->owner != cp.owner) {
    throw claim_error(claim_error::reason::stale_fence,
                      std::string(store_name) + ": save of " + id + " refused: fencing number " +
                          std::to_string(cp.fence) + " of owner " + cp.owner +
                          " is stale (the run was released or claimed since: fence " +
                          std::to_string(stored->fence) + ", " +
                          (stored->owner.empty() ? std::string("no owner") : owner_text(*stored)) + ")",
                      stored);
  }
  if (cp.step < stored->step) {
    throw checkpoint_error(std::string(store_name) + ": stale checkpoint of " + id + " refused: step " +
                           std::to_string(cp.step) + " is older than the stored step " + std::to_string(stored->step));
  }
}

void throw_exists(std::string_view store_name, const run_summary& stored) {
  throw claim_error(claim_error::reason::exists,
                    std::string(store_name) + ": a run with id '" + stored.workflow_id + "' already exists (" +
                        stored.status + ")",
                    stored);
}

}  // namespace detail
}  // namespace switchboard::orchestrator
