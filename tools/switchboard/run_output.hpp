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

// The sample's readable outcome of a completed run (see
// scheduling::describe_outcome), else the result's explanation. Each string
// the agents returned is escaped to one line before it is quoted, so the
// only line breaks are the outcome's own.
std::string shown_outcome(const orchestrator::workflow_state& state);

}  // namespace switchboard::cli
