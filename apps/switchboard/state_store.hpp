// The checkpoint store `switchboard run`, `resume` and `runs` use (the
// host library's open_store: --store URL, default sqlite:<state
// directory>/workflows.db), and the blocking helper the commands use to
// wait for the store's asynchronous operations.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <memory>
#include <string>

namespace switchboard::cli {

// host::open_store(url). With SWITCHBOARD_FAULT_KILL_AFTER_WRITES=N in the
// environment (a testing hook for crash tests) the process kills itself
// with SIGKILL right after the Nth write the store committed (create,
// claim or save).
std::shared_ptr<orchestrator::checkpoint_store> open_state_store(const std::string& url);

// Runs `operation` on a private io_context until it completes.
template <class T>
T wait_for(boost::asio::awaitable<T> operation) {
  boost::asio::io_context io;
  auto result = boost::asio::co_spawn(io, std::move(operation), boost::asio::use_future);
  io.run();
  return result.get();
}

}  // namespace switchboard::cli
