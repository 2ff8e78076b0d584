// What the workflow tools (workflow_tools.hpp) send back and ask: the
// tools/call results for each way a run stops, the elicitation requests for
// a question or an approval and the reading of their answers, and the
// checks of a tool's arguments. Internal to the host library.
//
// Thread-safety: pure functions.
#pragma once

#include <switchboard/mcp/server.hpp>
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>
#include <switchboard/protocol/validation.hpp>

#include <boost/json/object.hpp>

#include <optional>
#include <string>

namespace switchboard::host::detail {

// The tools/call result for a run that stopped as `state` says (completed,
// failed, cancelled, paused, interrupted).
boost::json::object run_result(const orchestrator::workflow_state& state);
// A result with isError saying what went wrong before or around a run.
boost::json::object error_result(std::string message);

// elicitation/create for the run's question: the message and a schema of
// one string field "answer".
std::string question_message(const orchestrator::workflow_state& state);
boost::json::object answer_schema();
// The answer an accepted elicitation carries, or nullopt.
std::optional<std::string> answer_from(const mcp::elicitation_reply& reply);

// elicitation/create for pending tool calls: the calls described, and a
// schema of "decision" (approve|reject) and an optional "reason".
std::string approval_message(const orchestrator::workflow_state& state);
boost::json::object decision_schema();
std::optional<orchestrator::approval_decision> decision_from(const mcp::elicitation_reply& reply);

// A workflow tool's input schema: `entry_schema` when it describes an
// object, else the request form ({"request": string, more string fields}).
boost::json::object input_schema_for(const std::optional<protocol::compiled_schema>& entry_schema);
// Why `arguments` may not start the workflow, or nullopt.
std::optional<std::string> check_input(const boost::json::object& arguments,
                                       const std::optional<protocol::compiled_schema>& entry_schema);

// The resume tool's input schema, and its arguments read.
boost::json::object resume_input_schema();
struct resume_arguments {
  std::string run_id;
  std::optional<std::string> answer;
  std::optional<orchestrator::approval_decision> decision;
};
// The arguments, or the reason they are not valid (as `error`).
std::optional<resume_arguments> read_resume_arguments(const boost::json::object& arguments, std::string& error);

}  // namespace switchboard::host::detail
