#include <switchboard/agents/prompt_file.hpp>

#include <switchboard/agents/agent_registry.hpp>

#include "agent_test_support.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value_from.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::agents {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using agent_test::code_of;
using agent_test::test_data;

// Expects parse() to fail with `code` and a message containing every part.
void expect_invalid(std::string_view text, agent_errc code, std::vector<std::string> parts) {
  try {
    (void)prompt_file::parse(text, "inline.v1.json");
    ADD_FAILURE() << "expected agent_error for: " << text;
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), code) << e.what();
    for (const auto& p : parts) EXPECT_THAT(e.what(), HasSubstr(p));
  }
}

constexpr std::string_view minimal = R"({
  "name": "inline", "version": 1, "description": "d",
  "output_schema": "meeting.output@1", "user": "hi"
})";

TEST(PromptFile, LoadsEveryMember) {
  const auto pf = prompt_file::load(test_data() / "prompts" / "meeting_parser.v2.json");
  EXPECT_EQ(pf.name, "meeting_parser");
  EXPECT_EQ(pf.version, 2);
  EXPECT_EQ(pf.version_tag(), "meeting_parser.v2");
  EXPECT_EQ(pf.output_schema, "meeting.output@1");
  EXPECT_EQ(pf.model.role, "default");
  EXPECT_EQ(pf.model.model, "gpt-test");
  EXPECT_EQ(pf.model.temperature, 0.0);
  EXPECT_EQ(pf.model.max_tokens, 400);
  EXPECT_EQ(pf.model.mode, output_mode::json_object);
  EXPECT_EQ(pf.model.max_attempts, 2);
  ASSERT_EQ(pf.policies.size(), 2u);
  EXPECT_EQ(pf.policies[0].name, "list_contract");
  EXPECT_EQ(pf.policies[0].match_on, std::vector<std::string>{"input/request"});
  EXPECT_EQ(pf.policies[1].match_on,
            (std::vector<std::string>{"input", "additional_instructions"}));
  EXPECT_EQ(pf.confidence.base, 0.5);
  ASSERT_EQ(pf.confidence.rules.size(), 2u);
  ASSERT_TRUE(pf.explanation_template);
  EXPECT_TRUE(pf.system.uses("policies"));
  // Template lines know their file lines (user starts on line 19).
  EXPECT_EQ(pf.user.origin().describe(2), pf.path.string() + ":20: user line 2");
  EXPECT_EQ(pf.policies[1].instructions.origin().describe(1),
            pf.path.string() + ":34: policies[1].instructions line 1");
}

TEST(PromptFile, MinimalFileTakesDefaults) {
  const auto pf = prompt_file::parse(minimal, "inline.v1.json");
  EXPECT_EQ(pf.model.max_attempts, 3);
  EXPECT_FALSE(pf.model.mode);
  EXPECT_TRUE(pf.system.empty());
  EXPECT_TRUE(pf.confidence.empty());
  EXPECT_FALSE(pf.explanation_template);
}

TEST(PromptFile, UnknownVariableNamesFileAndLine) {
  const auto file = test_data() / "bad_prompts" / "unknown_variable.v1.json";
  try {
    (void)prompt_file::load(file);
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::template_variable_unknown);
    EXPECT_THAT(e.what(), AllOf(HasSubstr(file.string() + ":9"), HasSubstr("user line 2"),
                                HasSubstr("{{outptus.parser/data}}")));
  }
}

TEST(PromptFile, FileNameMustAgreeWithContent) {
  const auto file = test_data() / "bad_prompts" / "wrong_name.v3.json";
  try {
    (void)prompt_file::load(file);
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("wrong_name.v3.json"), HasSubstr("something_else.v3.json")));
  }
}

TEST(PromptFile, MissingFileIsNamed) {
  try {
    (void)prompt_file::load(test_data() / "nope.v1.json");
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("nope.v1.json"), HasSubstr("no such file")));
  }
}

TEST(PromptFile, BadJsonNamesTheLine) {
  expect_invalid("{\n  \"name\": \"x\",\n  oops\n}", agent_errc::prompt_file_invalid,
                 {"inline.v1.json:3", "not valid JSON"});
  expect_invalid("[1, 2]", agent_errc::prompt_file_invalid, {"must be a JSON object"});
}

