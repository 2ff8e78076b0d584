#include <switchboard/agents/llm_agent.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/agents/tool_registry.hpp>

#include "agent_test_support.hpp"

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::agents {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using agent_test::code_of;
using agent_test::context_holder;
using agent_test::run_sync;
using agent_test::test_data;

constexpr std::string_view good_answer = R"({
  "data": {"title": "Design review", "start_time": "2026-11-24T10:00", "attendees": ["Ana"]},
  "explanation": "Model wording that the template replaces.",
  "confidence": 0.95,
  "reasoning": "The request names a design review on Tuesday at ten."
})";

struct LlmAgent : ::testing::Test {
  std::shared_ptr<protocol::schema_registry> schemas = agent_test::test_schemas();
  prompt_library library;
  std::shared_ptr<scripted_model> model = std::make_shared<scripted_model>();
  context_holder holder;

  LlmAgent() {
    library.load_directory(test_data() / "prompts");
    holder.input = boost::json::parse(R"({"request": "List the design review asap"})");
    holder.models.add("default", model);
  }
  std::shared_ptr<llm_agent> make() { return llm_agent::from_library(library, "meeting_parser", schemas); }
};

TEST_F(LlmAgent, DescribesItselfFromTheNewestPrompt) {
  const auto a = make();
  EXPECT_EQ(a->name(), "meeting_parser");
  EXPECT_THAT(std::string(a->description()), HasSubstr("attendees"));
  EXPECT_EQ(a->output_schema(), "meeting.output@1");
  EXPECT_EQ(a->prompt_version(), "meeting_parser.v2");
  EXPECT_EQ(a->select("").version, 2);
  EXPECT_EQ(a->select("v1").version, 1);
}

TEST_F(LlmAgent, ValidAnswerBecomesAnEnvelopeWithRulesTemplateAndPolicies) {
  model->push_text(std::string(good_answer), {100, 20});
  const auto a = make();
  auto context = holder.make();
  const protocol::envelope out = run_sync(a->run(context));

  EXPECT_FALSE(out.failed());
  EXPECT_EQ(out.data.at("title"), "Design review");
  // base 0.5 + 0.3 (start_time present); attendees present, so no -0.1.
  EXPECT_DOUBLE_EQ(out.confidence, 0.8);
  EXPECT_EQ(out.explanation, "Meeting \"Design review\" at 2026-11-24T10:00");
  EXPECT_THAT(out.reasoning,
              AllOf(HasSubstr("The request names a design review"),
                    HasSubstr("Confidence rules: base 0.5 (model said 0.95); +0.3 when "
                              "/data/start_time is present; result 0.8."),
                    HasSubstr("Prompt policies applied: list_contract, urgent.")));
  EXPECT_EQ(context.used_prompt_version, "meeting_parser.v2");
  EXPECT_THAT(context.applied_policies, ElementsAre("list_contract", "urgent"));
  EXPECT_EQ(context.usage.prompt_tokens, 100);
  EXPECT_EQ(context.usage.completion_tokens, 20);

  agent_registry registry(schemas);
  EXPECT_THAT(registry.validate(*a, out), IsEmpty());
}

TEST_F(LlmAgent, SendsTheRenderedPromptWithModelSettings) {
  model->push_text(std::string(good_answer));
  holder.answers = {"Tuesday"};
  holder.additional_instructions = "prefer mornings";
  const auto a = make();
  auto context = holder.make();
  (void)run_sync(a->run(context));

  const chat_request sent = model->request(0);
  EXPECT_EQ(sent.model, "gpt-test");
  EXPECT_EQ(sent.temperature, 0.0);
  EXPECT_EQ(sent.max_tokens, 400);
  EXPECT_EQ(sent.prompt_version, "meeting_parser.v2");
  ASSERT_GE(sent.messages.size(), 2u);
  EXPECT_EQ(sent.messages[0].role, chat_role::system);
  // The policies sit where the system template put {{policies}}.
  EXPECT_THAT(sent.messages[0].content,
              HasSubstr("You extract meetings from scheduling requests.\n"
                        "When listing, report items_shown and items_total in data.\n"
                        "Prefer the earliest possible start time.\n"
                        "Answer with one JSON envelope."));
  EXPECT_THAT(sent.messages[1].content,
              HasSubstr("Request: List the design review asap\nEarlier answers: Tuesday\n"
                        "Coordinator notes: prefer mornings\nTime zone: "));
}

TEST_F(LlmAgent, AnswersReachTheModelOnceWhetherOrNotThePromptPlacesThem) {
  holder.answers = {"Tuesday", "at ten"};
  const auto a = make();
  model->push_text(std::string(good_answer));
  model->push_text(std::string(good_answer));
  // v2 places them ("Earlier answers: ..."): not repeated at the end.
  auto context = holder.make();
  (void)run_sync(a->run(context));
  EXPECT_THAT(model->request(0).messages.back().content, HasSubstr("Earlier answers: Tuesday\nat ten"));
  EXPECT_THAT(model->request(0).messages.back().content, Not(HasSubstr("clarification questions")));
  // v1 does not: they are appended, oldest first.
  holder.prompt_version = "v1";
  auto v1_context = holder.make();
  (void)run_sync(a->run(v1_context));
  EXPECT_THAT(model->request(1).messages.back().content,
              HasSubstr("\n\nThe user's answers to your clarification questions, oldest first:\nTuesday\nat ten"));
}

