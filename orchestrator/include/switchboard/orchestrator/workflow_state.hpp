// The state of one workflow run, owned by the hub: the input, every agent's
// envelopes (latest plus the history of earlier runs of the same agent), the
// audit log, error records, the status and, while paused, the clarification
// question. It is what hub::run() returns and what a checkpoint stores
// (to_json / from_json).
//
// Thread-safety: none; while a workflow runs its state is touched only on
// that workflow's strand. A returned state is a plain value.
#pragma once

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/agents/tool_journal.hpp>
#include <switchboard/orchestrator/workflow_status.hpp>
#include <switchboard/protocol/envelope.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::orchestrator {

struct checkpoint;

// The most of a model's raw text an audit entry keeps: its first 16 KiB.
inline constexpr std::size_t max_raw_text_bytes = 16 * 1024;

// One step of the audit log.
struct audit_entry {
  std::int64_t step = 0;           // 1-based
  std::string node;
  std::string agent;               // "" for terminal nodes
  std::string prompt_version;
  double confidence = 0;
  std::string explanation;
  std::string route;               // the node chosen next ("" when none)
  std::string condition;           // the condition that chose it, or why ("clarification: confidence 0.4 < 0.7")
  std::chrono::microseconds duration{0};
  models::token_usage tokens;
  int attempts = 1;                // calls made, retries included
  std::string note;                // e.g. the coordinator's choice or why it fell back
  // The model's raw text of the step's last answer (LLM agents, synthesis by
  // a model; "" for native agents): what the envelope was parsed from, for
  // finding out why an answer was refused or misread. At most
  // max_raw_text_bytes, cut at a character boundary; bytes that are not
  // UTF-8 become U+FFFD.
  std::string raw_text;
  std::int64_t raw_text_bytes = 0;  // the whole text's length when raw_text was cut, else 0
  // How the model answered (LLM agents): one object per attempt of the
  // structured ladder — mode, stage, repairs, origin, stop reason, reason and
  // errors (at most 20) — so a reader can see what was repaired or refused.
  boost::json::array model_attempts;
  // Every tool call the step's agents made, in order: {round, id, tool,
  // arguments, is_error, result or error, duration_ms, agent}, "replayed"
  // when an earlier run of the step made it (it was not made again).
  boost::json::array tool_calls;

  // Sets raw_text and raw_text_bytes from a model's whole text.
  void keep_raw_text(std::string_view text);
};

struct clarification_request {
  std::string question;
  std::string node;                // the node that runs again on resume
  std::string agent;               // the unsure agent ("" for a group)
  int round = 1;                   // 1-based
};

// The calls a paused run waits to have approved (status awaiting_approval).
// The node runs again on resume: calls already made are replayed from the
// step's tool journal, the approved ones are made, the rejected ones are
// answered to the model as rejected.
struct approval_request {
  std::string node;                // the node that runs again on resume
  std::vector<agents::pending_tool_call> calls;

  // Names the pending calls (agent, round and id of each): what a decision
  // was made on (resume_options::expected_calls).
  std::string calls_key() const;
};

struct agent_history {
  std::string agent;
  std::vector<protocol::envelope> runs;  // oldest first; back() is the latest
};

class workflow_state final : public agents::agent_outputs {
 public:
  std::string id;
  std::string workflow_name;
  boost::json::value input;
  workflow_status status = workflow_status::running;
  std::int64_t step = 0;                      // steps taken, resumes included
  std::int64_t starts = 0;                    // times the run started or continued (event::segment)
  std::string next_node;                      // where the run continues
  std::vector<agent_history> outputs;         // first-run order
  std::vector<audit_entry> audit;
  std::vector<protocol::error_record> errors;
  std::optional<clarification_request> clarification;  // while awaiting_clarification
  std::vector<std::string> clarification_answers;      // oldest first
  std::optional<approval_request> approval;   // while awaiting_approval
  // The tool journal of the step in flight (agents/tool_journal.hpp), each
  // record with its "step" and "agent": what a step that runs again replays.
  // Kept while the run is paused for approval or interrupted mid-step.
  std::vector<boost::json::object> tool_records;
  std::optional<protocol::envelope> result;   // the last envelope before `end`

  // agents::agent_outputs
  const protocol::envelope* latest(std::string_view agent) const override;
  std::vector<std::string> agent_names() const override;
  // Every run of `agent`, oldest first (empty if it never ran).
  const std::vector<protocol::envelope>& history(std::string_view agent) const;

  void add_output(std::string_view agent, protocol::envelope value);
  // The first error record, or nullptr.
  const protocol::error_record* first_error() const noexcept;

  // Serialized form (checkpoints, `switchboard run --json`); versioned.
  boost::json::value to_json() const;
  // Throws orchestrator_error(corrupt_checkpoint) naming the field.
  static workflow_state from_json(const boost::json::value& json);
  // The state a checkpoint holds (head + journal), its status as the store
  // reports it (a run whose owner died reads as interrupted). Throws
  // orchestrator_error(corrupt_checkpoint) naming the workflow and field.
  static workflow_state from_checkpoint(const checkpoint& cp);
};

}  // namespace switchboard::orchestrator
