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
//
// Blocking: the hub runs agents on the threads of its io_context, many
// workflows per thread. An agent whose run() blocks its thread (a sleep, a
// synchronous library call, long CPU work) stalls every workflow on that
// thread, and the node's timeout cannot fire there until it returns (the
// late answer is still refused). Such an agent says so with blocks_thread(),
// or is registered through run_on_thread_pool(): the hub then runs it on a
// bounded thread pool of its own (hub_options::blocking_threads), so other
// workflows go on, its deadline fires on time and a late answer is dropped.
#pragma once

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/protocol/envelope.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

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
  // True when run() may block its thread: the hub runs it on its pool for
  // blocking agents instead of on the workflow's strand (see above).
  virtual bool blocks_thread() const noexcept { return false; }
  // True when run() may call tools through its context's journal (an LLM
  // agent whose prompt files name tools): the hub then hands it the step's
  // durable tool journal and approval policy (tool_journal.hpp). Agents that
  // answer false get neither, at no cost.
  virtual bool uses_tools() const noexcept { return false; }

  virtual boost::asio::awaitable<protocol::envelope> run(agent_context& context) = 0;
};

// Thrown by an agent that cannot answer before the user does: a remote
// agent whose task asks for input (a2a/remote_agent.hpp). The hub pauses
// the run for clarification with `question`, keeps the step's journal (for
// an agent that uses_tools(): what it recorded, such as the remote task it
// is waiting on) and, once answered, runs the same step again with the
// answer appended to clarification_answers. Not a failure: nothing is
// retried. An agent that can answer with low confidence instead does so
// (the hub asks its data.clarification_question, and the step counts).
class clarification_required : public std::runtime_error {
 public:
  explicit clarification_required(std::string question)
      : std::runtime_error("the agent needs the user's answer: " + question), question_(std::move(question)) {}
  const std::string& question() const noexcept { return question_; }

 private:
  std::string question_;
};

// `inner` unchanged, but declared thread-blocking: for an agent whose code
// you cannot change (a plugin's, a library's) that blocks.
//
//   registry.add(agents::run_on_thread_pool(std::make_shared<legacy_solver>()));
class thread_pool_agent final : public agent {
 public:
  explicit thread_pool_agent(std::shared_ptr<agent> inner) : inner_(std::move(inner)) {}

  std::string_view name() const noexcept override { return inner_->name(); }
  std::string_view description() const noexcept override { return inner_->description(); }
  std::string output_schema() const override { return inner_->output_schema(); }
  std::optional<std::string> input_schema() const override { return inner_->input_schema(); }
  std::string prompt_version() const override { return inner_->prompt_version(); }
  bool blocks_thread() const noexcept override { return true; }
  bool uses_tools() const noexcept override { return inner_->uses_tools(); }
  // Not a coroutine: the inner agent's operation is the whole call.
  boost::asio::awaitable<protocol::envelope> run(agent_context& context) override { return inner_->run(context); }

 private:
  std::shared_ptr<agent> inner_;
};

inline std::shared_ptr<agent> run_on_thread_pool(std::shared_ptr<agent> inner) {
  return std::make_shared<thread_pool_agent>(std::move(inner));
}

}  // namespace switchboard::agents
