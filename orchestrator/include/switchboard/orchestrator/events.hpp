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

#include <switchboard/agents/model/chat_model.hpp>
#include <switchboard/protocol/envelope.hpp>

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
  std::string_view condition;                    // routed
  std::string_view question;                     // paused
  std::string_view prompt_version;
  std::chrono::microseconds duration{0};         // step_completed/step_failed
  agents::token_usage tokens;
  int attempts = 0;
};

class observer {
 public:
  virtual ~observer() = default;
  virtual void on_event(const event& e) noexcept = 0;
};

}  // namespace switchboard::orchestrator
