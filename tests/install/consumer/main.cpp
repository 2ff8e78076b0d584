// Touches each of the three libraries once: builds and validates an
// envelope (protocol), creates an agent registry (agents), and keeps a
// checkpoint in an in-memory store (orchestrator). Prints
// "switchboard consumer: ok" on success.
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/protocol/envelope.hpp>
#include <switchboard/protocol/schema_registry.hpp>
#include <switchboard/protocol/validation.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

namespace json = boost::json;
namespace protocol = switchboard::protocol;
namespace orchestrator = switchboard::orchestrator;

int main() {
  const auto schema = protocol::compiled_schema::compile(
      json::parse(R"({"type":"object","required":["slot"],"properties":{"slot":{"type":"string"}}})"),
      "consumer.output@1");

  protocol::envelope answer;
  answer.data["slot"] = "Saturday 14:00-16:00";
  answer.explanation = "Saturday afternoon is free for everyone.";
  answer.confidence = 0.9;
  answer.reasoning = "No calendar has an event then.";
  if (auto errors = protocol::validate_envelope(answer, schema); !errors.empty()) {
    std::cerr << "unexpected validation errors:\n" << protocol::to_string(errors) << '\n';
    return 1;
  }
  protocol::envelope wrong = answer;
  wrong.data["slot"] = 14;
  if (protocol::validate_envelope(wrong, schema).empty()) {
    std::cerr << "a wrong envelope passed validation\n";
    return 1;
  }

  switchboard::agents::agent_registry agents(std::make_shared<protocol::schema_registry>());
  if (!agents.names().empty()) {
    std::cerr << "a new agent registry is not empty\n";
    return 1;
  }

  auto store = orchestrator::make_in_memory_checkpoint_store();
  orchestrator::save_request run;
  run.workflow_id = "wf-1";
  run.workflow_name = "consumer";
  run.status = orchestrator::workflow_status::running;
  run.state_json = json::serialize(json::value_from(answer));
  run.owner = "consumer";
  boost::asio::io_context io;
  auto stored = boost::asio::co_spawn(
      io,
      [](std::shared_ptr<orchestrator::checkpoint_store> store,
         orchestrator::save_request run) -> boost::asio::awaitable<std::optional<orchestrator::checkpoint>> {
        const std::string id = run.workflow_id;
        co_await store->create(std::move(run), std::chrono::seconds(30));
        co_return co_await store->load(id);
      }(store, run),
      boost::asio::use_future);
  io.run();
  if (const auto loaded = stored.get(); !loaded || loaded->state_json != run.state_json) {
    std::cerr << "the checkpoint store lost a checkpoint\n";
    return 1;
  }

  std::cout << "switchboard consumer: ok\n";
  return 0;
}
