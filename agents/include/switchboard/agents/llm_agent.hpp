// llm_agent: an agent built from a prompt file (all loaded versions of one
// prompt name) and its output schema. Per run it
//
//   1. picks the prompt version the run asks for (context.prompt_version,
//      newest by default),
//   2. applies the prompt policies whose triggers the request mentions,
//   3. renders the system and user templates,
//   4. calls complete_structured on the model of the prompt's role with the
//      FULL envelope schema (schema_registry::envelope_schema), so the model
//      answers {data, explanation, confidence, reasoning} in one value;
//      the prompt file's max_attempts and output_mode apply unless the run's
//      model_set carries call_limits (the invoker's --max-attempts,
//      --timeout, --mode), which win,
//   5. applies the declared confidence rules and explanation template and
//      records in `reasoning` what was applied,
//   6. records usage, the prompt version and the applied policies in the
//      context.
//
// Tools (docs/prompt-files.md, "Tools"): when the prompt file names tools
// and the options carry a tool registry, step 4 becomes the tool loop
// (agents/src/tool_loop.hpp): the request offers those tools (tool_choice
// auto); while the model answers with tool calls, the agent runs them —
// the calls of one turn concurrently — and sends their results back:
//   - arguments are validated against the tool's schema first
//     (tool_registry::validate_arguments); invalid ones, and a tool the
//     prompt does not name, go back to the model as an error result
//     (code "invalid_arguments" / "unknown_tool") and the tool is not called;
//   - each call has options.tool_timeout (error result "timeout", the call
//     cancelled); an exception from a tool becomes error result
//     "tool_failed" naming the tool (it never escapes);
//   - a result longer than options.max_tool_result_bytes is cut, with a note;
//   - at most options.max_tool_rounds turns with tool calls: one more ends
//     the run with an error envelope ("structured_output_failed", reason
//     tool_rounds_exhausted, the message naming max_tool_rounds);
//   - the token budget and the call's timeout (prompt file / call_limits)
//     span the whole loop, final answer included.
// The model's answer without tool calls is the final one: if its text is a
// valid envelope (parsed as complete_structured parses: direct, extract,
// repair, then validated; only when the model stopped normally), it is
// taken without another request. A refusal or a filtered answer ends the
// call (an error envelope with the model's words, as the ladder does);
// otherwise complete_structured runs on the whole conversation (tools still
// declared, tool_choice none) with the attempts left (that turn was the
// first) and, after a truncated turn, room to finish, so the ladder's
// re-asks, truncation and stop-reason rules apply. Every call is
// recorded in context.tool_calls and logged at debug level.
//
// Failures:
//   - no attempt validates (structured_output_error): an error envelope,
//     confidence 0, the reason in `reasoning`, error record
//     {type: "structured_output_failed" or "token_budget_exhausted",
//      message naming the agent, schema and last reason, retryable: false}.
//     The hub routes on it; it is never disguised as an answer.
//   - transport errors (model_error: timeout, 429, 5xx, cancelled, ...) are
//     rethrown unchanged. The hub turns them into an error record that keeps
//     the error's retryable flag and retries retryable ones; catching them
//     here would hide that from its retry policy.
//   - a template variable that cannot be resolved: agent_error
//     (template_variable_unknown) naming file and line; an unknown requested
//     prompt version: agent_error(unknown_prompt_version); no model for the
//     prompt's role: model_error(not_configured).
//
// Completion/cancellation: as complete_structured; cancelling the awaiting
// coroutine ends the model call with model_error(cancelled), rethrown.
// Lifetime: the agent and its schema registry must outlive pending runs.
// Thread-safety: immutable after construction; run() may be called
// concurrently for different contexts.
#pragma once

#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/prompt_file.hpp>
#include <switchboard/agents/prompt_library.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace switchboard::protocol { class parser_metrics; }
namespace switchboard::models { struct structured_result; }

namespace switchboard::agents {

class agent_registry;
class tool_registry;

struct llm_agent_options {
  // Policies that apply on top of the prompt file's own (e.g. shared by
  // every agent of an application). A name clash with the file's policies
  // is refused.
  std::vector<prompt_policy> extra_policies;
  protocol::parser_metrics* metrics = nullptr;  // must outlive the agent
  // The tools the agent's prompt files may name; nullptr: none, and a
  // prompt's "tools" are not offered (the run is as without them). Must
  // outlive the agent. Set by register_prompt_agents from its `tools`.
  const tool_registry* tools = nullptr;
  // Model turns with tool calls one run may answer (see above).
  int max_tool_rounds = 8;
  // How long one tool call may take.
  std::chrono::milliseconds tool_timeout{30'000};
  // A tool result's text (to_json serialized) beyond this is cut.
  std::size_t max_tool_result_bytes = 64 * 1024;
};

class llm_agent final : public agent {
 public:
  // `versions`: every version of one prompt (same name). Throws
  // agent_error(prompt_file_invalid) when they are empty or disagree on
  // name or output schema, agent_error(unknown_output_schema) naming the
  // file when the schema is not registered, and
  // agent_error(template_variable_unknown) when the explanation template
  // names a member the schema does not declare.
  llm_agent(std::vector<prompt_file> versions, std::shared_ptr<protocol::schema_registry> schemas,
            llm_agent_options options = {});

  // Every version of `name` in the library.
  static std::shared_ptr<llm_agent> from_library(const prompt_library& library,
                                                 std::string_view name,
                                                 std::shared_ptr<protocol::schema_registry> schemas,
                                                 llm_agent_options options = {});

  std::string_view name() const noexcept override;
  std::string_view description() const noexcept override;
  std::string output_schema() const override;
  std::optional<std::string> input_schema() const override;
  std::string prompt_version() const override;  // the newest: "nl_parser.v2"
  // Some version's prompt names tools and the options carry a tool registry.
  bool uses_tools() const noexcept override;

  boost::asio::awaitable<protocol::envelope> run(agent_context& context) override;

  // The prompt a run with `requested` version uses (throws as above).
  const prompt_file& select(std::string_view requested) const;
  // The request a run would send, without sending it; fills `applied` with
  // the names of the policies that matched. Used by run() and by tests.
  chat_request build_request(const agent_context& context, const prompt_file& prompt,
                             std::vector<std::string>& applied) const;

  // The newest version's file, for origins ("prompt:<file>").
  const prompt_file& newest() const noexcept { return versions_.back(); }

 private:
  // What run() sends and how it reads the answer; built before the model is
  // awaited, by plain functions, so the coroutine's frame stays small.
  struct prepared_call;
  // `result` receives the model's validated answer when the call's `answer` completes.
  prepared_call prepare(agent_context& context, structured_result& result) const;
  protocol::envelope finish(agent_context& context, const prepared_call& call, structured_result result) const;

  std::vector<prompt_file> versions_;  // oldest first
  std::shared_ptr<protocol::schema_registry> schemas_;
  llm_agent_options options_;
  protocol::compiled_schema envelope_schema_;
};

// Registers one llm_agent per prompt name of `library` with origin
// "prompt:<newest file>"; returns how many. Throws as add() and llm_agent.
// With `tools`, every tool a prompt file names ("tools") must be in it:
// otherwise agent_error(unknown_tool) naming the file and the tool, before
// anything is registered; the agents then run the tool loop with it
// (options.tools = tools; `tools` must outlive them). Without `tools`,
// options.tools is used as given.
std::size_t register_prompt_agents(agent_registry& registry, const prompt_library& library,
                                   llm_agent_options options = {}, const tool_registry* tools = nullptr);

}  // namespace switchboard::agents
