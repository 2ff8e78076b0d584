// The shared block behind a workflow_handle: the run's strand, its
// cancellation signal and, once it stopped, its final state.
#pragma once

#include <switchboard/orchestrator/workflow_state.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::orchestrator::detail {

struct run_control {
  run_control(std::string workflow_id, boost::asio::any_io_executor s)
      : id(std::move(workflow_id)), strand(std::move(s)) {}

  const std::string id;
  boost::asio::any_io_executor strand;  // a strand (make_run_strand)
  boost::asio::cancellation_signal signal;  // emitted on `strand` only
  // Set before the signal when the run is interrupted rather than cancelled.
  std::atomic<bool> interrupt{false};

  // Called once, on the strand, when the run stopped.
  void finish(std::exception_ptr error, std::optional<workflow_state> state);
  // Calls `waiter` once the run stopped: on the thread that stopped it, or
  // at once when it has.
  void add_waiter(boost::asio::any_completion_handler<void()> waiter);
  workflow_state result() const;  // rethrows the run's exception

  mutable std::mutex mutex;
  bool finished = false;
  std::exception_ptr exception;
  // On the heap once the run stopped: a run in flight, which may wait for
  // hours, does not keep room for a final state (~660 bytes) meanwhile.
  std::unique_ptr<workflow_state> state;
  std::vector<boost::asio::any_completion_handler<void()>> waiters;
};

}  // namespace switchboard::orchestrator::detail
