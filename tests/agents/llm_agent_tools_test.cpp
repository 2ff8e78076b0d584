// The tool loop inside llm_agent: scripted-model cases (both wire formats
// end to end over HTTP: llm_agent_tools_http_test.cpp).
#include "tool_loop_fixture.hpp"

namespace switchboard::agents {
namespace {

using namespace tool_loop_test;

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

}  // namespace
}  // namespace switchboard::agents