TEST_F(LlmAgent, PoliciesApplyOnlyWhenTriggered) {
  holder.input = boost::json::parse(R"({"request": "Book the design review", "time_zone": "CET"})");
  model->push_text(std::string(good_answer));
  const auto a = make();
  auto context = holder.make();
  const auto out = run_sync(a->run(context));
  EXPECT_THAT(context.applied_policies, IsEmpty());
  EXPECT_THAT(out.reasoning, Not(HasSubstr("Prompt policies applied")));
  EXPECT_THAT(model->request(0).messages[0].content, Not(HasSubstr("When listing")));
  EXPECT_THAT(model->request(0).messages[1].content, HasSubstr("Time zone: CET"));

  // A trigger in the coordinator's instructions counts for "urgent" (its
  // default match_on) but not for list_contract (input/request only).
  model->push_text(std::string(good_answer));
  holder.additional_instructions = "this is urgent; list options";
  auto second = holder.make();
  (void)run_sync(a->run(second));
  EXPECT_THAT(second.applied_policies, ElementsAre("urgent"));
}

TEST_F(LlmAgent, ExtraPoliciesAreAppendedToTheSystemPromptWithoutPlaceholder) {
  prompt_policy extra;
  extra.name = "house_style";
  extra.triggers = {"design"};
  extra.instructions = prompt_template::parse("Use the house style.", {"<code>", "house_style", {}});
  llm_agent_options options;
  options.extra_policies.push_back(extra);
  auto a = llm_agent::from_library(library, "meeting_parser", schemas, options);
  holder.prompt_version = "1";  // v1 has no {{policies}}
  model->push_text(std::string(good_answer));
  auto context = holder.make();
  const auto out = run_sync(a->run(context));
  EXPECT_EQ(model->request(0).messages[0].content,
            "You extract meetings. Answer with JSON only.\n\nUse the house style.");
  EXPECT_THAT(context.applied_policies, ElementsAre("house_style"));
  // v1 declares no rules and no explanation template: the model's own values stay.
  EXPECT_DOUBLE_EQ(out.confidence, 0.95);
  EXPECT_EQ(out.explanation, "Model wording that the template replaces.");
  EXPECT_EQ(context.used_prompt_version, "meeting_parser.v1");
  EXPECT_EQ(model->request(0).prompt_version, "meeting_parser.v1");

  options.extra_policies[0].name = "urgent";  // clashes with the file's policy
  EXPECT_THROW(llm_agent::from_library(library, "meeting_parser", schemas, options), agent_error);
}

TEST_F(LlmAgent, InvalidAnswerIsFixedByReAsk) {
  model->push_text(R"({"data": {"title": 7}, "explanation": "x", "confidence": 0.9, "reasoning": "y"})",
                   {40, 10});
  model->push_text(std::string(good_answer), {60, 20});
  const auto a = make();
  auto context = holder.make();
  const auto out = run_sync(a->run(context));
  EXPECT_FALSE(out.failed());
  EXPECT_EQ(model->calls(), 2u);
  EXPECT_EQ(context.usage.total(), 130);  // both attempts are counted
  EXPECT_THAT(model->request(1).messages.back().content, HasSubstr("/data/title"));
}

TEST_F(LlmAgent, AnswerThatNeverValidatesBecomesAnErrorEnvelope) {
  model->push_text("I think the meeting is on Tuesday.", {10, 5});
  model->push_text(R"({"data": {}, "explanation": "x", "confidence": 0.9, "reasoning": "y"})", {10, 5});
  const auto a = make();
  auto context = holder.make();
  const auto out = run_sync(a->run(context));
  ASSERT_TRUE(out.failed());
  EXPECT_EQ(out.confidence, 0.0);
  EXPECT_EQ(out.error->type, "structured_output_failed");
  EXPECT_FALSE(out.error->retryable);
  EXPECT_THAT(out.error->message, AllOf(HasSubstr("meeting_parser"), HasSubstr("2 attempts")));
  EXPECT_THAT(out.reasoning, HasSubstr("structured_output_failed"));
  EXPECT_FALSE(out.explanation.empty());
  EXPECT_EQ(context.usage.total(), 30);  // both attempts are paid for
  agent_registry registry(schemas);
  EXPECT_THAT(registry.validate(*a, out), IsEmpty());
}

TEST_F(LlmAgent, TransportErrorsAreRethrownWithTheirRetryableFlag) {
  model->push(scripted_response::error(
      model_error(model_errc::http_status, "openai: 503 overloaded", 503, "overloaded", true)));
  const auto a = make();
  auto context = holder.make();
  try {
    (void)run_sync(a->run(context));
    FAIL();
  } catch (const model_error& e) {
    EXPECT_EQ(e.errc(), model_errc::http_status);
    EXPECT_TRUE(e.retryable());
    EXPECT_EQ(e.http_status(), 503);
  }
}

