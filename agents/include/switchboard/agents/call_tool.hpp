// Calling a tool from a native (C++) agent with the same guarantees as the
// LLM tool loop (tool_journal.hpp): inside a hub the call is journaled
// before it is made, so it is never made twice across resumes and crashes
// (a recorded result is returned again; a non-idempotent call cut off by a
// crash returns the error `unknown_outcome`), and a tool that needs approval
// pauses the run until the user decides.
//
//   boost::asio::awaitable<protocol::envelope> run(agent_context& context) override {
//     auto booked = co_await call_tool(context, name(), tools_, "calendar.book",
//                                      {{"slot", slot}}, "book:" + slot);
//     if (!booked.ok()) ... booked.error().code == "rejected" / "unknown_outcome" ...
//   }
//
// The agent must return true from agent::uses_tools(), or the hub hands it
// no journal (the call is then exactly-once within this run() only), and
// must let approval_required propagate out of run(): that is the pause.
//
// `call_id` names the call within the agent's step: the same call made
// again when the step runs again must have the same id (derive it from
// what the call does, not from a counter that could differ), two different
// calls of one step different ids.
//
// Completion: the tool's result, or an error result (unknown_tool,
// invalid_arguments, rejected, unknown_outcome, timeout, tool_failed, and
// call_id_conflict when the step's journal holds a result under `call_id`
// for another tool or other arguments: that call is not made);
// throws approval_required when the call waits for a decision, and what the
// journal throws when it cannot keep a record (the call is then not made).
// Cancellation: as the tool loop's (the tool's call is cancelled).
// Lifetime: `context` and `tools` must outlive the operation.
#pragma once

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/agents/tool.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace switchboard::agents {

class tool_registry;

boost::asio::awaitable<tool_result> call_tool(agent_context& context, std::string_view agent,
                                              const tool_registry& tools, std::string_view tool_name,
                                              boost::json::value arguments, std::string call_id,
                                              std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace switchboard::agents
