// The tool loop inside llm_agent: scripted-model unit cases, then both wire
// formats end to end against the loopback model server.
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

namespace switchboard::agents {
namespace {

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
class fixed_trace_parents final : public trace_parents {
 public:
  static telemetry::span_context context(std::uint8_t last) {
    telemetry::span_context out;
    out.trace_id.bytes.fill(0x7a);
    out.span_id.bytes.fill(0x01);
    out.span_id.bytes.back() = last;
    out.trace_flags = telemetry::sampled_flag;
    return out;
  }
  telemetry::span_context step_span(std::string_view run_id) const override {
    return run_id == "run-9" ? context(0x51) : telemetry::span_context{};
  }
  telemetry::span_context tool_span(std::string_view run_id, std::string_view call_id) const override {
    if (run_id != "run-9") return {};
    return context(call_id == "c1" ? 0xc1 : 0xc2);
  }
};

TEST_F(ToolLoop, TracedRequestsBelongToTheStepAndEachToolCallToItsOwnSpan) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"},
                                             {"c2", "lookup", R"({"date": "2026-11-25"})"}}));
  model->push_text(std::string(good_answer), {5, 3});
  auto a = agent();
  auto context = holder.make();
  context.workflow_id = "run-9";
  context.traces = std::make_shared<fixed_trace_parents>();
  ASSERT_FALSE(run(*a, context).failed());
  ASSERT_EQ(model->calls(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(model->request(i).trace.span_id, fixed_trace_parents::context(0x51).span_id) << i;
  ASSERT_EQ(lookup->traces.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto expected = fixed_trace_parents::context(lookup->call_ids[i] == "c1" ? 0xc1 : 0xc2);
    EXPECT_EQ(lookup->traces[i].span_id, expected.span_id) << lookup->call_ids[i];
    EXPECT_EQ(lookup->traces[i].trace_id, expected.trace_id);
  }
}

TEST_F(ToolLoop, UntracedRequestsAndCallsCarryNoContext) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"}}));
  model->push_text(std::string(good_answer), {5, 3});
  auto a = agent();
  auto context = holder.make();
  ASSERT_FALSE(run(*a, context).failed());
  EXPECT_FALSE(model->request(0).trace.valid());
  ASSERT_EQ(lookup->traces.size(), 1u);
  EXPECT_FALSE(lookup->traces[0].valid());
}

TEST_F(ToolLoop, ToolRoundThenFinalAnswer) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"}}, "Let me look."));
  model->push_text(std::string(good_answer), {5, 3});
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  EXPECT_EQ(out.data.at("title"), "Design review");
  ASSERT_EQ(lookup->calls.size(), 1u);
  EXPECT_EQ(lookup->calls[0], json::parse(R"({"date": "2026-11-24"})"));
  EXPECT_EQ(lookup->call_ids[0], "c1");
  ASSERT_EQ(model->calls(), 2u);  // the final turn was taken as it was

  const auto first = model->request(0);
  ASSERT_EQ(first.tools.size(), 3u);
  EXPECT_EQ(first.tools[0].name, "lookup");
  ASSERT_TRUE(first.tool_choice);
  EXPECT_EQ(first.tool_choice->type, tool_choice::kind::auto_);

  const auto second = model->request(1);
  const auto& assistant = second.messages.at(second.messages.size() - 2);
  EXPECT_EQ(assistant.role, chat_role::assistant);
  EXPECT_EQ(assistant.content, "Let me look.");
  ASSERT_EQ(assistant.tool_calls.size(), 1u);
  EXPECT_EQ(assistant.tool_calls[0].id, "c1");
  const auto result = tool_message(1, "c1");
  EXPECT_FALSE(result.is_error);
  EXPECT_THAT(result.content, HasSubstr("standup"));

  ASSERT_EQ(context.tool_calls.size(), 1u);
  const auto& record = context.tool_calls[0].as_object();
  EXPECT_EQ(record.at("tool"), "lookup");
  EXPECT_EQ(record.at("id"), "c1");
  EXPECT_EQ(record.at("round"), 1);
  EXPECT_EQ(record.at("is_error"), false);
  EXPECT_EQ(record.at("result").at("date"), "2026-11-24");
  // The call waited on a 100 ms timer, which never fires early: the record
  // measured the call, whatever the machine's load.
  EXPECT_GE(record.at("duration_ms").to_number<double>(), 100.0);
  EXPECT_EQ(context.usage.total(), 8);
}

