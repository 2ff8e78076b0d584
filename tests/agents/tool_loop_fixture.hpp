// The tool loop's test fixture (llm_agent_tools_test.cpp and
// llm_agent_tools_http_test.cpp): a probe tool whose calls a test can see
// and hold, and an llm_agent on a scripted model with it.
#pragma once

#include <switchboard/agents/llm_agent.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/call_tool.hpp>
#include <switchboard/models/anthropic_model.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/models/openai_model.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/testing/hang_guard.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include "agent_test_support.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <stdexcept>

namespace switchboard::agents::tool_loop_test {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using switchboard::testing::hang_guard;
using switchboard::testing::loopback_model_server;
using switchboard::testing::server_action;

constexpr std::string_view good_answer =
    R"({"data": {"title": "Design review", "start_time": "2026-11-24T10:00"},
        "explanation": "x", "confidence": 0.9, "reasoning": "Found in the calendar."})";

constexpr std::string_view tools_prompt = R"({
  "name": "planner", "version": 1, "description": "Plans with the calendar.",
  "output_schema": "meeting.output@1",
  "model": {"max_attempts": 2},
  "tools": ["lookup", "slow", "broken"],
  "system": "You plan meetings.",
  "user": "Request: {{input/request}}"
})";

constexpr std::string_view plain_prompt = R"({
  "name": "plain", "version": 1, "description": "No tools.",
  "output_schema": "meeting.output@1",
  "system": "You plan meetings.",
  "user": "Request: {{input/request}}"
})";

// A tool that records its calls, counts calls in flight, and may wait or throw.
class probe_tool final : public tool {
 public:
  probe_tool(std::string name, std::chrono::milliseconds delay = 0ms, bool throws = false)
      : name_(std::move(name)), delay_(delay), throws_(throws) {}

  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "Events on a date."; }
  json::object parameters() const override {
    return json::parse(R"({"type": "object", "properties": {"date": {"type": "string"}},
                           "required": ["date"], "additionalProperties": false})")
        .as_object();
  }

  asio::awaitable<tool_result> call(tool_context& context, const json::value& arguments) override {
    calls.push_back(arguments);
    call_ids.push_back(context.call_id);
    traces.push_back(context.trace);
    max_in_flight = std::max(max_in_flight, ++in_flight);
    if (delay_ > 0ms) {
      asio::steady_timer timer(co_await asio::this_coro::executor, delay_);
      try {
        co_await timer.async_wait(asio::use_awaitable);
      } catch (const boost::system::system_error&) {
        saw_cancel = true;
        --in_flight;
        throw;
      }
    }
    --in_flight;
    if (throws_) throw std::runtime_error("disk on fire");
    co_return json::value{{"date", arguments.at("date")}, {"events", json::array{"standup", std::string(payload, 'x')}}};
  }

  bool idempotent() const noexcept override { return idempotent_calls; }

  std::vector<json::value> calls;
  std::vector<std::string> call_ids;
  std::vector<telemetry::span_context> traces;
  bool idempotent_calls = false;
  int in_flight = 0;
  int max_in_flight = 0;
  bool saw_cancel = false;
  std::size_t payload = 0;  // extra bytes in the result

 private:
  std::string name_;
  std::chrono::milliseconds delay_;
  bool throws_;
};

struct ToolLoop : ::testing::Test {
  std::shared_ptr<protocol::schema_registry> schemas = agent_test::test_schemas();
  tool_registry tools;
  std::shared_ptr<probe_tool> lookup = std::make_shared<probe_tool>("lookup", 100ms);
  std::shared_ptr<probe_tool> slow = std::make_shared<probe_tool>("slow", 10s);
  std::shared_ptr<probe_tool> broken = std::make_shared<probe_tool>("broken", 0ms, true);
  std::shared_ptr<scripted_model> model = std::make_shared<scripted_model>();
  agent_test::context_holder holder;
  llm_agent_options options;

  ToolLoop() {
    tools.add(lookup);
    tools.add(slow);
    tools.add(broken);
    tools.add(std::make_shared<probe_tool>("not_offered"));
    options.tools = &tools;
    holder.models.add("default", model);
    holder.input = json::parse(R"({"request": "Plan the design review"})");
  }

  std::shared_ptr<llm_agent> agent(std::string_view text = tools_prompt) {
    return std::make_shared<llm_agent>(std::vector{prompt_file::parse(text, "planner.v1.json")}, schemas, options);
  }
  protocol::envelope run(llm_agent& a, agent_context& context) { return agent_test::run_sync(a.run(context)); }
  // The tool message answering `id` in request `index`.
  chat_message tool_message(std::size_t index, std::string_view id) const {
    for (const auto& m : model->request(index).messages) {
      if (m.role == chat_role::tool && m.tool_call_id == id) return m;
    }
    ADD_FAILURE() << "no tool message for " << id;
    return {};
  }
};

// The run's trace as host::workflow_tracer gives it: the step's span, and a
// span per tool call named by its call id.

}  // namespace switchboard::agents::tool_loop_test
