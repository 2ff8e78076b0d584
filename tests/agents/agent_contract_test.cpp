// Runs every agent kind through the same contract: a valid envelope, the
// schema enforced by the framework (not by the agent), and cancellation
// honoured. See agent_contract.hpp to add more agents.
#include "agent_contract.hpp"

#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/agents/plugin_loader.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <gmock/gmock.h>

#include <chrono>

namespace switchboard::agents::agent_test {
namespace {

namespace asio = boost::asio;
using ::testing::IsEmpty;
using ::testing::Not;

protocol::envelope run_agent(const agent_contract_fixture& f, const boost::json::value& input) {
  context_holder holder;
  holder.input = input;
  holder.models = f.models;
  auto context = holder.make();
  return run_sync(f.registry->at(f.agent_name).run(context));
}

TEST_P(agent_contract, DescribesItselfAndDeclaresARegisteredSchema) {
  const auto f = GetParam().make();
  const agent& a = f.registry->at(f.agent_name);
  EXPECT_EQ(a.name(), f.agent_name);
  EXPECT_FALSE(a.description().empty());
  EXPECT_TRUE(f.registry->schemas().find(a.output_schema())) << a.output_schema();
}

TEST_P(agent_contract, ReturnsAValidEnvelope) {
  const auto f = GetParam().make();
  const auto out = run_agent(f, f.valid_input);
  EXPECT_FALSE(out.failed()) << out.reasoning;
  EXPECT_GE(out.confidence, 0.0);
  EXPECT_LE(out.confidence, 1.0);
  EXPECT_THAT(f.registry->validate(f.registry->at(f.agent_name), out), IsEmpty());
}

TEST_P(agent_contract, SchemaIsEnforcedByTheFramework) {
  const auto f = GetParam().make();
  const agent& a = f.registry->at(f.agent_name);
  auto out = run_agent(f, f.valid_input);
  // Whatever the agent returned, a tampered copy is caught by the registry.
  auto empty_data = out;
  empty_data.data = {{"unexpected_member_for_the_contract_test", true}};
  EXPECT_THAT(f.registry->validate(a, empty_data), Not(IsEmpty()));
  auto bad_confidence = out;
  bad_confidence.confidence = 1.5;
  EXPECT_THAT(f.registry->validate(a, bad_confidence), Not(IsEmpty()));
  auto no_reasoning = out;
  no_reasoning.reasoning.clear();
  EXPECT_THAT(f.registry->validate(a, no_reasoning), Not(IsEmpty()));
}

TEST_P(agent_contract, HonoursCancellation) {
  const auto f = GetParam().make();
  context_holder holder;
  holder.input = f.suspending_input.value_or(f.valid_input);
  holder.models = f.suspending_models.empty() ? f.models : f.suspending_models;
  auto context = holder.make();

  asio::io_context io;
  asio::cancellation_signal cancel;
  std::exception_ptr error;
  bool finished = false;
  asio::co_spawn(io, f.registry->at(f.agent_name).run(context),
                 asio::bind_cancellation_slot(cancel.slot(),
                                              [&](std::exception_ptr e, protocol::envelope) {
                                                error = e;
                                                finished = true;
                                              }));
  // Let the agent reach its suspension point, then cancel the workflow.
  asio::steady_timer tick(io, std::chrono::milliseconds(20));
  tick.async_wait([&](boost::system::error_code) { cancel.emit(asio::cancellation_type::terminal); });
  io.run_for(std::chrono::seconds(30));  // a bound, not a timing assertion: no hang
  ASSERT_TRUE(finished) << "run() did not complete after cancellation";
  if (!f.suspending_input) return;  // never suspends: completing is the contract
  ASSERT_TRUE(error) << "a cancelled run must not produce an answer";
  try {
    std::rethrow_exception(error);
  } catch (const model_error& e) {
    EXPECT_EQ(e.errc(), model_errc::cancelled) << e.what();
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::operation_aborted) << e.what();
  }
}

// --- the agents run through the contract here -----------------------------

// A native agent: plain C++, awaits a timer when asked to wait.
class native_echo_agent final : public agent {
 public:
  std::string_view name() const noexcept override { return "native_echo"; }
  std::string_view description() const noexcept override { return "Echoes the request as a title."; }
  std::string output_schema() const override { return "meeting.output@1"; }
  asio::awaitable<protocol::envelope> run(agent_context& context) override {
    if (const auto* wait = context.input.as_object().if_contains("wait_ms")) {
      asio::steady_timer timer(co_await asio::this_coro::executor);
      timer.expires_after(std::chrono::milliseconds(wait->as_int64()));
      co_await timer.async_wait(asio::use_awaitable);
    }
    protocol::envelope out;
    out.data = {{"title", context.input.at("request")}};
    out.explanation = "Echoed the request.";
    out.confidence = 1.0;
    out.reasoning = "Native agents copy the request.";
    co_return out;
  }
};

agent_contract_fixture native_fixture() {
  agent_contract_fixture f;
  f.registry = std::make_shared<agent_registry>(test_schemas());
  f.registry->add(std::make_shared<native_echo_agent>());
  f.agent_name = "native_echo";
  f.valid_input = boost::json::parse(R"({"request": "Standup"})");
  f.suspending_input = boost::json::parse(R"({"request": "Standup", "wait_ms": 60000})");
  return f;
}

agent_contract_fixture llm_fixture() {
  agent_contract_fixture f;
  f.registry = std::make_shared<agent_registry>(test_schemas());
  prompt_library library;
  library.load_directory(test_data() / "prompts");
  register_prompt_agents(*f.registry, library);
  f.agent_name = "meeting_parser";
  auto model = std::make_shared<scripted_model>();
  const std::string answer =
      R"({"data": {"title": "Standup", "start_time": "09:00"}, "explanation": "x",
          "confidence": 0.9, "reasoning": "Named in the request."})";
  model->push_text(answer);
  f.models.add("default", model);
  // The cancellation case: the model takes a minute to answer.
  auto slow = std::make_shared<scripted_model>();
  slow->push(scripted_response::text(answer).after(std::chrono::minutes(1)));
  f.suspending_models.add("default", slow);
  f.valid_input = boost::json::parse(R"({"request": "Standup at nine"})");
  f.suspending_input = f.valid_input;
  return f;
}

agent_contract_fixture plugin_fixture() {
  agent_contract_fixture f;
  f.registry = std::make_shared<agent_registry>(std::make_shared<protocol::schema_registry>());
  load_plugin(*f.registry, SWITCHBOARD_EXAMPLE_PLUGIN);
  f.agent_name = "text_stats";
  f.valid_input = boost::json::parse(R"({"request": "count these words"})");
  f.suspending_input = boost::json::parse(R"({"request": "slow", "simulate_latency_ms": 60000})");
  return f;
}

INSTANTIATE_TEST_SUITE_P(framework_agents, agent_contract,
                         ::testing::Values(agent_contract_case{"native", &native_fixture},
                                           agent_contract_case{"llm_prompt_file", &llm_fixture},
                                           agent_contract_case{"example_plugin", &plugin_fixture}),
                         agent_contract_case_name);

}  // namespace
}  // namespace switchboard::agents::agent_test
