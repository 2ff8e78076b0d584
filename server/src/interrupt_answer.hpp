// What answers a paused run: a LangGraph `command.resume` checked against
// the interrupt its thread shows (a question, or tool calls awaiting
// approval), and applied to the hub's resume options.
#pragma once

#include "catalog.hpp"

#include <switchboard/orchestrator/hub.hpp>

#include <boost/json/value.hpp>

namespace switchboard::server {

// The resume value checked against what the thread's pause asks (a
// non-empty string for a question; {"decision": "approve"|"reject",
// "reason"} for an approval); a map keyed by the interrupt id is unwrapped.
// api_error 422 for a value that does not answer it, 409 when the thread
// is not waiting for input.
boost::json::value checked_resume(const thread_record& t, boost::json::value resume);

// A checked resume value as the answer or the decision of `options`.
void apply_resume(orchestrator::resume_options& options, const boost::json::value& resume);

}  // namespace switchboard::server
