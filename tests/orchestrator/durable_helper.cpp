// switchboard_orchestrator_durable_helper: one process of the durable-run
// fault tests (durable_run_process_test.cpp). It runs the workflow of
// durable_workflow.hpp against an SQLite checkpoint file, through a store
// that can kill the process (SIGKILL, no clean-up at all) right after its
// Nth successful write (create, claim or save).
//
//   durable_helper run <db> <counter> <id> <kill-after> pause|end [block-two]
//       Runs a new workflow `id`; with `end`, answers its question ("the
//       answer") in the same process and runs it to its end. kill-after 0 =
//       never. block-two: "two" prints "blocking" on its first call and
//       never answers (the test kills the process).
//   durable_helper continue <db> <counter> <id>
//       resume() without an answer (an interrupted run).
//   durable_helper answer <db> <counter> <id> <answer> [wait]
//       resume() with `answer`. wait: set everything up, print "ready",
//       then wait for end of file on stdin before resuming (a start line
//       for racing processes).
//
// Prints key=value lines: status=, result= (four's status), writes= (the
// store writes it made), error= on a refusal. Exit status: 0 the call
// returned a state, 40 + orchestrator_errc on an orchestrator_error, 1 on
// anything else, 2 on a usage error.
#include "durable_workflow.hpp"

#include <switchboard/orchestrator/error.hpp>
#include <switchboard/stores/sqlite_store.hpp>
#include <switchboard/orchestrator/hub.hpp>

#include "kill_after_writes.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <spdlog/logger.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using namespace switchboard;
using namespace switchboard::orchestrator;

using testing::kill_after_writes;

template <class T>
T sync(asio::io_context& io, asio::awaitable<T> operation) {
  auto result = asio::co_spawn(io, std::move(operation), asio::use_future);
  io.restart();
  io.run();
  return result.get();
}

void report(const workflow_state& s, const kill_after_writes& store) {
  std::cout << "status=" << to_string(s.status) << "\n";
  if (s.result && s.result->data.contains("status") && s.result->data.at("status").is_string()) {
    std::cout << "result=" << s.result->data.at("status").as_string().c_str() << "\n";
  }
  if (const auto* e = s.first_error()) std::cout << "failure=" << e->type << ": " << e->message << "\n";
  std::cout << "writes=" << store.writes() << std::endl;
}

asio::awaitable<void> block_forever() {
  std::cout << "blocking" << std::endl;
  asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::hours(1));
  co_await timer.async_wait(asio::use_awaitable);
}

int usage(const char* self) {
  std::cerr << "usage: " << self << " run <db> <counter> <id> <kill-after> pause|end [block-two]\n"
            << "       " << self << " continue <db> <counter> <id>\n"
            << "       " << self << " answer <db> <counter> <id> <answer> [wait]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return usage(argv[0]);
  const std::string mode = argv[1], db = argv[2], counter = argv[3], id = argv[4];
  const std::vector<std::string> rest(argv + 5, argv + argc);
  try {
    const bool block_two = mode == "run" && rest.size() == 3 && rest[2] == "block-two";
    agents::agent_registry registry(testing::test_schemas());
    testing::counted_agent::hold_fn hold;
    if (block_two) {
      hold = [](int call) -> asio::awaitable<void> {
        if (call == 1) co_await block_forever();
      };
    }
    testing::durable_hooks hooks;
    hooks.hold_two = std::move(hold);
    testing::register_durable_agents(registry, counter, std::move(hooks));
    auto workflow = testing::durable_workflow().compile(registry);

    const int kill_after = mode == "run" && !rest.empty() ? std::atoi(rest[0].c_str()) : 0;
    auto store = std::make_shared<kill_after_writes>(stores::make_sqlite_checkpoint_store(db), kill_after);
    asio::io_context io;
    hub h{io.get_executor(), registry, testing::options(store, {}, std::make_shared<spdlog::logger>("helper"))};

    if (mode == "run") {
      if (rest.size() < 2 || (rest[1] != "pause" && rest[1] != "end")) return usage(argv[0]);
      run_options ro;
      ro.workflow_id = id;
      auto s = sync(io, h.run(workflow, boost::json::object{{"request", "durable"}}, ro));
      if (rest[1] == "end" && s.status == workflow_status::awaiting_clarification) {
        s = sync(io, h.resume(workflow, id, "the answer"));
      }
      report(s, *store);
      return 0;
    }
    if (mode == "continue") {
      auto s = sync(io, h.resume(workflow, id, resume_options{}));
      report(s, *store);
      return 0;
    }
    if (mode == "answer") {
      if (rest.empty()) return usage(argv[0]);
      if (rest.size() > 1 && rest[1] == "wait") {
        std::cout << "ready" << std::endl;
        char c;
        while (::read(0, &c, 1) > 0) {
        }
      }
      auto s = sync(io, h.resume(workflow, id, rest[0]));
      report(s, *store);
      return 0;
    }
    return usage(argv[0]);
  } catch (const orchestrator_error& e) {
    std::cout << "error=" << to_string(e.errc()) << ": " << e.what() << std::endl;
    return 40 + static_cast<int>(e.errc());
  } catch (const std::exception& e) {
    std::cout << "exception=" << e.what() << std::endl;
    return 1;
  }
}
