// What `switchboard run` and `resume` share once their command lines are
// read (run_arguments.hpp): opening the workflow (the host library's
// open_workflow), driving the hub until the run stops, taking clarification
// answers and approvals at the terminal, and printing the ending with the
// right exit code.
//
// Standard output holds what a user or a script reads: the steps and the
// outcome, or with --json exactly one JSON document (the final state).
// Notes, hints and errors go to standard error when --json is given.
//
// Thread-safety: one session per thread.
#pragma once

#include "run_arguments.hpp"

#include <switchboard/host/opened_workflow.hpp>
#include <switchboard/orchestrator/hub.hpp>

#include <deque>
#include <string_view>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::cli {

inline constexpr int exit_paused = 3;
inline constexpr int exit_awaiting_approval = 4;  // tool calls wait for resume --approve / --reject

// The exit codes of run and resume, for their usage texts.
inline constexpr std::string_view run_exit_codes_usage =
    "exit codes: 0 completed, 1 failed, 2 usage, 3 paused for clarification (continue with\n"
    "            `switchboard resume ID --answer TEXT`), 4 awaiting approval of tool calls (continue\n"
    "            with `switchboard resume ID --approve` or `--reject`), 128+N interrupted by signal N\n"
    "            (resume without --answer)\n";

// Clarification answers: --answer values first, then lines of standard
// input when it is not a terminal (a pipe, a file), else the terminal is
// asked. Nothing is asked with --json (answers are still taken).
class answer_source {
 public:
  explicit answer_source(std::deque<std::string> given) : given_(std::move(given)) {}
  std::optional<std::string> next(const std::string& question, bool quiet);
  bool empty_given() const noexcept { return given_.empty(); }
  std::optional<std::string> take_given();

 private:
  std::deque<std::string> given_;
  bool input_exhausted_ = false;
};

// The decision of a person at the terminal on pending tool calls (y/N),
// or nullopt when nobody can be asked (not a terminal, --json, end of input).
std::optional<orchestrator::approval_decision> ask_decision(const orchestrator::approval_request& approval,
                                                            bool quiet);

using session = host::opened_workflow;

// Opens the workflow file and what it names, the model when one is
// configured, with `store` for its runs (host::open_workflow); tells the
// user when model options were given without a model. Throws what
// open_workflow throws (guarded() turns it into the exit code).
session open_session(const run_settings& settings, std::shared_ptr<orchestrator::checkpoint_store> store);

// The plugins' notes and the request, before the first step (not with --json).
void print_header(const session& s, const std::string& request, const run_settings& settings);

// Runs `first` (a start or a resume on the given hub), answering pauses
// from `answers` while it can, and returns the exit code.
int drive(session& s, const run_settings& settings, answer_source& answers,
          const std::function<orchestrator::workflow_handle(orchestrator::hub&)>& first);

// Prints how `state` stands (the same ending a run prints: the state under
// --json, the question and the resume command when paused) and returns its
// exit code.
int report(const orchestrator::workflow_state& state, const run_settings& settings);

// Runs `body`, turning its exceptions into messages and exit codes: 2 for a
// usage_error, a missing file or directory the command line named
// (host_errc::missing_path) and a model that is not configured, 1 for the
// others.
int guarded(std::string_view usage, const std::function<int()>& body);

}  // namespace switchboard::cli
