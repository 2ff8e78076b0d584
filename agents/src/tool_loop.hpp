// The tool loop of an llm_agent (llm_agent.hpp, "Tools"). Internal.
//
// run_tool_loop asks the model with the prompt's tools offered, runs the
// tools it calls (the calls of one turn concurrently, each validated, timed
// and recorded in context.tool_calls) and sends their results back, until
// the model answers without tool calls; that answer becomes `out` as
// complete_structured would make it (directly when its text is a valid
// value, else by complete_structured over the conversation).
//
// Usage: every tool turn's usage (and a final turn not taken directly) is
// added to context.usage as it comes; `out.usage` and a thrown
// structured_output_error's usage hold only the rest, so a caller adding
// those to context.usage counts every token once.
// Completion: writes `out`, or throws structured_output_error (rounds,
// token budget or time exhausted; the ladder's failures), model_error from
// the model (model_error(cancelled) when the awaiting coroutine is
// cancelled, whether in a model call or while tools run; running tools are
// cancelled with it).
// Lifetime: model, context, *settings.tools, *settings.allowed and `out`
// must outlive the operation.
#pragma once

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/models/structured.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace switchboard::agents {
class tool_registry;
}

namespace switchboard::agents::detail {

struct tool_loop_settings {
  const tool_registry* tools = nullptr;               // not null
  const std::vector<std::string>* allowed = nullptr;  // the prompt's tools; not null
  std::string agent;                                  // for messages and tool_context
  int max_rounds = 8;
  std::chrono::milliseconds tool_timeout{30'000};
  std::size_t max_result_bytes = 64 * 1024;
};

boost::asio::awaitable<void> run_tool_loop(chat_model& model, chat_request request, structured_options options,
                                           tool_loop_settings settings, agent_context& context,
                                           structured_result& out);

}  // namespace switchboard::agents::detail