TEST_F(LlmAgent, MissingTemplateVariableNamesFileAndLine) {
  holder.input = boost::json::parse(R"({"text": "no request member"})");
  const auto a = make();
  auto context = holder.make();
  try {
    (void)run_sync(a->run(context));
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::template_variable_unknown);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("meeting_parser.v2.json:19"), HasSubstr("user line 1"),
                                HasSubstr("/request")));
  }
  EXPECT_EQ(model->calls(), 0u);  // nothing was sent
}

TEST_F(LlmAgent, UnknownPromptVersionOrMissingModelFail) {
  const auto a = make();
  holder.prompt_version = "9";
  auto context = holder.make();
  try {
    (void)run_sync(a->run(context));
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::unknown_prompt_version);
    EXPECT_THAT(e.what(), HasSubstr("loaded: 1, 2"));
  }
  holder.prompt_version.clear();
  holder.models = model_set{};
  auto no_model = holder.make();
  try {
    (void)run_sync(a->run(no_model));
    FAIL();
  } catch (const model_error& e) {
    EXPECT_EQ(e.errc(), model_errc::not_configured);
    EXPECT_THAT(e.what(), HasSubstr("role 'default'"));
  }
}

TEST_F(LlmAgent, ConstructionChecksSchemaAndExplanationVariables) {
  auto pf = *library.find("meeting_parser", 2);
  pf.output_schema = "nowhere.output@1";
  try {
    llm_agent bad({pf}, schemas);
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::unknown_output_schema);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("meeting_parser.v2.json"), HasSubstr("nowhere.output@1")));
  }
  auto typo = *library.find("meeting_parser", 2);
  typo.explanation_template = prompt_template::parse("{{titel}}", {"x.v1.json", "explanation_template", {}},
                                                     template_kind::explanation);
  try {
    llm_agent bad({typo}, schemas);
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::template_variable_unknown);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("{{titel}}"), HasSubstr("meeting.output@1")));
  }
  auto other = *library.find("meeting_parser", 1);
  other.output_schema = "meeting.output@2";
  EXPECT_THROW(llm_agent({*library.find("meeting_parser", 2), other}, schemas), agent_error);
  EXPECT_THROW(llm_agent({}, schemas), agent_error);
}

TEST_F(LlmAgent, RegisterPromptAgentsRecordsThePromptFileAsOrigin) {
  agent_registry registry(schemas);
  EXPECT_EQ(register_prompt_agents(registry, library), 1u);
  const auto infos = registry.list();
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].name, "meeting_parser");
  EXPECT_EQ(infos[0].origin, "prompt:" + (test_data() / "prompts" / "meeting_parser.v2.json").string());
  EXPECT_THROW(register_prompt_agents(registry, library), agent_error);  // duplicate
}

}  // namespace
}  // namespace switchboard::agents

namespace switchboard::agents {
namespace {

// A tool that is only ever looked up by name.
class named_tool final : public tool {
 public:
  explicit named_tool(std::string name) : name_(std::move(name)) {}
  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "d"; }
  boost::json::object parameters() const override { return {}; }
  boost::asio::awaitable<tool_result> call(tool_context&, const boost::json::value&) override {
    co_return boost::json::value(nullptr);
  }

 private:
  std::string name_;
};

prompt_file prompt_with_tools(std::string_view tools) {
  return prompt_file::parse(R"({"name": "tooled", "version": 1, "description": "d",
      "output_schema": "meeting.output@1", "user": "hi", "tools": )" + std::string(tools) + "}",
                            "prompts/tooled.v1.json");
}

TEST(RegisterPromptAgentsTools, EveryNamedToolMustBeRegistered) {
  const auto schemas = agent_test::test_schemas();
  prompt_library library;
  library.add(prompt_with_tools(R"(["calendar.lookup", "mcp:files/read_file"])"));
  tool_registry tools;
  tools.add(std::make_shared<named_tool>("calendar.lookup"));

  agent_registry registry(schemas);
  try {
    register_prompt_agents(registry, library, {}, &tools);
    ADD_FAILURE() << "expected agent_error";
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::unknown_tool);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("prompts/tooled.v1.json"), HasSubstr("mcp:files/read_file"),
                                HasSubstr("calendar.lookup")));
  }
  EXPECT_THAT(registry.names(), IsEmpty());

  tools.add(std::make_shared<named_tool>("mcp:files/read_file"));
  EXPECT_EQ(register_prompt_agents(registry, library, {}, &tools), 1u);
}

TEST(RegisterPromptAgentsTools, WithoutAToolRegistryTheNamesAreOnlyRecorded) {
  const auto schemas = agent_test::test_schemas();
  prompt_library library;
  library.add(prompt_with_tools(R"(["calendar.lookup"])"));
  agent_registry registry(schemas);
  EXPECT_EQ(register_prompt_agents(registry, library), 1u);
  const auto* a = dynamic_cast<const llm_agent*>(registry.find("tooled"));
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(a->newest().tools, ElementsAre("calendar.lookup"));
}

}  // namespace
}  // namespace switchboard::agents
