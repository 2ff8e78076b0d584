// A workflow directory opened for runs: the workflow file compiled against
// the agents and tools it names, the model when one is configured, and the
// store that keeps its runs. What a program needs to start a run or resume
// a stored one on a hub of its own:
//
//   host::workflow_settings settings{.workflow_file = "flow/workflow.json"};
//   auto opened = host::open_workflow(settings, host::open_store(""));
//   orchestrator::hub hub{io.get_executor(), *opened.agents.registry, opened.hub_options()};
//   hub.start(opened.workflow, input);
//
// Also what continuing a stored run needs from the invoker (awaited_by).
//
// Lifetimes: the opened workflow (its registries, model and store) must
// outlive every hub made from it and every run those hubs start.
// Thread-safety: open_workflow is set-up code for one thread (it runs
// plugins' code and starts MCP servers); an opened workflow is then read
// only, and its members are as thread-safe as their own types.
#pragma once

#include <switchboard/host/model_options.hpp>
#include <switchboard/host/workflow_loader.hpp>

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/orchestrator/workflow.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>
#include <switchboard/protocol/metrics.hpp>

#include <filesystem>
#include <memory>
#include <vector>

namespace switchboard::host {

// What a run is opened from: the invoker's configuration, never a stored run.
struct workflow_settings {
  std::filesystem::path workflow_file;
  loader_settings loader;  // an empty state_dir: state_directory()
  model_options model;     // loader.model_configured is set from it
};

struct opened_workflow {
  loaded_agents agents;
  configured_model model;  // without a configured model every member is null
  std::shared_ptr<protocol::parser_metrics> parser_counts = std::make_shared<protocol::parser_metrics>();
  agents::model_set models;  // "default": the model, with the options' call limits
  std::shared_ptr<const orchestrator::compiled_workflow> workflow;
  std::shared_ptr<orchestrator::checkpoint_store> store;

  // Hub options with this workflow's store and models; the rest default.
  orchestrator::hub_options hub_options() const;
  // The parser's counts and the model's (and cache's) metrics, for a
  // metrics page; a hub's own metrics are the caller's to add.
  std::vector<const protocol::metrics_source*> metrics_sources() const;
};

// Loads the workflow file and what it names, and the model when one is
// configured, and keeps `store` for the runs. Throws
// host_error(missing_path) naming the workflow file when it does not exist,
// the orchestrator's error naming the file for one that is not a valid
// workflow, what load_agents and make_configured_model throw.
opened_workflow open_workflow(const workflow_settings& settings,
                              std::shared_ptr<orchestrator::checkpoint_store> store);

// What a stored run waits for from the invoker before it continues.
enum class awaited_input {
  none,             // nothing: an interrupted run continues as it is; a finished one does not
  answer,           // an answer to its clarification question (resume_options::answer)
  optional_answer,  // interrupted while its question stood: an answer, or none to ask again
  decision,         // a decision on pending tool calls (resume_options::decision)
};

awaited_input awaited_by(const orchestrator::workflow_state& state);

// The resume options that hold the run to what the caller saw in `state`:
// its step and, when it awaits a decision, its pending calls (a run that
// moved on meanwhile is refused with run_moved_on). The caller adds the
// answer or the decision.
orchestrator::resume_options resume_options_for(const orchestrator::workflow_state& state);

}  // namespace switchboard::host
