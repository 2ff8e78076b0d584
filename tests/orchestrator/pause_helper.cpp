// switchboard_orchestrator_pause_helper <sqlite-file> exit|kill
//
// Runs the booking workflow until it pauses for clarification, prints the
// workflow id on stdout, then exits normally or kills itself (SIGKILL, no
// clean-up at all) so the test can resume the workflow in another process.
#include "resume_workflow.hpp"

#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/stores/sqlite_store.hpp>

#include <boost/asio/io_context.hpp>
#include <spdlog/logger.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  using namespace switchboard;
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " <sqlite-file> exit|kill\n";
    return 2;
  }
  agents::agent_registry registry(orchestrator::testing::test_schemas());
  orchestrator::testing::register_resume_agents(registry);
  auto workflow = orchestrator::testing::resume_workflow().compile(registry);

  boost::asio::io_context io;
  orchestrator::hub hub{io.get_executor(), registry,
                        orchestrator::testing::options(stores::make_sqlite_checkpoint_store(argv[1]), {},
                                                               std::make_shared<spdlog::logger>("helper"))};
  auto result = boost::asio::co_spawn(io, hub.run(workflow, boost::json::object{{"request", "meet Tuesday"}}),
                                      boost::asio::use_future);
  io.run();
  auto state = result.get();
  if (state.status != orchestrator::workflow_status::awaiting_clarification) {
    std::cerr << "expected a pause, got " << orchestrator::to_string(state.status) << "\n";
    return 1;
  }
  std::cout << state.id << std::endl;
  if (std::string(argv[2]) == "kill") std::raise(SIGKILL);
  return 0;
}
