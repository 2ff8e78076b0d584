// What makes an agent's tool calls exactly-once and approvable: the journal
// of one step's tool loop, which the hub keeps durably, and the pause the
// loop asks for when a call needs the user's approval.
//
// The tool loop (llm_agent.hpp, "Tools") writes to the journal, before it
// acts, each model turn that asks for tool calls, a "started" mark before
// every call of a tool that is not idempotent, and each call's result. When
// the step runs again (after a crash, an interruption or an approval), the
// loop replays the journal instead of asking the model again: a recorded
// result is reused and never executed twice; a non-idempotent call that was
// started but has no result is reported as `unknown_outcome` (to the model,
// and in the step's record for the user), never run again; an idempotent
// one is repeated.
//
// A call that needs approval (tool::needs_approval(), or the run's
// approval_policy) is not made: the loop runs the turn's other calls, then
// throws approval_required with the pending calls. The hub pauses the run
// (status awaiting_approval) and, on resume with a decision, adds an
// "approval" record per pending call before the step runs again.
//
// Records are JSON objects with "kind": "turn" {round, text, calls: [{id,
// name, arguments}]}, "started" {round, id}, "result" {round, id, content,
// is_error, record}, "approval" {round, id, approved, reason}. The hub adds "step" and
// "agent" and keeps only the records of the step in flight. Calls are
// named by round and id together: some models reuse ids across turns.
//
// Thread-safety: a journal belongs to one agent call; append() may be
// awaited by the concurrent calls of one turn (all on the call's executor).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {

class tool;

class tool_journal {
 public:
  virtual ~tool_journal() = default;
  // The records kept for this agent's call in the step in flight, oldest
  // first: those of earlier runs of the step, then those appended since.
  virtual std::vector<boost::json::object> records() const = 0;
  // Keeps `record`; completes once it is durable (with a store: saved, so
  // a crash after it cannot lose it). Throws when it cannot be kept (the
  // store failed, the run lost its ownership, the step was given up): the
  // loop then stops without acting.
  virtual boost::asio::awaitable<void> append(boost::json::object record) = 0;
};

// A journal kept in memory only: the default when an agent runs outside a
// hub (exactly-once within the call, nothing survives the process).
class memory_tool_journal final : public tool_journal {
 public:
  std::vector<boost::json::object> records() const override { return records_; }
  boost::asio::awaitable<void> append(boost::json::object record) override;

 private:
  std::vector<boost::json::object> records_;
};

// One call the model asked for that waits for the user's decision.
struct pending_tool_call {
  std::string agent;      // whose model asked
  int round = 1;          // the loop's round (ids are unique within a round only)
  std::string id;         // the model's tool_call id
  std::string tool;
  boost::json::value arguments;  // validated against the tool's schema
  std::string description;       // the tool's description, for the person deciding
};

// Thrown by the tool loop when calls need approval; the hub turns it into
// the awaiting_approval pause. Not an agent failure: nothing is retried.
class approval_required : public std::runtime_error {
 public:
  explicit approval_required(std::vector<pending_tool_call> calls);
  const std::vector<pending_tool_call>& calls() const noexcept { return calls_; }

 private:
  std::vector<pending_tool_call> calls_;
};

// Decides whether one call needs the user's approval: (agent, tool,
// validated arguments) -> true to ask. Set on the hub (hub_options) to
// ask for more (or fewer) calls than the tools' own needs_approval() flags.
// Called on the agent's executor; must not block and must not throw.
using approval_policy =
    std::function<bool(std::string_view agent, const tool& t, const boost::json::value& arguments)>;

}  // namespace switchboard::agents
