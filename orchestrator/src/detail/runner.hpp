// The hub's internals shared by hub.cpp and runner.cpp: the hub's
// configuration and the coroutine that runs one workflow.
#pragma once

#include <switchboard/orchestrator/hub.hpp>

#include "run_control.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace switchboard::orchestrator {

struct hub::impl {
  impl(boost::asio::any_io_executor executor, const agents::agent_registry& registry, hub_options options);

  std::string new_id();
  workflow_state initial_state(const compiled_workflow& workflow, boost::json::value input, run_options& run);
  // Loads a paused workflow for resume(); throws the misuse errors.
  workflow_state take_paused(const compiled_workflow& workflow, const std::string& id);
  // Without a store, keeps a paused state so resume() finds it.
  void remember_paused(const workflow_state& state);
  std::optional<workflow_state> find(std::string_view id) const;

  boost::asio::any_io_executor executor;
  const agents::agent_registry& registry;
  hub_options options;
  std::shared_ptr<spdlog::logger> logger;
  std::vector<std::shared_ptr<observer>> observers;
  hub_metrics metrics;
  const std::string id_prefix;
  std::atomic<std::uint64_t> id_counter{0};
  mutable std::mutex paused_mutex;
  std::map<std::string, workflow_state, std::less<>> paused;
};

namespace detail {

workflow_state state_from_checkpoint(const checkpoint& cp);

// A new strand on `executor`. When that is an io_context's executor the
// strand is built on the concrete type, so it fits inside an
// any_io_executor: a strand over any_io_executor does not, and every async
// operation of the run would then copy it to the heap.
boost::asio::any_io_executor make_run_strand(const boost::asio::any_io_executor& executor);

// Runs (or, with an answer, resumes) a workflow on a new strand of the hub's
// executor until it stops, for callers that await the run: cancelling the
// awaiting coroutine cancels the run. Never throws for workflow failures;
// they end in the returned state.
boost::asio::awaitable<workflow_state> run_on_own_strand(std::shared_ptr<hub::impl> hub,
                                                         std::shared_ptr<const compiled_workflow> workflow,
                                                         workflow_state state, std::optional<std::string> answer);

// The same, co_spawned on control->strand and cancellable through
// control->signal; control->finish() receives the final state.
void spawn(std::shared_ptr<hub::impl> hub, std::shared_ptr<run_control> control,
           std::shared_ptr<const compiled_workflow> workflow, workflow_state state,
           std::optional<std::string> answer);

}  // namespace detail

}  // namespace switchboard::orchestrator
