// Helpers for the orchestrator tests: native agents whose behaviour is a
// function, a registry with the test schema, and a runner for coroutines.
#pragma once

#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace switchboard::orchestrator::testing {

namespace asio = boost::asio;

// Declares status, score, items, nested/value, clarification_question.
inline const char* test_output_schema = R"({
  "type": "object",
  "properties": {
    "status": {"type": "string"},
    "score": {"type": "number"},
    "items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
    "nested": {"$ref": "#/definitions/nested"},
    "clarification_question": {"type": "string"}
  },
  "definitions": {"nested": {"type": "object", "properties": {"value": {"type": "integer"}}}}
})";

// A person's answer for `node` (hub::update_stored_run).
inline state_update answer_for(std::string node, boost::json::object data,
                               std::optional<std::int64_t> expected_step = std::nullopt) {
  state_update u;
  u.node = std::move(node);
  u.data = std::move(data);
  u.expected_step = expected_step;
  return u;
}

inline protocol::envelope make_envelope(boost::json::object data, double confidence = 0.9,
                                        std::string explanation = "done") {
  protocol::envelope e;
  e.data = std::move(data);
  e.confidence = confidence;
  e.explanation = std::move(explanation);
  e.reasoning = "because the test says so";
  return e;
}

// An agent whose answer is computed by a function; optionally suspends on a
// timer first (so many workflows overlap), and counts its calls.
class fn_agent final : public agents::agent {
 public:
  using behaviour = std::function<protocol::envelope(agents::agent_context&, int call)>;

  fn_agent(std::string name, behaviour fn, std::chrono::milliseconds delay = {})
      : name_(std::move(name)), fn_(std::move(fn)), delay_(delay) {}

  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "a test agent"; }
  std::string output_schema() const override { return "test.output@1"; }

  asio::awaitable<protocol::envelope> run(agents::agent_context& context) override {
    int call = ++calls_;
    if (delay_.count() > 0) {
      asio::steady_timer timer(co_await asio::this_coro::executor, delay_);
      co_await timer.async_wait(asio::use_awaitable);
    }
    co_return fn_(context, call);
  }

  int calls() const noexcept { return calls_; }

 private:
  std::string name_;
  behaviour fn_;
  std::chrono::milliseconds delay_;
  std::atomic<int> calls_{0};
};

// Always answers `data` with `confidence`.
inline std::shared_ptr<fn_agent> constant_agent(std::string name, boost::json::object data = {},
                                                double confidence = 0.9,
                                                std::chrono::milliseconds delay = {}) {
  return std::make_shared<fn_agent>(
      std::move(name),
      [data = std::move(data), confidence](agents::agent_context&, int) { return make_envelope(data, confidence); },
      delay);
}

inline std::shared_ptr<protocol::schema_registry> test_schemas() {
  auto schemas = std::make_shared<protocol::schema_registry>();
  schemas->add({"test.output", 1}, boost::json::parse(test_output_schema));
  return schemas;
}

// Option builders: the tests name what they set (designated initializers
// that leave members out warn under -Wextra).
inline hub_options options(std::shared_ptr<checkpoint_store> store, agents::model_set models = {},
                           std::shared_ptr<spdlog::logger> logger = {}) {
  hub_options o;
  o.store = std::move(store);
  o.models = std::move(models);
  o.logger = std::move(logger);
  return o;
}
inline retry_policy retries(int attempts, std::chrono::milliseconds backoff = {}) {
  retry_policy r;
  r.max_attempts = attempts;
  r.backoff = backoff;
  return r;
}
inline coordinator_options coordinate(std::vector<std::string> candidates, std::string default_agent,
                                      router_fn router = {}, std::string instructions = {}) {
  coordinator_options o;
  o.candidates = std::move(candidates);
  o.default_agent = std::move(default_agent);
  o.router = std::move(router);
  o.instructions = std::move(instructions);
  return o;
}
inline synthesis_options synthesis_by_model(std::string role) {
  synthesis_options o;
  o.model_role = std::move(role);
  return o;
}

// Runs `operation` on a fresh io_context and returns its result (or rethrows).
template <class T>
T run_sync(asio::awaitable<T> operation) {
  asio::io_context io;
  auto result = asio::co_spawn(io, std::move(operation), asio::use_future);
  io.run();
  return result.get();
}

}  // namespace switchboard::orchestrator::testing
