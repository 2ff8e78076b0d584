// What `switchboard run` and `resume` print in human form: each step as the
// hub reports it, and the outcome at the end. Every text from a workflow
// file, an agent or a model is shown escaped (terminal_output.hpp).
#pragma once

#include <switchboard/orchestrator/events.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>

#include <iosfwd>
#include <memory>
#include <string>

namespace switchboard::cli {

// An observer printing "[n] agent (confidence c)", the explanation, the
// routes and failures to `out`, which must outlive it. Never throws into the
// hub: a failed print is dropped.
std::shared_ptr<orchestrator::observer> make_progress_printer(std::ostream& out);

// The outcome of a completed run as a user reads it: the explanation of its
// final envelope, each of its lines escaped, lines after the first indented.
std::string shown_outcome(const orchestrator::workflow_state& state);

}  // namespace switchboard::cli
