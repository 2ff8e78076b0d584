// The A2A v1.0 shapes of `switchboard serve`'s A2A server
// (a2a_endpoint.hpp; docs/interop.md): a run as a Task, a workflow as an
// agent card, a message as a run's input or a paused run's reply, and the
// JSON-RPC errors the specification names. Pure functions: no I/O.
#pragma once

#include <switchboard/orchestrator/hub.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace switchboard::server::a2a {

inline constexpr std::string_view protocol_version = "1.0";

// JSON-RPC error codes (A2A §5.4, JSON-RPC 2.0).
namespace code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
inline constexpr int task_not_found = -32001;
inline constexpr int task_not_cancelable = -32002;
inline constexpr int push_notification_not_supported = -32003;
inline constexpr int unsupported_operation = -32004;
inline constexpr int extended_card_not_configured = -32007;
inline constexpr int version_not_supported = -32009;
}  // namespace code

// {"jsonrpc":"2.0","id":id,"error":{code,message,data:[ErrorInfo]}}: the
// ErrorInfo's reason is the error's name (TASK_NOT_FOUND, ...).
boost::json::object error_response(const boost::json::value& id, int error_code, std::string message);
boost::json::object result_response(const boost::json::value& id, boost::json::value result);

// The HTTP+JSON binding's error (A2A §11.6): the HTTP status the error
// code maps to, and the google.rpc.Status body {"error": {code, status,
// message, details: [ErrorInfo]}}.
struct rest_error {
  int http_status = 500;
  boost::json::object body;
};
rest_error rest_error_of(int error_code, std::string message);

// "TASK_STATE_INPUT_REQUIRED" and so on, by the run's status: paused and
// interrupted runs are INPUT_REQUIRED (a reply continues them).
std::string_view task_state(orchestrator::workflow_status status) noexcept;
// The state names ListTasks' `status` filter takes, as a run status;
// nullopt for a name that is no task state.
std::optional<orchestrator::workflow_status> run_status_of(std::string_view task_state) noexcept;

// The Task of a run. contextId is the workflow's name. A paused run's
// status message asks its question (a text part) or lists the calls awaiting
// a decision (a text part and a data part {pending_calls, reply}); a
// completed run has the artifact "result": the final envelope (data part)
// and its explanation (text part); a failed run's status message is the
// error. `history`: the request and the answers given, as messages.
boost::json::object task_of(const orchestrator::workflow_state& state, bool with_history = false);
// A task just started, not yet stored: TASK_STATE_SUBMITTED.
boost::json::object submitted_task(std::string_view task_id, std::string_view context_id);

// What a SendMessage's message says, read and checked.
struct incoming_message {
  std::string message_id;
  std::string task_id;      // "" for a new task
  std::string context_id;   // "" when not given
  std::string text;         // the text parts, joined by newlines
  std::optional<boost::json::object> data;  // the first data part that is an object
};
// Reads params.message of SendMessage / SendStreamingMessage; nullopt and
// `error` naming what is wrong.
std::optional<incoming_message> read_message(const boost::json::object& params, std::string& error);

// The workflow's input from a new task's message: the data part as it is,
// else {"request": text}.
boost::json::object workflow_input(const incoming_message& message);
// The `resume` arguments (host::workflow_tools) that continue `state` with
// the reply: the text as the answer to a question; a data part
// {decision: approve|reject, reason?} on calls awaiting approval; nothing for
// an interrupted run. nullopt and `error` when the reply does not fit.
std::optional<boost::json::object> resume_arguments(const orchestrator::workflow_state& state,
                                                    const incoming_message& message, std::string& error);

struct card_settings {
  std::string name;          // the workflow's
  std::string description;   // the workflow file's ("" = none)
  boost::json::object input_schema;  // the workflow's input, as its MCP tool's
  std::string rpc_url;       // absolute URL of its JSON-RPC endpoint, also the HTTP+JSON binding's base
  bool bearer_auth = false;  // serve requires a token
};
boost::json::object agent_card(const card_settings& settings);

}  // namespace switchboard::server::a2a
