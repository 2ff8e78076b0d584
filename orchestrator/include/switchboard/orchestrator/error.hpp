// Errors of the orchestrator, wired into boost::system::error_code (and
// through it std::error_code), and the exception that carries them.
//
// to_string(code) is the stable type string that error records and metrics
// use ("timeout", "step_limit", ...). what() of an orchestrator_error is a
// readable message naming the workflow, the node, the agent, the file.
//
// Thread-safety: value types; the category is stateless.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <string_view>
#include <type_traits>

namespace switchboard::orchestrator {

enum class orchestrator_errc {
  invalid_workflow = 1,     // a definition refused by compile() (names the node)
  invalid_workflow_file,    // a workflow file that is not JSON or not a workflow (names file, path, line)
  unknown_workflow,         // resume(): no workflow with that id
  not_awaiting_clarification,  // resume(): the workflow is completed/failed/cancelled/running
  workflow_mismatch,        // resume(): the checkpoint belongs to another workflow definition
  corrupt_checkpoint,       // a checkpoint's state cannot be read back
  step_limit,               // the run took more steps than the workflow allows
  clarification_limit,      // more clarification rounds than the workflow allows
  no_route,                 // no route of a node matched the envelope
  agent_failed,             // an agent threw or returned an error envelope
  invalid_envelope,         // an agent's envelope failed its output schema
  timeout,                  // a node's timeout passed
  cancelled,                // the workflow was cancelled
  coordinator_failed,       // the coordinator's model failed; the default agent ran
  failed_by_definition,     // the workflow reached a `fail` node
  run_owned,                // resume(): another hub owns the run (a live lease)
  run_moved_on,             // resume(): the run moved on since the caller read it
  answer_required,          // resume(): a paused run needs an answer; an interrupted one takes none
  invalid_input,            // run(): an input that could not be stored (not finite, too deep)
  run_exists,               // run(): a run with that id is already stored
  lost_ownership,           // a save was refused: another hub claimed the run
  checkpoint_failed,        // the store refused or failed a save
  decision_required,        // resume(): a run awaiting approval needs a decision; another takes none
  invalid_update,           // update_stored_run(): no such agent node, data its schema refuses, no route
};

// "invalid_workflow", "timeout", ...: the stable type string.
std::string_view to_string(orchestrator_errc code) noexcept;

const boost::system::error_category& orchestrator_category() noexcept;

inline boost::system::error_code make_error_code(orchestrator_errc code) noexcept {
  return {static_cast<int>(code), orchestrator_category()};
}

// Thrown for programming and configuration errors: an invalid definition or
// workflow file, resume() of an unknown or finished workflow. Failures while
// a workflow runs are not thrown; they end the run with status `failed` and
// error records in its state.
class orchestrator_error : public boost::system::system_error {
 public:
  orchestrator_error(orchestrator_errc code, const std::string& message)
      : boost::system::system_error(make_error_code(code), message), message_(message) {}

  orchestrator_errc errc() const noexcept {
    return static_cast<orchestrator_errc>(code().value());
  }
  // The message alone, without system_error's category suffix: it already
  // names what was wrong.
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace switchboard::orchestrator

template <>
struct boost::system::is_error_code_enum<switchboard::orchestrator::orchestrator_errc>
    : std::true_type {};
