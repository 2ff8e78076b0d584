// Opening a workflow directory for runs (see opened_workflow.hpp).
#include <switchboard/host/opened_workflow.hpp>

#include <switchboard/host/error.hpp>
#include <switchboard/host/store.hpp>

#include <switchboard/orchestrator/workflow_file.hpp>

namespace switchboard::host {

namespace fs = std::filesystem;
namespace orch = switchboard::orchestrator;

orch::hub_options opened_workflow::hub_options() const {
  orch::hub_options options;
  options.store = store;
  options.models = models;
  return options;
}

std::vector<const protocol::metrics_source*> opened_workflow::metrics_sources() const {
  std::vector<const protocol::metrics_source*> sources{parser_counts.get()};
  for (const auto* source : model.metrics_sources()) sources.push_back(source);
  return sources;
}

opened_workflow open_workflow(const workflow_settings& settings, std::shared_ptr<orch::checkpoint_store> store) {
  std::error_code ec;
  if (!fs::is_regular_file(settings.workflow_file, ec))
    throw host_error(host_errc::missing_path,
                     "workflow file '" + settings.workflow_file.string() + "' does not exist");
  orch::workflow_definition definition = orch::load_workflow_file(settings.workflow_file);

  opened_workflow out;
  out.store = std::move(store);
  loader_settings loader = settings.loader;
  loader.model_configured = configured(settings.model);
  if (loader.state_dir.empty()) loader.state_dir = state_directory();
  if (loader.model_configured) {
    out.model = make_configured_model(settings.model);
    out.models.add("default", out.model.model);
    auto limits = call_limits_of(settings.model);
    limits.metrics = out.parser_counts.get();
    out.models.set_limits(limits);
  }
  out.agents = load_agents(definition, settings.workflow_file, loader);
  out.workflow = orch::compile(std::move(definition), *out.agents.registry);
  return out;
}

awaited_input awaited_by(const orch::workflow_state& state) {
  const bool interrupted = state.status == orch::workflow_status::interrupted;
  // Interrupted while a decision was being saved: the decision is still awaited.
  if (state.approval && (state.status == orch::workflow_status::awaiting_approval || interrupted))
    return awaited_input::decision;
  if (state.clarification && state.status == orch::workflow_status::awaiting_clarification)
    return awaited_input::answer;
  if (state.clarification && interrupted) return awaited_input::optional_answer;
  return awaited_input::none;
}

orch::resume_options resume_options_for(const orch::workflow_state& state) {
  orch::resume_options options;
  options.expected_step = state.step;
  if (awaited_by(state) == awaited_input::decision) options.expected_calls = state.approval->calls_key();
  return options;
}

}  // namespace switchboard::host
