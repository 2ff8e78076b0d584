// Shared set-up of the scheduling sample's tests: the sample's data in an
// in-memory calendar, its schemas in a registry, and a helper that runs one
// agent to completion.
#pragma once

#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/agent_context.hpp>
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/scheduling/agents.hpp>
#include <switchboard/scheduling/household.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::scheduling::testing {

inline const std::filesystem::path sample_dir =
    std::filesystem::path(SWITCHBOARD_SOURCE_DIR) / "examples" / "scheduling";

class sample_test : public ::testing::Test {
 protected:
  sample_test()
      : registry_(std::make_shared<protocol::schema_registry>()),
        registration_(register_sample_agents(
            registry_, {.data_dir = sample_dir / "data",
                        .schemas_dir = sample_dir / "schemas",
                        .llm_backed = false,
                        .prompts_dir = {},
                        .calendar_file = {},
                        .reset_calendar = false,
                        .booking_hold = {},
                        .confirm_bookings = false})) {}

  // Runs `name` on `input` with the outputs so far, checks the envelope
  // against the agent's schema and records it in outputs_.
  protocol::envelope run(std::string_view name, const boost::json::value& input) {
    agents::agent& a = registry_.at(name);
    boost::asio::io_context io;
    agents::model_set models;
    agents::agent_context context{.input = input,
                                  .outputs = outputs_,
                                  .additional_instructions = {},
                                  .clarification_answers = answers_,
                                  .models = models,
                                  .logger = spdlog::default_logger(),
                                  .prompt_version = {},
                                  .usage = {},
                                  .used_prompt_version = {},
                                  .applied_policies = {}};
    context.journal = journal_;
    std::optional<protocol::envelope> result;
    boost::asio::co_spawn(io, a.run(context), [&](std::exception_ptr e, protocol::envelope value) {
      if (e) std::rethrow_exception(e);
      result = std::move(value);
    });
    io.run();
    if (!result->failed()) {
      const auto errors = registry_.validate(a, *result);
      EXPECT_TRUE(errors.empty()) << name << ": " << protocol::to_string(errors);
    }
    outputs_.set(std::string(name), *result);
    return *result;
  }

  // nl_parser on a request, then the scheduling chain up to conflicts.
  protocol::envelope parse(const std::string& request) {
    input_ = boost::json::object{{"request", request}};
    return run("nl_parser", input_);
  }
  protocol::envelope next(std::string_view agent) { return run(agent, input_); }

  agents::agent_registry registry_;
  sample_registration registration_;
  agents::output_map outputs_;
  std::vector<std::string> answers_;
  boost::json::value input_;
  // The tool journal the agents get (a hub's, in effect); null: each call
  // keeps its own in memory.
  std::shared_ptr<agents::tool_journal> journal_;
};

// How many entries titled `title` the household's calendars and bookings hold.
inline int entries_titled(const household& h, const std::string& title) {
  int n = 0;
  for (const auto& m : h.members)
    for (const auto& e : m.calendar) n += e.title == title;
  for (const auto& r : h.resources)
    for (const auto& e : r.bookings) n += e.title == title;
  return n;
}

inline std::string str(const boost::json::value& v) {
  return v.is_string() ? std::string(v.get_string()) : boost::json::serialize(v);
}

}  // namespace switchboard::scheduling::testing