TEST_F(ToolLoop, FinalAnswerThatIsNotAnEnvelopeGoesThroughTheLadder) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"}}));
  model->push_text("The review is on Tuesday.", {10, 2});
  model->push_text(std::string(good_answer), {20, 4});
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  ASSERT_EQ(model->calls(), 3u);
  const auto ladder = model->request(2);
  ASSERT_TRUE(ladder.tool_choice);
  EXPECT_EQ(ladder.tool_choice->type, tool_choice::kind::none);
  EXPECT_EQ(ladder.tools.size(), 3u);  // still declared: the history holds calls
  EXPECT_EQ(tool_message(2, "c1").tool_call_id, "c1");
  EXPECT_EQ(context.usage.total(), 12 + 24);  // every turn counted once
}

// An invalid final turn counts as the call's first answer attempt and goes
// back to the model with the validator's errors, as the ladder's re-asks do.
TEST_F(ToolLoop, InvalidFinalAnswerIsShownBackWithTheValidatorsErrors) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"}}));
  const std::string no_title =
      R"({"data": {"start_time": "2026-11-24T10:00"}, "explanation": "x", "confidence": 0.9, "reasoning": "r"})";
  model->push_text(no_title);
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  ASSERT_EQ(model->calls(), 3u);
  const auto reask = model->request(2);
  ASSERT_GE(reask.messages.size(), 2u);
  const auto& shown = reask.messages[reask.messages.size() - 2];
  EXPECT_EQ(shown.role, chat_role::assistant);
  EXPECT_EQ(shown.content, no_title);
  EXPECT_EQ(reask.messages.back().role, chat_role::user);
  EXPECT_THAT(reask.messages.back().content, HasSubstr("not valid against the JSON Schema"));
  EXPECT_THAT(reask.messages.back().content, HasSubstr("title"));
}

TEST_F(ToolLoop, InvalidFinalAnswersSpendMaxAttemptsInTotal) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"}}));
  for (int i = 0; i < 4; ++i) model->push_text("not an answer");
  auto a = agent();  // max_attempts 2
  auto context = holder.make();
  const auto out = run(*a, context);
  EXPECT_TRUE(out.failed());
  EXPECT_EQ(model->calls(), 3u);  // the tool round, then two answer attempts
}

TEST_F(ToolLoop, ARefusalAfterToolCallsEndsTheCallWithTheModelsWords) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"}}));
  chat_result refused;
  refused.refusal = "I cannot plan that meeting.";
  refused.stop = stop_reason::refusal;
  model->push(scripted_response::result(refused));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_TRUE(out.failed());
  EXPECT_THAT(out.reasoning, HasSubstr("I cannot plan that meeting."));
  EXPECT_EQ(model->calls(), 2u);  // never asked again: it would only refuse again
  // The refused turn is the step's recorded attempt, as in the ladder.
  ASSERT_EQ(context.model_attempts.size(), 1u);
  EXPECT_EQ(context.model_attempts[0].at("reason"), "refusal");
  EXPECT_EQ(context.model_attempts[0].at("stop"), "refusal");
}

TEST_F(ToolLoop, AFinalTurnCutOffAtTheTokenLimitIsAskedAgainWithRoomToFinish) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"}}));
  chat_result cut;
  cut.text = std::string(good_answer).substr(0, 40);
  cut.finish_reason = "length";
  cut.stop = stop_reason::truncated;
  cut.usage = {50, 400};
  model->push(scripted_response::result(cut));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  ASSERT_EQ(model->calls(), 3u);
  const auto again = model->request(2);
  ASSERT_TRUE(again.max_tokens);
  EXPECT_EQ(*again.max_tokens, 2 * std::max<int>(model->request(1).max_tokens.value_or(0), 400));
  for (const auto& m : again.messages) EXPECT_NE(m.content, cut.text) << "the cut answer is not shown back";
}

