// The agent interface: a spoke the hub calls. Native agents (plain C++) and
// LLM-backed agents are equals behind it.
//
// run() completes with the agent's envelope. It may also throw: the hub
// turns an exception into an error record naming the agent (a model_error
// keeps its retryable flag). Cancellation: see agent_context.hpp. Lifetime:
// the agent must outlive every pending run(); the registry owns agents.
//
// Thread-safety: run() may be called concurrently for different workflows;
// an agent keeps no per-run state in members (or guards it).
#pragma once

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/protocol/envelope.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace switchboard::agents {

class agent {
 public:
  virtual ~agent() = default;

  // Unique within a registry: "scheduling".
  virtual std::string_view name() const noexcept = 0;
  // One or two sentences a coordinator model reads to choose an agent.
  virtual std::string_view description() const noexcept = 0;
  // name@version of the schema `data` must satisfy: "scheduling.output@1".
  virtual std::string output_schema() const = 0;
  // name@version of the schema the workflow input must satisfy, if any.
  virtual std::optional<std::string> input_schema() const { return std::nullopt; }
  // The prompt version this agent uses by default ("" for native agents).
  virtual std::string prompt_version() const { return {}; }

  virtual boost::asio::awaitable<protocol::envelope> run(agent_context& context) = 0;
};

}  // namespace switchboard::agents