TEST(PromptFile, TypoedMemberIsRefused) {
  expect_invalid(R"({
  "name": "inline", "version": 1, "description": "d",
  "output_schema": "meeting.output@1", "user": "hi",
  "sytem": "oops"
})",
                 agent_errc::prompt_file_invalid,
                 {"inline.v1.json:4", "unknown member \"sytem\"", "allowed: name"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d",
  "output_schema": "meeting.output@1", "user": "hi", "model": {"temprature": 1}})",
                 agent_errc::prompt_file_invalid, {"model.temprature"});
}

TEST(PromptFile, WrongTypesAndRangesAreRefused) {
  expect_invalid(R"({"name": "inline", "version": "1", "description": "d",
                    "output_schema": "m@1", "user": "hi"})",
                 agent_errc::prompt_file_invalid, {"\"version\" must be an integer >= 1"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d",
                    "output_schema": "meeting", "user": "hi"})",
                 agent_errc::prompt_file_invalid, {"name@version"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d",
                    "output_schema": "m@1"})",
                 agent_errc::prompt_file_invalid, {"missing required member \"user\""});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "m@1",
                    "user": ["ok", 3]})",
                 agent_errc::prompt_file_invalid, {"\"user\" must hold strings only"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "m@1",
                    "user": "hi", "model": {"output_mode": "xml"}})",
                 agent_errc::prompt_file_invalid, {"model.output_mode", "xml"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "m@1",
                    "user": "hi", "model": {"temperature": 7}})",
                 agent_errc::prompt_file_invalid, {"model.temperature"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "m@1",
                    "user": "hi", "policies": [{"name": "p", "triggers": [], "instructions": "x"}]})",
                 agent_errc::prompt_file_invalid, {"policies[0].triggers\" is empty"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "m@1",
                    "user": "hi", "policies": [{"name": "p", "triggers": ["a"], "instructions": "x",
                                                "match_on": ["everything"]}]})",
                 agent_errc::prompt_file_invalid, {"everything"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "m@1",
                    "user": "hi", "confidence_rules": {"rules": [
                      {"if_present": "/data/a", "if_absent": "/data/b", "add": 1}]}})",
                 agent_errc::prompt_file_invalid, {"exactly one of"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "m@1",
                    "user": "hi", "confidence_rules": {"rules": [{"if_present": "data/a", "add": 1}]}})",
                 agent_errc::prompt_file_invalid, {"JSON Pointer"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "m@1",
                    "user": "hi", "confidence_rules": {"base": 1.5}})",
                 agent_errc::prompt_file_invalid, {"confidence_rules.base"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "m@1",
                    "user": "hi", "explanation_template": "{{input/request}}"})",
                 agent_errc::template_variable_unknown, {"explanation_template line 1"});
}

TEST(PromptPolicy, MatchesWholeWordsCaseInsensitively) {
  prompt_policy p;
  p.triggers = {"list", "how many"};
  EXPECT_TRUE(p.matches("List my meetings"));
  EXPECT_TRUE(p.matches("so, HOW MANY are there?"));
  EXPECT_FALSE(p.matches("listen to the recording"));
  EXPECT_FALSE(p.matches("checklist"));
  EXPECT_FALSE(p.matches("how manyfold"));
}

protocol::envelope answer(double confidence, boost::json::object data) {
  protocol::envelope e;
  e.data = std::move(data);
  e.confidence = confidence;
  e.explanation = "x";
  e.reasoning = "y";
  return e;
}

