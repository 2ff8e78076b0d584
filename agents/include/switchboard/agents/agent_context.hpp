// What an agent sees while it runs: the workflow input, earlier agents'
// outputs, the coordinator's additional instructions, the clarification
// answers given so far, a logger, and the models configured for the run.
//
// The hub builds one context per agent call and keeps everything it points
// to alive until run() completes. An agent reads it and must not keep
// references past its run(). Not thread-safe: an agent uses its context from
// its own coroutine only.
//
// Cancellation is Asio's: the hub binds a cancellation slot to the agent's
// coroutine; awaited operations (timers, model calls) end with
// operation_aborted when the workflow is cancelled or the node times out.
// The hub does not wait for the agent to notice: at the deadline the step
// fails, and whatever the agent returns afterwards is dropped. Everything
// the context points to stays alive until run() completes, however late.
#pragma once

#include <switchboard/agents/model_terms.hpp>
#include <switchboard/models/call_limits.hpp>
#include <switchboard/models/chat_model.hpp>
#include <switchboard/agents/tool_journal.hpp>
#include <switchboard/agents/trace_parents.hpp>
#include <switchboard/protocol/envelope.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace spdlog { class logger; }

namespace switchboard::agents {

// Read access to the outputs agents produced earlier in this workflow.
// The orchestrator's state implements it; output_map is a plain one for
// tests and for running an agent on its own.
class agent_outputs {
 public:
  // The latest envelope of `agent`, or nullptr if it has not run.
  virtual const protocol::envelope* latest(std::string_view agent) const = 0;
  // Names of the agents that have produced output, in first-run order.
  virtual std::vector<std::string> agent_names() const = 0;

 protected:
  ~agent_outputs() = default;
};

class output_map final : public agent_outputs {
 public:
  void set(std::string agent, protocol::envelope value);
  const protocol::envelope* latest(std::string_view agent) const override;
  std::vector<std::string> agent_names() const override;

 private:
  std::vector<std::pair<std::string, protocol::envelope>> outputs_;
};

// The models a run may use, by role ("default", "coordinator", ...), and
// the limits the run's invoker sets on every structured call made with them
// (call_limits.hpp: attempts, total time, forced output mode), which LLM
// agents apply over their prompt files' own settings.
class model_set {
 public:
  void add(std::string role, std::shared_ptr<chat_model> model);
  // The model for `role`, else the "default" one, else nullptr.
  chat_model* find(std::string_view role = "default") const;
  bool empty() const noexcept { return models_.empty(); }

  void set_limits(call_limits limits) { limits_ = limits; }
  const call_limits& limits() const noexcept { return limits_; }

 private:
  std::map<std::string, std::shared_ptr<chat_model>, std::less<>> models_;
  call_limits limits_;
};

struct agent_context {
  const boost::json::value& input;             // the workflow input
  const agent_outputs& outputs;                // earlier agents' envelopes
  std::string additional_instructions;         // from the coordinator, may be empty
  std::span<const std::string> clarification_answers;  // oldest first
  const model_set& models;
  std::shared_ptr<spdlog::logger> logger;      // never null
  std::string prompt_version;                  // requested version, "" = newest

  // Filled by the agent for the audit log.
  token_usage usage{};
  std::string used_prompt_version;
  std::vector<std::string> applied_policies;
  // The model's raw text of the answer the agent returned (LLM agents); the
  // hub keeps the start of it (16 KiB) in the step's audit entry.
  std::string raw_text{};
  // How the model answered, one object per attempt of the structured ladder
  // (attempt_record::to_json: stage, repairs, origin, stop reason, errors):
  // the hub keeps it in the step's audit entry.
  boost::json::array model_attempts{};
  // The id of the workflow run this call belongs to, the same across
  // resumes and processes (empty when an agent runs outside a hub). An agent
  // with side effects keys them on it so that a step the hub runs again
  // after a crash does not repeat them.
  std::string workflow_id{};
  // Every tool call the agent's tool loop ran (llm_agent.hpp), in the order
  // the model made them: {round, id, tool, arguments (the model's text),
  // is_error, result (the tool's JSON, or the text sent when it was cut) or
  // error {code, message, retryable}, duration_ms}. Empty without tools.
  boost::json::array tool_calls{};
  // The journal of this call's tool loop (tool_journal.hpp), kept durably
  // by the hub so that no recorded tool call runs twice; null: the loop
  // keeps one in memory for this call only.
  std::shared_ptr<tool_journal> journal{};
  // Whether a tool call needs the user's approval; null: the tool's own
  // needs_approval(). Set by the hub from hub_options::approval_policy;
  // shared, so a call the hub gave up may outlive the hub.
  std::shared_ptr<const approval_policy> needs_approval{};
  // --- streaming (docs/models.md, "Streaming") ---
  // Where the agent's model calls stream their answers as they arrive
  // (chat_model.hpp's stream_sink); null: no streaming. Set by the hub when
  // an observer wants deltas; llm_agent puts it on every request it sends
  // (the tool loop's turns included). Shared so that it lives as long as the
  // context, also when the hub gave the call up. Called from the agent's
  // coroutine: the sink forwards the pieces to where they belong.
  std::shared_ptr<stream_sink> stream{};
  // --- tracing (trace_parents.hpp) ---
  // Where this call's model requests and tool calls sit in the run's trace;
  // null when tracing is off (then no request carries a trace context).
  std::shared_ptr<const trace_parents> traces{};
};

}  // namespace switchboard::agents
