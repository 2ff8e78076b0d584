// switchboard_orchestrator_tool_helper: one process of the tool-call fault
// tests (tool_call_process_test.cpp). It runs the booking workflow of
// tool_workflow.hpp against an SQLite checkpoint file, through a store that
// kills the process (SIGKILL) right after its Nth successful write.
//
//   tool_helper run|continue|approve|reject <db> <counter> <id> <kill-after> <flags>
//       run: a new run `id`; continue: resume() without an answer;
//       approve/reject: resume() with that decision. kill-after 0 = never.
//       flags: letters, "-" for none: a = "book" needs approval,
//       i = it is idempotent, c = it kills its process during its first call.
//
// Prints key=value lines: status=, result= (data.status of the result),
// writes=, error= on a refusal. Exit status: 0 when the call returned a
// state, 40 + orchestrator_errc on an orchestrator_error, 1 otherwise, 2 on
// a usage error.
#include "tool_workflow.hpp"

#include <switchboard/orchestrator/error.hpp>
#include <switchboard/stores/sqlite_store.hpp>
#include <switchboard/orchestrator/hub.hpp>

#include "kill_after_writes.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <spdlog/logger.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

namespace asio = boost::asio;
using namespace switchboard;
using namespace switchboard::orchestrator;

using testing::kill_after_writes;

int usage(const char* self) {
  std::cerr << "usage: " << self << " run|continue|approve|reject <db> <counter> <id> <kill-after> <flags>\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) return usage(argv[0]);
  const std::string command = argv[1], db = argv[2], counter = argv[3], id = argv[4], flags = argv[6];
  const int kill_after = std::atoi(argv[5]);
  testing::book_settings settings;
  settings.counter = counter;
  settings.needs_approval = flags.find('a') != std::string::npos;
  settings.idempotent = flags.find('i') != std::string::npos;
  settings.crash_in_first_call = flags.find('c') != std::string::npos;
  try {
    testing::tool_setup setup(settings);
    auto workflow = testing::booking_workflow().compile(setup.registry);
    auto store = std::make_shared<kill_after_writes>(stores::make_sqlite_checkpoint_store(db), kill_after);
    asio::io_context io;
    hub h{io.get_executor(), setup.registry,
          testing::options(store, setup.models, std::make_shared<spdlog::logger>("tool-helper"))};
    boost::json::value input{{"request", "book the minivan"}};
    auto operation = [&]() -> asio::awaitable<workflow_state> {
      if (command == "run") {
        run_options run;
        run.workflow_id = id;
        co_return co_await h.run(workflow, input, run);
      }
      resume_options resume;
      if (command == "approve" || command == "reject") resume.decision = approval_decision{command == "approve", "not now"};
      co_return co_await h.resume(workflow, id, resume);
    };
    auto future = asio::co_spawn(io, operation(), asio::use_future);
    io.run();
    const auto state = future.get();
    std::cout << "status=" << to_string(state.status) << "\n";
    if (state.result && state.result->data.contains("status")) {
      std::cout << "result=" << state.result->data.at("status").as_string().c_str() << "\n";
    }
    std::cout << "writes=" << store->writes() << std::endl;
    return 0;
  } catch (const orchestrator_error& e) {
    std::cout << "error=" << e.what() << std::endl;
    return 40 + e.code().value();
  } catch (const std::exception& e) {
    std::cout << "error=" << e.what() << std::endl;
    return 1;
  }
}
