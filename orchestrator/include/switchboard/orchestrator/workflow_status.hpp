// The status of a workflow run: what hub::run() returns in its state and
// what a checkpoint store keeps and filters on. Its text form (to_string)
// is the stored one, so it never changes once written: a database written
// by an older build reads back the same.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <optional>
#include <ostream>
#include <string_view>

namespace switchboard::orchestrator {

// interrupted: its owner stopped it between steps (a signal, a shutdown) or
// died; hub::resume() without an answer continues it from its last
// completed step. awaiting_approval: a tool call waits for the user's
// decision (hub::resume with resume_options::decision).
enum class workflow_status {
  running, awaiting_clarification, completed, failed, cancelled, interrupted, awaiting_approval
};

// "running", "awaiting_clarification", "completed", "failed", "cancelled",
// "interrupted", "awaiting_approval": the one text form, stored and shown.
std::string_view to_string(workflow_status status) noexcept;
// The status `text` names, or nullopt for anything else.
std::optional<workflow_status> parse_workflow_status(std::string_view text) noexcept;

// completed, failed, cancelled: nothing will run again.
constexpr bool is_finished(workflow_status status) noexcept {
  return status == workflow_status::completed || status == workflow_status::failed ||
         status == workflow_status::cancelled;
}

// awaiting_clarification, awaiting_approval: waiting for the user, owned by no one.
constexpr bool is_paused(workflow_status status) noexcept {
  return status == workflow_status::awaiting_clarification || status == workflow_status::awaiting_approval;
}

// Its text form (test failure messages, logs).
inline std::ostream& operator<<(std::ostream& out, workflow_status status) { return out << to_string(status); }

}  // namespace switchboard::orchestrator
