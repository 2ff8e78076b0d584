// The workflow of the tool-call tests (tool_call_test.cpp in one process,
// tool_helper.cpp for the processes a test kills): one LLM agent, "booker",
// whose prompt offers the tool "book"; a model that asks for one call of it,
// then answers; the tool appends a line to a counter file for every
// execution (so executions are counted across processes) and may kill its
// own process in the middle of its first call.
#pragma once

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/call_tool.hpp>
#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/models/chat_model.hpp>
#include <switchboard/agents/tool.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/orchestrator/workflow.hpp>

#include "orchestrator_test_support.hpp"

#include <boost/json/parse.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <memory>
#include <string>

namespace switchboard::orchestrator::testing {

// How the "book" tool behaves.
struct book_settings {
  std::string counter;             // file that gets a line per execution
  bool needs_approval = false;
  bool idempotent = false;
  bool crash_in_first_call = false;  // SIGKILL after counting, while the call is in flight
};

inline int count_lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

class book_tool final : public agents::tool {
 public:
  explicit book_tool(book_settings settings) : s_(std::move(settings)) {}

  std::string_view name() const noexcept override { return "book"; }
  std::string_view description() const noexcept override { return "Books the minivan for a slot."; }
  boost::json::object parameters() const override {
    return boost::json::parse(R"({"type": "object", "properties": {"slot": {"type": "string"}},
                                  "required": ["slot"], "additionalProperties": false})")
        .as_object();
  }
  bool needs_approval() const noexcept override { return s_.needs_approval; }
  bool idempotent() const noexcept override { return s_.idempotent; }

  boost::asio::awaitable<agents::tool_result> call(agents::tool_context&, const boost::json::value& args) override {
    const bool first = count_lines(s_.counter) == 0;
    {
      // One write(2) of one line, flushed before anything else can happen.
      const std::string line = "book " + std::string(args.at("slot").as_string()) + "\n";
      const int fd = ::open(s_.counter.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (fd >= 0) {
        [[maybe_unused]] auto n = ::write(fd, line.data(), line.size());
        ::fsync(fd);
        ::close(fd);
      }
    }
    if (s_.crash_in_first_call && first) std::raise(SIGKILL);
    co_return boost::json::value{{"booked", args.at("slot")}};
  }

 private:
  book_settings s_;
};

// Asks for one call of "book" until the conversation holds its result, then
// answers with the tool's outcome ("booked" or the error code it got).
class booking_model final : public models::chat_model {
 public:
  boost::asio::awaitable<models::chat_result> complete(models::chat_request request) override {
    ++calls;
    models::chat_result result;
    const models::chat_message* answer = nullptr;
    for (const auto& m : request.messages) {
      if (m.role == models::chat_role::tool) answer = &m;
    }
    if (answer == nullptr) {
      result.tool_calls.push_back({"call_1", "book", R"({"slot": "2026-11-27T09:00"})"});
      co_return result;
    }
    std::string status = "booked";
    if (answer->is_error) {
      const auto error = boost::json::parse(answer->content);
      status = std::string(error.at("error").at("code").as_string());
    }
    result.text = R"({"data": {"status": ")" + status +
                  R"("}, "explanation": "Done.", "confidence": 0.9, "reasoning": "The tool answered."})";
    co_return result;
  }
  std::string_view provider() const noexcept override { return "test"; }

  int calls = 0;
};

inline constexpr std::string_view booker_prompt = R"({
  "name": "booker", "version": 1, "description": "Books things.",
  "output_schema": "test.output@1",
  "tools": ["book"],
  "system": "You book things.",
  "user": "Request: {{input/request}}"
})";

// A native agent that books through call_tool: the same journal, replay
// and approval as the LLM agent's tool loop.
class native_booker final : public agents::agent {
 public:
  explicit native_booker(const agents::tool_registry& tools) : tools_(tools) {}
  std::string_view name() const noexcept override { return "native_booker"; }
  std::string_view description() const noexcept override { return "Books without a model."; }
  std::string output_schema() const override { return "test.output@1"; }
  bool uses_tools() const noexcept override { return true; }
  boost::asio::awaitable<protocol::envelope> run(agents::agent_context& context) override {
    // g++ 12: named before co_await (README, "Development").
    const std::string slot = "2026-11-28T10:00";
    boost::json::value arguments{{"slot", slot}};
    std::string call_id = "book:" + slot;
    const std::string_view tool_name = "book";
    auto booked =
        co_await agents::call_tool(context, name(), tools_, tool_name, std::move(arguments), std::move(call_id));
    const std::string status = booked.ok() ? "booked" : booked.error().code;
    co_return make_envelope({{"status", status}}, 0.9, "Booked natively.");
  }

 private:
  const agents::tool_registry& tools_;
};

// The registries a run needs; they must outlive the hub.
struct tool_setup {
  explicit tool_setup(book_settings settings) {
    tools.add(std::make_shared<book_tool>(std::move(settings)));
    agents::llm_agent_options options;
    options.tools = &tools;
    registry.add(std::make_shared<agents::llm_agent>(
        std::vector{agents::prompt_file::parse(booker_prompt, "booker.v1.json")}, registry.schemas_ptr(), options));
    registry.add(std::make_shared<native_booker>(tools));
    models.add("default", model);
  }

  agents::tool_registry tools;
  agents::agent_registry registry{test_schemas()};
  std::shared_ptr<booking_model> model = std::make_shared<booking_model>();
  agents::model_set models;
};

inline workflow_builder booking_workflow(const std::string& agent = "booker") {
  workflow_builder b{"booking"};
  b.agent(agent).otherwise("done");
  b.end("done");
  return b;
}

}  // namespace switchboard::orchestrator::testing