// A native agent's call_tool replays a recorded result only for the very
// call it recorded: an id used again for other arguments is refused, and
// neither call's result is mistaken for the other's.
TEST_F(ToolLoop, CallToolReplaysARecordedCallAndRefusesItsIdForAnotherOne) {
  auto context = holder.make();
  context.journal = std::make_shared<memory_tool_journal>();
  auto call = [&](std::string_view date) {
    const json::value arguments = json::object{{"date", date}};
    return agent_test::run_sync(call_tool(context, "native", tools, "lookup", arguments, "look-1"));
  };
  const tool_result first = call("2026-11-24");
  ASSERT_TRUE(first.ok()) << first.error().message;
  const tool_result again = call("2026-11-24");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value(), first.value());
  EXPECT_EQ(lookup->calls.size(), 1u) << "the recorded call is not made again";

  const tool_result other = call("2026-11-25");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, "call_id_conflict");
  EXPECT_THAT(other.error().message, HasSubstr("look-1"));
  EXPECT_EQ(lookup->calls.size(), 1u) << "nor is the other one";
}

TEST_F(ToolLoop, ParallelCallsRunConcurrently) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"},
                                             {"c2", "lookup", R"({"date": "2026-11-25"})"}}));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  EXPECT_EQ(lookup->max_in_flight, 2);  // both were in flight at once
  EXPECT_THAT(tool_message(1, "c1").content, HasSubstr("2026-11-24"));
  EXPECT_THAT(tool_message(1, "c2").content, HasSubstr("2026-11-25"));
  ASSERT_EQ(context.tool_calls.size(), 2u);
  EXPECT_EQ(context.tool_calls[0].at("id"), "c1");  // the model's order
}

TEST_F(ToolLoop, InvalidArgumentsGoBackToTheModelAndTheToolIsNotCalled) {
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": 5})"}, {"c2", "lookup", "{not json"}}));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  EXPECT_TRUE(lookup->calls.empty());
  const auto bad_type = tool_message(1, "c1");
  EXPECT_TRUE(bad_type.is_error);
  EXPECT_THAT(bad_type.content, AllOf(HasSubstr("invalid_arguments"), HasSubstr("/date")));
  EXPECT_TRUE(tool_message(1, "c2").is_error);
  EXPECT_EQ(context.tool_calls[0].at("error").at("code"), "invalid_arguments");
}

TEST_F(ToolLoop, UnknownOrNotOfferedToolIsAnErrorResultNamingTheAllowedTools) {
  model->push(scripted_response::tool_calls({{"c1", "erase_disk", "{}"}, {"c2", "not_offered", "{}"}}));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  for (const char* id : {"c1", "c2"}) {
    const auto m = tool_message(1, id);
    EXPECT_TRUE(m.is_error);
    EXPECT_THAT(m.content, AllOf(HasSubstr("unknown_tool"), HasSubstr("lookup, slow, broken")));
  }
}

TEST_F(ToolLoop, ThrowingToolIsAnErrorResultNamingTheTool) {
  model->push(scripted_response::tool_calls({{"c1", "broken", R"({"date": "2026-11-24"})"}}));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  EXPECT_EQ(broken->calls.size(), 1u);
  const auto m = tool_message(1, "c1");
  EXPECT_TRUE(m.is_error);
  EXPECT_THAT(m.content, AllOf(HasSubstr("tool_failed"), HasSubstr("'broken'"), HasSubstr("disk on fire")));
}

