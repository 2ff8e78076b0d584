// What `switchboard run` and `resume` share once their command lines are
// read: opening a workflow (its agents, the model, the store), driving the
// hub until the run stops, taking clarification answers, and printing the
// ending with the right exit code.
//
// Standard output holds what a user or a script reads: the steps and the
// outcome, or with --json exactly one JSON document (the final state).
// Notes, hints and errors go to standard error when --json is given.
//
// Thread-safety: one session per thread.
#pragma once

#include "model_options.hpp"
#include "workflow_loader.hpp"

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/orchestrator/workflow.hpp>
#include <switchboard/protocol/metrics.hpp>

#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::cli {

inline constexpr int exit_paused = 3;
inline constexpr int exit_awaiting_approval = 4;  // tool calls wait for resume --approve / --reject

// What a run or a resume is built from: the invoker's command line and
// environment (never a stored run).
struct run_settings {
  std::filesystem::path workflow_file;
  loader_settings loader;
  model_options model;
  std::string store_spec;               // --store; "" = the default SQLite file
  std::filesystem::path metrics_file;   // --metrics FILE ("-": standard error)
  bool json_output = false;
  bool verbose = false;
  bool stream = false;                  // --stream: agents' model text as it arrives (stream_output.hpp)
};

// Takes the options run and resume share; false when args[i] is none.
bool take_run_option(std::span<const std::string> args, std::size_t& i, run_settings& settings);

// The usage lines of those options.
std::string run_options_usage();

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

struct session {
  loaded_agents agents;
  cli_model model;  // no model: every member null
  std::shared_ptr<protocol::parser_metrics> parser_counts = std::make_shared<protocol::parser_metrics>();
  agents::model_set models;
  std::shared_ptr<const orchestrator::compiled_workflow> workflow;
  std::shared_ptr<orchestrator::checkpoint_store> store;
};

// Loads the workflow file and what it names, and the model when one is
// configured. Throws usage_error (exit 2) or a std::exception (exit 1).
session open_session(const run_settings& settings);

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

// Runs `body`, turning its exceptions into messages and exit codes.
int guarded(std::string_view usage, const std::function<int()>& body);

}  // namespace switchboard::cli
