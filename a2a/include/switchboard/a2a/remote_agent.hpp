// A remote A2A v1.0 agent as a spoke of the hub: the step's input goes to it
// as a message, its task's outcome comes back as the step's envelope.
//
// - A new step sends the workflow input (a text part with the request, a
//   data part with the whole input) and records the remote task's id in the
//   step's journal before waiting on it, so that a step run again (after a
//   crash, in another process) continues the same remote task instead of
//   starting a new one.
// - A task that asks for input (TASK_STATE_INPUT_REQUIRED) becomes the hub's
//   own clarification pause (agents::clarification_required): the user's
//   answer goes back on the same task, in this process or after a resume in
//   another. An answer that is a JSON object goes as a data part (a
//   decision for a remote Switchboard: {"decision": "approve"}), any other as
//   a text part.
// - A completed task's artifact data part is the envelope's data (the hub
//   checks it against output_schema); its text parts are the explanation;
//   confidence is 1. A missing or non-object data part, a failed, rejected or
//   cancelled task, and an unreachable agent fail the step, naming the agent,
//   the task and what was wrong.
// - Cancelled (the node's deadline, the run cancelled or interrupted): the
//   call stops waiting and the remote task is left as it is, so that the
//   step's next run (a retry, a resume after a restart) continues it. A run
//   that will not be continued leaves it to the remote's own limits.
// - A message that starts a task is sent once: one that went out and whose
//   task was never recorded (the process died, the answer was lost) fails
//   the step with unknown_outcome (the remote agent may be doing the work
//   already). One the remote never got (no connection, 429, 503) is marked
//   so, and the step's next attempt sends it again. An answer is recorded
//   before it is sent, likewise.
// - A task is continued only at the endpoint that started it.
//
// Thread-safety: run() may be called concurrently; the card is fetched once.
#pragma once

#include <switchboard/a2a/remote_agent_config.hpp>
#include <switchboard/agents/agent.hpp>

#include <memory>
#include <mutex>

namespace switchboard::a2a {

class rpc_client;

class remote_agent final : public agents::agent {
 public:
  explicit remote_agent(remote_agent_config config);
  ~remote_agent() override;

  std::string_view name() const noexcept override { return config_.name; }
  std::string_view description() const noexcept override { return description_; }
  std::string output_schema() const override { return config_.output_schema; }
  // The step's journal keeps the remote task's id (tool_journal.hpp).
  bool uses_tools() const noexcept override { return true; }

  boost::asio::awaitable<protocol::envelope> run(agents::agent_context& context) override;

  const remote_agent_config& config() const noexcept { return config_; }

 private:
  // The JSON-RPC client of the agent's interface: the card fetched the first
  // time (again after a failure), the same client afterwards.
  boost::asio::awaitable<std::shared_ptr<rpc_client>> endpoint();

  remote_agent_config config_;
  std::string description_;
  std::mutex mutex_;
  std::shared_ptr<rpc_client> endpoint_;
};

}  // namespace switchboard::a2a
