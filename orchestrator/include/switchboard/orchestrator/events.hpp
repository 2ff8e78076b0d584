// Events a hub emits for every step of every workflow, delivered to
// observers. The hub's own audit log, its spdlog output (explanations at
// info, reasoning at debug) and its metrics are observers of the same events.
//
// An event refers to data owned by the run (string_views, pointers); it is
// valid only during on_event(). Copy what you keep.
//
// Thread-safety: on_event() is called on the workflow's strand; different
// workflows call it concurrently from different threads when the hub's
// io_context runs on a pool, so an observer shared by workflows must be
// thread-safe. on_event() must not block and must not throw.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/protocol/envelope.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace switchboard::orchestrator {

enum class event_kind {
  workflow_started,    // a run began (also after a resume)
  step_started,        // a node's agent is about to run
  step_completed,      // an agent returned a valid envelope
  step_failed,         // an agent failed (after retries); `error` is set
  routed,              // a route chose the next node; `target`, `condition`
  paused,              // awaiting clarification; `question`
  resumed,             // a paused workflow continues with an answer, or an interrupted one continues
  workflow_completed,  // reached an `end` node
  workflow_failed,     // failed; `error` is set
  workflow_cancelled,  // cancelled
  workflow_interrupted,  // stopped between steps, resumable (workflow_handle::interrupt)
  approval_requested,  // tool calls wait for the user's approval; `question` summarises them
  tool_called,         // one tool call of the step that just ended; `tool_call` is set
  // Streaming (only to observers whose wants_deltas() is true): an agent's
  // model answer as it arrives, before the step ends. See "Streaming" below.
  text_delta,          // the next piece of the agent's model text; `text`
  tool_call_delta,     // the next piece of a tool call the model is writing; `tool_delta`
  stream_restarted,    // the model call was retried: forget this agent's deltas since its last restart
};
std::string_view to_string(event_kind kind) noexcept;

struct event {
  event_kind kind;
  std::string_view workflow_id;
  std::string_view workflow_name;
  std::int64_t step = 0;
  std::string_view node;
  std::string_view agent;
  const protocol::envelope* envelope = nullptr;  // step_completed
  const protocol::error_record* error = nullptr; // step_failed, workflow_failed
  std::string_view target;                       // routed
  std::string_view condition;                    // routed; resumed after an approval: "approved" or "rejected"
  std::string_view question;                     // paused, approval_requested
  // tool_called: {round, id, tool, arguments, is_error, result or error,
  // duration_ms, "replayed" when an earlier run of the step made it}
  const boost::json::object* tool_call = nullptr;
  std::string_view text;                         // text_delta: whole UTF-8 characters, untrusted
  const models::stream_sink::tool_call_delta* tool_delta = nullptr;  // tool_call_delta
  std::string_view prompt_version;
  std::chrono::microseconds duration{0};         // step_completed/step_failed
  models::token_usage tokens;
  int attempts = 0;
  // Which start of the run this event belongs to: 1 for its first start,
  // one more at each resume or continuation (workflow_state::starts), so
  // that an observer in any process can name the stretch of the run it
  // sees — tracing derives a workflow span's id from it and links each
  // stretch to the one before without storing anything. 0: not known.
  std::int64_t segment = 0;
};

// Streaming: an observer that returns true from wants_deltas() makes the
// hub stream every LLM agent's model calls (agent_context::stream) and
// receives text_delta, tool_call_delta and stream_restarted events, with
// workflow_id, workflow_name, step, node (the step's node, or its parallel
// group) and agent set. They arrive on the workflow's strand like every
// event, in the order the model sent them, before the step's
// step_completed; an agent the hub gave up (its deadline passed) may still
// deliver a few after it. A delta is untrusted model output: escape it
// before it reaches a terminal. The final answer is still the envelope of
// step_completed: deltas only show it early. Without such an observer
// nothing is streamed and nothing costs more.
class observer {
 public:
  virtual ~observer() = default;
  virtual void on_event(const event& e) noexcept = 0;
  // Asked when an agent call starts.
  virtual bool wants_deltas() const noexcept { return false; }
};

}  // namespace switchboard::orchestrator