TEST(ConfidenceRules, BasePlusMatchingRulesClamped) {
  confidence_rules rules;
  rules.base = 0.5;
  rules.rules.push_back({confidence_rule::condition::present, "/data/start_time", {}, 0.3});
  rules.rules.push_back({confidence_rule::condition::absent, "/data/attendees", {}, -0.1});
  rules.rules.push_back({confidence_rule::condition::equals, "/data/kind", "fixed", 0.5});

  auto with_time = answer(0.95, {{"start_time", "09:00"}, {"attendees", boost::json::array{}}});
  const auto note = rules.apply(with_time);
  EXPECT_DOUBLE_EQ(with_time.confidence, 0.8);
  EXPECT_EQ(note,
            "Confidence rules: base 0.5 (model said 0.95); +0.3 when /data/start_time is present; "
            "result 0.8.");

  auto without = answer(0.95, {});
  rules.apply(without);
  EXPECT_DOUBLE_EQ(without.confidence, 0.4);

  auto everything = answer(0.2, {{"start_time", "x"}, {"kind", "fixed"}});
  const auto clamped = rules.apply(everything);
  EXPECT_DOUBLE_EQ(everything.confidence, 1.0);  // 0.5 + 0.3 - 0.1 + 0.5 clamped
  EXPECT_THAT(clamped, HasSubstr("+0.5 when /data/kind equals \"fixed\""));
}

TEST(ConfidenceRules, WithoutBaseAdjustsTheModelsOwnConfidence) {
  confidence_rules rules;
  rules.rules.push_back({confidence_rule::condition::absent, "/data/start_time", {}, -0.5});
  rules.min = 0.1;
  auto e = answer(0.3, {});
  EXPECT_EQ(rules.apply(e), "Confidence rules: model said 0.3; -0.5 when /data/start_time is absent; result 0.1.");
  EXPECT_DOUBLE_EQ(e.confidence, 0.1);
}

TEST(PromptFileName, ParsesNameAndVersion) {
  EXPECT_EQ(parse_prompt_file_name("nl_parser.v2.json"), (std::pair<std::string, int>{"nl_parser", 2}));
  EXPECT_EQ(parse_prompt_file_name("a.b.v10.json"), (std::pair<std::string, int>{"a.b", 10}));
  EXPECT_FALSE(parse_prompt_file_name("nl_parser.json"));
  EXPECT_FALSE(parse_prompt_file_name("nl_parser.v0.json"));
  EXPECT_FALSE(parse_prompt_file_name("nl_parser.vx.json"));
  EXPECT_FALSE(parse_prompt_file_name(".v1.json"));
}

}  // namespace
}  // namespace switchboard::agents

namespace switchboard::agents {
namespace {

constexpr std::string_view with_tools = R"({
  "name": "inline", "version": 1, "description": "d",
  "output_schema": "meeting.output@1", "user": "hi",
  "tools": ["calendar.lookup", "mcp:files/read_file"]
})";

TEST(PromptFileTools, NamesAreReadInOrderAndDefaultToNone) {
  EXPECT_THAT(prompt_file::parse(with_tools, "inline.v1.json").tools,
              ::testing::ElementsAre("calendar.lookup", "mcp:files/read_file"));
  EXPECT_THAT(prompt_file::parse(minimal, "inline.v1.json").tools, ::testing::IsEmpty());
}

TEST(PromptFileTools, BadListsAreRefusedNamingTheMember) {
  const auto with = [](std::string_view tools) {
    return R"({"name": "inline", "version": 1, "description": "d", "output_schema": "meeting.output@1",
               "user": "hi", "tools": )" + std::string(tools) + "}";
  };
  expect_invalid(with(R"("calendar.lookup")"), agent_errc::prompt_file_invalid, {"\"tools\"", "array"});
  expect_invalid(with(R"([1])"), agent_errc::prompt_file_invalid, {"\"tools\"", "strings"});
  expect_invalid(with(R"(["has space"])"), agent_errc::prompt_file_invalid, {"has space", "not a tool name"});
  expect_invalid(with(R"([""])"), agent_errc::prompt_file_invalid, {"not a tool name"});
  expect_invalid(with(R"(["a.b", "a.b"])"), agent_errc::prompt_file_invalid, {"a.b", "twice"});
  expect_invalid(R"({"name": "inline", "version": 1, "description": "d", "output_schema": "meeting.output@1",
                     "user": "hi", "tool": ["a.b"]})",
                 agent_errc::prompt_file_invalid, {"unknown member \"tool\"", "tools"});
}

}  // namespace
}  // namespace switchboard::agents
