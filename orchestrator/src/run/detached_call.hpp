// One agent call the run can stop waiting for. Internal.
//
// The agent runs in a coroutine of its own — on the run's strand, or on a
// strand of the hub's pool for blocking agents — and its context points only
// into this call (shared copies of the input, the answers and the latest
// outputs), never into the run's state. So the run can give the call up at
// its deadline or when it is cancelled without waiting for an agent that
// ignores cancellation or blocks a thread: the agent is asked to stop, and
// whatever it returns later dies with the call, unrecorded.
//
// Thread-safety: start() and wait() are for the run's strand; the agent's
// completion may come from a pool thread, so what it shares with the waiter
// is guarded by a mutex.
#pragma once

#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/agent_context.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>
#include <switchboard/protocol/envelope.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::orchestrator::detail {

// Thrown by detached_call::wait() when the deadline passed first.
struct timeout_expired {};

// What every call of one run reads: its input and the user's answers. One
// copy per run, shared by its calls (and kept by calls it gave up).
struct run_inputs {
  boost::json::value input;
  std::vector<std::string> answers;
};

// The latest envelope of each agent as the run's state held them when a
// call started. Consecutive snapshots of a run share the envelopes that did
// not change, so a step copies only the envelope it added.
class output_snapshot final : public agents::agent_outputs {
 public:
  // The snapshot of `state`, reusing the envelopes of `previous` (may be null).
  static std::shared_ptr<const output_snapshot> of(const workflow_state& state, const output_snapshot* previous);
  // True when `state` holds no output this snapshot lacks.
  bool matches(const workflow_state& state) const noexcept;

  const protocol::envelope* latest(std::string_view agent) const override;
  std::vector<std::string> agent_names() const override;

 private:
  struct entry {
    std::string agent;
    std::size_t runs = 0;  // how many runs of the agent the state held
    std::shared_ptr<const protocol::envelope> latest;
  };
  std::vector<entry> entries_;  // first-run order, as in the state
};

struct call_setup {
  std::shared_ptr<const run_inputs> inputs;
  std::shared_ptr<const output_snapshot> outputs;
  std::shared_ptr<const agents::model_set> models;
  std::shared_ptr<spdlog::logger> logger;
  std::string instructions;
};

class detached_call : public std::enable_shared_from_this<detached_call> {
 public:
  explicit detached_call(call_setup setup);
  detached_call(const detached_call&) = delete;
  detached_call& operator=(const detached_call&) = delete;

  // Runs `a` on `executor` (a strand). `a` must outlive the agent's run(),
  // which may end after the run gave the call up.
  void start(agents::agent& a, boost::asio::any_io_executor executor);

  // Completes once the agent answered (or threw). Throws timeout_expired
  // when `deadline` passes first, or when the answer came after it (an agent
  // that blocked the waiting thread); throws operation_aborted when the
  // awaiting coroutine is cancelled. Either way the call is given up.
  boost::asio::awaitable<void> wait(std::optional<std::chrono::steady_clock::time_point> deadline);

  // After wait() completed: the agent's envelope into `out`, or its exception rethrown.
  void take_answer(protocol::envelope& out);
  // True once the agent's run() completed, in time or not. Only then may
  // context() be read: until then the agent may be writing it on a pool thread.
  bool finished() const;
  // What the agent filled in for the audit log (usage, prompt version, raw text).
  agents::agent_context& context() noexcept { return context_; }

 private:
  // Moved only by construction and swap(): Boost 1.81's move assignment of
  // any_completion_handler wraps the handler in itself until the stack overflows.
  using waiter = boost::asio::any_completion_handler<void(boost::system::error_code)>;
  struct wait_initiation;

  static boost::asio::awaitable<void> run_agent(agents::agent& a, std::shared_ptr<detached_call> self);
  boost::asio::awaitable<void> wait_suspended(std::optional<std::chrono::steady_clock::time_point> deadline);
  boost::asio::awaitable<void> answered();
  void finish(std::exception_ptr error, protocol::envelope answer);
  void cancel_wait();
  void release_waiter();
  void give_up();
  bool given_up() const;
  bool finished_after(std::chrono::steady_clock::time_point limit) const;
  static void resume_waiter(waiter resume, const boost::asio::any_io_executor& executor,
                            boost::asio::cancellation_slot slot, boost::system::error_code ec);

  call_setup setup_;
  agents::agent_context context_;     // points into setup_
  boost::asio::any_io_executor agent_executor_;
  boost::asio::cancellation_signal stop_agent_;  // emitted on agent_executor_ only

  mutable std::mutex mutex_;          // guards what follows
  bool finished_ = false;
  bool given_up_ = false;
  std::chrono::steady_clock::time_point finished_at_;
  protocol::envelope answer_;
  std::exception_ptr error_;
  waiter waiter_;                     // the run, while it waits
  boost::asio::any_io_executor waiter_executor_;  // the run's strand
  boost::asio::cancellation_slot waiter_slot_;    // the waiter's, touched on the run's strand only
};

}  // namespace switchboard::orchestrator::detail
