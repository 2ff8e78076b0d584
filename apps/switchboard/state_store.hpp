// Where `switchboard run`, `resume` and `runs` keep workflow runs: the
// default SQLite file in the user's state directory (created 0700, the
// file 0600), or the store --store names. Also the blocking helper the
// commands use to wait for the store's asynchronous operations.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <filesystem>
#include <memory>
#include <string>

namespace switchboard::cli {

// The user's state directory: SWITCHBOARD_STATE_DIR, else
// $XDG_STATE_HOME/switchboard, else ~/.local/state/switchboard. Creates it
// (0700) when missing; throws std::runtime_error when it cannot.
std::filesystem::path state_directory();

// "sqlite:<state directory>/workflows.db".
std::string default_store_spec();

// Opens `spec` ("" = default_store_spec()). With
// SWITCHBOARD_FAULT_KILL_AFTER_WRITES=N in the environment (a testing hook
// for crash tests) the process kills itself with SIGKILL right after the
// Nth write the store committed (create, claim or save).
std::shared_ptr<orchestrator::checkpoint_store> open_state_store(const std::string& spec);

// Runs `operation` on a private io_context until it completes.
template <class T>
T wait_for(boost::asio::awaitable<T> operation) {
  boost::asio::io_context io;
  auto result = boost::asio::co_spawn(io, std::move(operation), boost::asio::use_future);
  io.run();
  return result.get();
}

}  // namespace switchboard::cli