// It may have acted before it was cut off: for a tool that is not
// idempotent, the model hears that the outcome is unknown, not "try again".
TEST_F(ToolLoop, ToolThatTimesOutIsCancelledAndItsOutcomeIsUnknown) {
  options.tool_timeout = 50ms;
  model->push(scripted_response::tool_calls({{"c1", "slow", R"({"date": "2026-11-24"})"}}));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  const hang_guard guard("a tool past its timeout is cancelled");
  const auto out = run(*a, context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  EXPECT_TRUE(slow->saw_cancel);  // cut short, not waited for
  const auto m = tool_message(1, "c1");
  EXPECT_TRUE(m.is_error);
  EXPECT_THAT(m.content, AllOf(HasSubstr("unknown_outcome"), HasSubstr("50 ms"), HasSubstr("\"retryable\":false")));
}

TEST_F(ToolLoop, AnIdempotentToolThatTimesOutIsReportedAsARetryableTimeout) {
  options.tool_timeout = 50ms;
  slow->idempotent_calls = true;
  model->push(scripted_response::tool_calls({{"c1", "slow", R"({"date": "2026-11-24"})"}}));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  ASSERT_FALSE(run(*a, context).failed());
  const auto m = tool_message(1, "c1");
  EXPECT_THAT(m.content, AllOf(HasSubstr("\"code\":\"timeout\""), HasSubstr("\"retryable\":true")));
}

// Two calls of one turn with one id (or none) are told apart, so each gets
// its own answer and its own journal entry.
TEST_F(ToolLoop, CallsOfOneTurnWithTheSameIdGetTheirOwnAnswers) {
  model->push(scripted_response::tool_calls({{"dup", "lookup", R"({"date": "2026-11-24"})"},
                                             {"dup", "lookup", R"({"date": "2026-11-25"})"},
                                             {"", "lookup", R"({"date": "2026-11-26"})"}}));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  ASSERT_FALSE(run(*a, context).failed());
  ASSERT_EQ(lookup->calls.size(), 3u);
  ASSERT_EQ(context.tool_calls.size(), 3u);
  std::set<std::string> ids;
  for (const auto& call : context.tool_calls) ids.insert(std::string(call.at("id").as_string()));
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_THAT(tool_message(1, "dup").content, HasSubstr("2026-11-24"));
  EXPECT_THAT(tool_message(1, "call_1_1").content, HasSubstr("2026-11-25"));
  EXPECT_THAT(tool_message(1, "call_1_2").content, HasSubstr("2026-11-26"));
}

TEST_F(ToolLoop, MaxToolRoundsEndsTheRunClearly) {
  options.max_tool_rounds = 2;
  for (int i = 0; i < 3; ++i) {
    model->push(scripted_response::tool_calls({{"c" + std::to_string(i), "broken", R"({"date": "x"})"}}));
  }
  auto a = agent();
  auto context = holder.make();
  const auto out = run(*a, context);
  ASSERT_TRUE(out.failed());
  EXPECT_THAT(out.error->message, AllOf(HasSubstr("planner"), HasSubstr("max_tool_rounds (2)")));
  EXPECT_EQ(broken->calls.size(), 2u);
  EXPECT_EQ(model->calls(), 3u);
  EXPECT_EQ(context.tool_calls.size(), 2u);
}

TEST_F(ToolLoop, CancellingTheAgentCancelsARunningTool) {
  model->push(scripted_response::tool_calls({{"c1", "slow", R"({"date": "2026-11-24"})"}}));
  auto a = agent();
  auto context = holder.make();
  asio::io_context io;
  asio::cancellation_signal signal;
  auto result = asio::co_spawn(io, a->run(context), asio::bind_cancellation_slot(signal.slot(), asio::use_future));
  asio::steady_timer timer(io, 50ms);
  timer.async_wait([&](boost::system::error_code) { signal.emit(asio::cancellation_type::terminal); });
  const hang_guard guard("cancelling the agent cancels its tool");
  io.run();
  EXPECT_TRUE(slow->saw_cancel);  // cut short, not waited for
  try {
    (void)result.get();
    FAIL() << "a cancelled run returned";
  } catch (const model_error& e) {
    EXPECT_EQ(e.code(), make_error_code(model_errc::cancelled));
  }
  EXPECT_EQ(model->calls(), 1u);
}

TEST_F(ToolLoop, LongToolResultIsCut) {
  options.max_tool_result_bytes = 200;
  lookup->payload = 5000;
  model->push(scripted_response::tool_calls({{"c1", "lookup", R"({"date": "2026-11-24"})"}}));
  model->push_text(std::string(good_answer));
  auto a = agent();
  auto context = holder.make();
  ASSERT_FALSE(run(*a, context).failed());
  const auto m = tool_message(1, "c1");
  EXPECT_LT(m.content.size(), 400u);
  EXPECT_THAT(m.content, HasSubstr("[cut: the tool's result was"));
  EXPECT_EQ(context.tool_calls[0].at("cut"), true);
}

TEST_F(ToolLoop, PromptWithoutToolsSendsNoTools) {
  model->push_text(std::string(good_answer));
  auto a = agent(plain_prompt);
  auto context = holder.make();
  ASSERT_FALSE(run(*a, context).failed());
  const auto request = model->request(0);
  EXPECT_TRUE(request.tools.empty());
  EXPECT_FALSE(request.tool_choice);
  EXPECT_TRUE(context.tool_calls.empty());
}

TEST_F(ToolLoop, PromptNamingAnUnregisteredToolIsRefused) {
  tool_registry empty;
  options.tools = &empty;
  EXPECT_THROW((void)agent(), agent_error);
}

// --- both wire formats over HTTP ----------------------------------------------

enum class wire { openai, anthropic };

struct ToolLoopOverHttp : ::testing::TestWithParam<wire> {
  loopback_model_server server;
  asio::io_context io;  // outlives the model: it keeps idle connections on it
  std::shared_ptr<protocol::schema_registry> schemas = agent_test::test_schemas();
  tool_registry tools;
  std::shared_ptr<probe_tool> lookup = std::make_shared<probe_tool>("lookup", 100ms);
  agent_test::context_holder holder;
  std::shared_ptr<llm_agent> agent;

  ToolLoopOverHttp() {
    tools.add(lookup);
    tools.add(std::make_shared<probe_tool>("slow"));
    tools.add(std::make_shared<probe_tool>("broken"));
    llm_agent_options options;
    options.tools = &tools;
    agent = std::make_shared<llm_agent>(std::vector{prompt_file::parse(tools_prompt, "planner.v1.json")}, schemas,
                                        options);
    if (GetParam() == wire::openai) {
      openai_options o;
      o.http.base_url = server.base_url() + "/v1";
      o.http.retry.max_attempts = 1;
      o.model = "gpt-test";
      holder.models.add("default", std::make_shared<openai_model>(o));
    } else {
      anthropic_options o;
      o.http.base_url = server.base_url();
      o.http.retry.max_attempts = 1;
      o.api_key = "sk-test";
      o.model = "claude-test";
      holder.models.add("default", std::make_shared<anthropic_model>(o));
    }
    holder.input = json::parse(R"({"request": "Plan the design review"})");
  }
  ~ToolLoopOverHttp() override { holder.models = model_set{}; }

  protocol::envelope run(agent_context& context) {
    auto result = asio::co_spawn(io, agent->run(context), asio::use_future);
    io.restart();
    io.run();
    return result.get();
  }
  json::value body(std::size_t i) const { return server.requests().at(i).json(); }
};

TEST_P(ToolLoopOverHttp, ParallelToolRoundThenFinalAnswer) {
  server.enqueue(server_action::tool_calls(
      {{"c1", "lookup", R"({"date": "2026-11-24"})"}, {"c2", "lookup", R"({"date": "2026-11-25"})"}}));
  server.enqueue(server_action::reply(std::string(good_answer)));
  auto context = holder.make();
  const auto out = run(context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  ASSERT_EQ(lookup->calls.size(), 2u);
  EXPECT_EQ(lookup->calls[0].at("date"), "2026-11-24");
  EXPECT_EQ(lookup->max_in_flight, 2);
  ASSERT_EQ(server.request_count(), 2u);

  const auto first = body(0);
  const auto& offered = first.at("tools").as_array();
  ASSERT_EQ(offered.size(), 3u);
  const std::string second = json::serialize(body(1).at("messages"));
  if (GetParam() == wire::openai) {
    EXPECT_EQ(offered[0].at("function").at("name"), "lookup");
    EXPECT_THAT(second, AllOf(HasSubstr(R"("tool_calls")"), HasSubstr(R"("tool_call_id":"c1")"),
                              HasSubstr(R"("tool_call_id":"c2")"), HasSubstr("standup")));
  } else {
    EXPECT_EQ(offered[0].at("name"), "lookup");
    EXPECT_THAT(second, AllOf(HasSubstr(R"("tool_use")"), HasSubstr(R"("tool_use_id":"c1")"),
                              HasSubstr(R"("tool_use_id":"c2")"), HasSubstr("standup")));
  }
  EXPECT_EQ(context.tool_calls.size(), 2u);
}

TEST_P(ToolLoopOverHttp, InvalidArgumentsGoBackAsAnErrorResult) {
  server.enqueue(server_action::tool_calls({{"c1", "lookup", R"({"day": "Tuesday"})"}}));
  server.enqueue(server_action::reply(std::string(good_answer)));
  auto context = holder.make();
  const auto out = run(context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  EXPECT_TRUE(lookup->calls.empty());
  const std::string second = json::serialize(body(1).at("messages"));
  EXPECT_THAT(second, HasSubstr("invalid_arguments"));
  if (GetParam() == wire::anthropic) {
    EXPECT_THAT(second, HasSubstr(R"("is_error":true)"));
  }
}

INSTANTIATE_TEST_SUITE_P(Wire, ToolLoopOverHttp, ::testing::Values(wire::openai, wire::anthropic),
                         [](const auto& info) { return info.param == wire::openai ? "OpenAI" : "Anthropic"; });

}  // namespace
}  // namespace switchboard::agents
