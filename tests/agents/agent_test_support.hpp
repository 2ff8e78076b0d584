// Helpers for the agent tests: run a coroutine to completion, build an
// agent_context with owned storage, the test schemas and data paths.
#pragma once

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/value.hpp>
#include <spdlog/logger.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace switchboard::agents::agent_test {

inline std::filesystem::path test_data() { return SWITCHBOARD_AGENTS_TEST_DATA; }

// The agent_errc an agent_error carries.
inline agent_errc code_of(const agent_error& e) { return static_cast<agent_errc>(e.code().value()); }

// Runs `operation` on a fresh io_context and returns its result (or rethrows).
template <class T>
T run_sync(boost::asio::awaitable<T> operation) {
  boost::asio::io_context io;
  auto result = boost::asio::co_spawn(io, std::move(operation), boost::asio::use_future);
  io.run();
  return result.get();
}

// A schema registry holding tests/agents/data/schemas.
inline std::shared_ptr<protocol::schema_registry> test_schemas() {
  auto schemas = std::make_shared<protocol::schema_registry>();
  schemas->load_directory(test_data() / "schemas");
  return schemas;
}

// Owns everything an agent_context points to.
struct context_holder {
  boost::json::value input = boost::json::object{};
  output_map outputs;
  model_set models;
  std::vector<std::string> answers;
  std::string additional_instructions;
  std::string prompt_version;

  agent_context make() const {
    return agent_context{input,
                         outputs,
                         additional_instructions,
                         answers,
                         models,
                         std::make_shared<spdlog::logger>("agent-test"),  // no sinks: silent
                         prompt_version,
                         {},
                         {},
                         {}};
  }
};

}  // namespace switchboard::agents::agent_test
