// Runs the sample's real workflow file in-process: the `scheduling` plugin's
// registration (register_scheduling_plugin, as the plugin's entry point
// calls it) into a registry, load_workflow_file + compile, and a hub on a
// private io_context. Each fixture has its own state directory, so its own
// calendar file. Not thread-safe: one test thread drives it.
#pragma once

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/stores/sqlite_store.hpp>
#include <switchboard/agents/plugin.hpp>
#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/orchestrator/workflow_file.hpp>
#include <switchboard/scheduling/agents.hpp>
#include <switchboard/testing/temp_dir.hpp>

#include "scheduling/sample_fixture.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <spdlog/logger.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::scheduling::testing {

inline const std::filesystem::path sample_workflow_dir =
    std::filesystem::path(SWITCHBOARD_SOURCE_DIR) / "examples" / "scheduling";

using ::switchboard::testing::temp_dir;

class sample_workflow_runner {
 public:
  // `state_dir`: where the plugin keeps its calendar (empty: in memory).
  // `confirm_bookings`: the plugin's config of that name (the sample ships
  // with true; most tests book without asking). `keep_runs`: the hub keeps
  // its runs in state_dir/runs.db (as `switchboard run` does), so another
  // runner on the same directory finds them; otherwise in memory.
  explicit sample_workflow_runner(const std::filesystem::path& state_dir, bool reset = false,
                                  bool confirm_bookings = false, bool keep_runs = false)
      : registry_(std::make_shared<protocol::schema_registry>()) {
    auto definition = orchestrator::load_workflow_file(sample_workflow_dir / "workflow.json");
    agents::plugin_host host;
    host.base_dir = sample_workflow_dir;
    host.config = definition.plugins.at(0).config;
    host.config["confirm_bookings"] = confirm_bookings;
    host.state_dir = state_dir;
    host.reset_state = reset;
    host.schemas = registry_.schemas_ptr();
    agents::plugin_registrar registrar("scheduling (in-process)", host);
    registration_ = register_scheduling_plugin(registrar);
    for (auto& a : registrar.agents()) registry_.add(a, "plugin:test");
    notices_ = registrar.notices();
    workflow_ = orchestrator::compile(std::move(definition), registry_);
    orchestrator::hub_options options;
    options.logger = std::make_shared<spdlog::logger>("sample-test");
    if (keep_runs) options.store = stores::make_sqlite_checkpoint_store(state_dir / "runs.db");
    hub_ = std::make_unique<orchestrator::hub>(io_.get_executor(), registry_, std::move(options));
  }

  // Runs `request`, answering each clarification with the next of
  // `answers`; stops at the first pause without an answer left.
  orchestrator::workflow_state run(const std::string& request, const std::vector<std::string>& answers = {},
                                   boost::json::object input = {}) {
    input["request"] = request;
    auto state = sync(hub_->run(workflow_, std::move(input)));
    for (const auto& answer : answers) {
      if (state.status != orchestrator::workflow_status::awaiting_clarification) break;
      state = sync(hub_->resume(workflow_, state.id, answer));
    }
    return state;
  }

  // Approves or rejects the tool calls run `id` waits for.
  orchestrator::workflow_state decide(const std::string& id, bool approve, std::string reason = {}) {
    orchestrator::resume_options options;
    options.decision = orchestrator::approval_decision{approve, std::move(reason)};
    return sync(hub_->resume(workflow_, id, std::move(options)));
  }
  std::optional<orchestrator::workflow_state> find(const std::string& id) { return sync(hub_->find(id)); }

  calendar& cal() { return *registration_.calendar; }
  const std::vector<std::string>& notices() const { return notices_; }
  agents::agent_registry& registry() { return registry_; }

 private:
  template <class T>
  T sync(boost::asio::awaitable<T> operation) {
    auto result = boost::asio::co_spawn(io_, std::move(operation), boost::asio::use_future);
    io_.restart();
    io_.run();
    return result.get();
  }

  boost::asio::io_context io_;
  agents::agent_registry registry_;
  sample_registration registration_;
  std::vector<std::string> notices_;
  std::shared_ptr<const orchestrator::compiled_workflow> workflow_;
  std::unique_ptr<orchestrator::hub> hub_;
};

}  // namespace switchboard::scheduling::testing
