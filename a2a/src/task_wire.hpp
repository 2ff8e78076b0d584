// The A2A v1.0 shapes the client sends and reads: the messages that start
// a task and reply to it, and what a Task (or a direct Message) says. Pure
// functions: no I/O. Internal.
#pragma once

#include <switchboard/a2a/remote_agent_config.hpp>
#include <switchboard/protocol/envelope.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace switchboard::a2a {

// The text parts of a message or artifacts, joined by newlines, and the
// first data part.
struct parts_read {
  std::string text;
  std::optional<boost::json::value> data;
};

// What a remote task says, read and checked.
struct task_view {
  std::string id;          // "" for a direct Message answer
  std::string context_id;
  std::string state;       // "TASK_STATE_COMPLETED", ...
  parts_read status;       // status.message
  parts_read artifacts;    // every artifact's parts, in order
};

inline constexpr std::size_t max_id_bytes = 256;  // a task's or context's id

inline constexpr std::string_view state_submitted = "TASK_STATE_SUBMITTED";
inline constexpr std::string_view state_working = "TASK_STATE_WORKING";
inline constexpr std::string_view state_completed = "TASK_STATE_COMPLETED";
inline constexpr std::string_view state_input_required = "TASK_STATE_INPUT_REQUIRED";

// The message that starts a task: a text part with the request (the input
// itself when it is a string, else its "request" field), a data part with
// an input that is not a string, and the coordinator's instructions as a
// last text part.
boost::json::object new_message(std::string_view message_id, const boost::json::value& input,
                                std::string_view instructions);
// The reply to a task asking for input: a JSON object answer as a data
// part, any other as a text part.
boost::json::object reply_message(std::string_view message_id, std::string_view task_id,
                                  std::string_view context_id, std::string_view answer);

// A Task (GetTask's result, SendMessage's "task"). Throws remote_failure
// (invalid_remote_response) naming what is missing.
task_view read_task(const boost::json::value& task, const remote_agent_config& config);
// SendMessage's result: {"task": ...} or {"message": ...} (a direct answer,
// read as a completed task whose artifact is the message).
task_view read_send_result(const boost::json::value& result, const remote_agent_config& config);

// A task that stopped (not submitted, not working, not asking): the
// envelope of a completed one, or a failed envelope saying why not.
protocol::envelope outcome_of(const task_view& task, const remote_agent_config& config);
// The question a task asking for input puts (its status message; at most
// max_question_bytes).
std::string question_of(const task_view& task, const remote_agent_config& config);

}  // namespace switchboard::a2a
