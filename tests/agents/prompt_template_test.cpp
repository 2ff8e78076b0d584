#include <switchboard/agents/prompt_template.hpp>

#include <switchboard/agents/agent_registry.hpp>

#include "agent_test_support.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::agents {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using agent_test::code_of;
namespace json = boost::json;

template_origin origin(std::vector<int> lines = {}) {
  return template_origin{"prompts/demo.v1.json", "user", std::move(lines)};
}

struct PromptTemplateScope : ::testing::Test {
  json::value input = json::parse(R"({"request": "book a room", "count": 3, "ratio": 0.25,
                                      "tags": ["a", "b"], "nested": {"x": true}})");
  output_map outputs;
  std::vector<std::string> answers{"Tuesday", "Room 4"};
  prompt_scope scope() const {
    prompt_scope s;
    s.input = &input;
    s.outputs = &outputs;
    s.additional_instructions = "be brief";
    s.clarification_answers = answers;
    s.policies = "POLICY TEXT";
    return s;
  }
};

TEST_F(PromptTemplateScope, RendersEveryRoot) {
  protocol::envelope parsed;
  parsed.data = {{"date", "2026-11-24"}};
  parsed.explanation = "e";
  parsed.reasoning = "r";
  parsed.confidence = 0.9;
  outputs.set("nl_parser", parsed);
  const std::vector<std::string> lines{
      "R={{input/request}} N={{ input/count }} D={{input/ratio}}",
      "T={{input/tags}} O={{input/nested}}",
      "P={{outputs.nl_parser/data/date}} C={{outputs.nl_parser/confidence}}",
      "A={{additional_instructions}} Q={{clarification_answers/1}}",
      "{{clarification_answers}}",
      "{{policies}}"};
  const auto t = prompt_template::parse(lines, origin());
  EXPECT_EQ(t.render(scope()),
            "R=book a room N=3 D=0.25\n"
            "T=[\"a\",\"b\"] O={\"x\":true}\n"
            "P=2026-11-24 C=0.9\n"
            "A=be brief Q=Room 4\n"
            "Tuesday\nRoom 4\n"
            "POLICY TEXT");
  EXPECT_EQ(t.variables().size(), 11u);
  EXPECT_TRUE(t.uses("policies"));
  EXPECT_FALSE(prompt_template::parse("x {{input}}", origin()).uses("policies"));
}

TEST_F(PromptTemplateScope, OutputPointersUnescapeKeysAndNameWhatIsMissing) {
  protocol::envelope parsed;
  parsed.data = json::parse(R"({"a/b": {"c~d": [10, 20]}, "plain": "p"})").as_object();
  parsed.explanation = "e";
  parsed.reasoning = "r";
  outputs.set("nl_parser", parsed);
  const auto t = prompt_template::parse(
      "{{outputs.nl_parser/data/a~1b/c~0d/1}} {{outputs.nl_parser/data/plain}} {{outputs.nl_parser/explanation}}",
      origin());
  EXPECT_EQ(t.render(scope()), "20 p e");

  const auto missing = prompt_template::parse("{{outputs.nl_parser/data/a~1b/none}}", origin());
  try {
    (void)missing.render(scope());
    FAIL() << "expected agent_error";
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::template_variable_unknown);
    EXPECT_THAT(e.what(), HasSubstr("the output of agent 'nl_parser' has no value at /data/a~1b/none"));
  }
}

TEST_F(PromptTemplateScope, AnAgentsWholeDataAndWholeEnvelopeRenderAsTheirJson) {
  protocol::envelope parsed;
  parsed.data = json::parse(R"({"date": "2026-11-24", "slots": [1, 2], "note": "say \"hi\""})").as_object();
  parsed.explanation = "e";
  parsed.reasoning = "r";
  parsed.confidence = 0.5;
  outputs.set("nl_parser", parsed);
  const auto data = prompt_template::parse("{{outputs.nl_parser/data}}", origin());
  EXPECT_EQ(data.render(scope()), json::serialize(parsed.data));
  EXPECT_EQ(data.render(scope()), R"({"date":"2026-11-24","slots":[1,2],"note":"say \"hi\""})");
  const auto whole = prompt_template::parse("{{outputs.nl_parser}}", origin());
  EXPECT_EQ(json::parse(whole.render(scope())), json::value_from(parsed));
}

TEST(PromptTemplate, ExplanationTemplatesReadTheDataInPlace) {
  const auto data = json::parse(R"({"items_shown": 3, "slots": [{"start": "09:00"}], "x~y": true})").as_object();
  const auto t = prompt_template::parse("{{items_shown}} from {{/slots/0/start}} {{/x~0y}}",
                                        origin(), template_kind::explanation);
  EXPECT_EQ(t.render(data), "3 from 09:00 true");
  const auto bad_escape = prompt_template::parse("{{/x~2y}}", origin(), template_kind::explanation);
  EXPECT_THROW((void)bad_escape.render(data), agent_error);
  const auto absent = prompt_template::parse("{{/slots/1/start}}", origin(), template_kind::explanation);
  try {
    (void)absent.render(data);
    FAIL() << "expected agent_error";
  } catch (const agent_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the agent's data has no value at /slots/1/start"));
  }
}

TEST_F(PromptTemplateScope, TextWithoutVariablesIsKeptVerbatim) {
  const auto t = prompt_template::parse("JSON looks like {\"a\": 1} } {", origin());
  EXPECT_EQ(t.render(scope()), "JSON looks like {\"a\": 1} } {");
}

TEST_F(PromptTemplateScope, OptionalVariableRendersEmptyWhenAbsent) {
  const auto t = prompt_template::parse("zone=[{{input/time_zone?}}]", origin());
  EXPECT_EQ(t.render(scope()), "zone=[]");
}

TEST(PromptTemplate, UnknownRootIsRefusedAtParseTimeWithFileLineAndField) {
  const std::vector<std::string> lines{"fine {{input}}", "broken {{inptu/request}}"};
  try {
    (void)prompt_template::parse(lines, origin({7, 8}));
    FAIL() << "expected agent_error";
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::template_variable_unknown);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("prompts/demo.v1.json:8"), HasSubstr("user line 2"),
                                HasSubstr("{{inptu/request}}"), HasSubstr("known: input")));
  }
}

TEST(PromptTemplate, SyntaxErrorsAreRefused) {
  try {
    (void)prompt_template::parse("a {{input", origin());
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::prompt_file_invalid);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("user line 1"), HasSubstr("without a closing")));
  }
  EXPECT_THROW((void)prompt_template::parse("a {{ }}", origin()), agent_error);
  EXPECT_THROW((void)prompt_template::parse("{{policies/x}}", origin()), agent_error);
  EXPECT_THROW((void)prompt_template::parse("{{outputs./data}}", origin()), agent_error);
  EXPECT_THROW((void)prompt_template::parse("{{outputs}}", origin()), agent_error);
}

TEST(PromptTemplate, EmbeddedNewlinesCountAsLines) {
  try {
    (void)prompt_template::parse("line one\nline two {{bogus}}", origin());
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("user line 2"));
  }
}

TEST_F(PromptTemplateScope, MissingInputValueFailsAtRenderTimeNamingLineAndPointer) {
  const std::vector<std::string> lines{"ok", "R={{input/missing/deep}}"};
  const auto t = prompt_template::parse(lines, origin({3, 4}));
  try {
    (void)t.render(scope());
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::template_variable_unknown);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("demo.v1.json:4"), HasSubstr("user line 2"),
                                HasSubstr("/missing/deep")));
  }
}

TEST_F(PromptTemplateScope, MissingAgentOutputNamesTheAgentsThatRan) {
  protocol::envelope e;
  e.explanation = "x";
  e.reasoning = "y";
  outputs.set("calendar", e);
  const auto t = prompt_template::parse("{{outputs.nl_parser/data}}", origin());
  try {
    (void)t.render(scope());
    FAIL();
  } catch (const agent_error& err) {
    EXPECT_THAT(err.what(), AllOf(HasSubstr("'nl_parser' has not produced output"),
                                  HasSubstr("calendar")));
  }
  const auto missing_answer = prompt_template::parse("{{clarification_answers/5}}", origin());
  EXPECT_THROW((void)missing_answer.render(scope()), agent_error);
}

TEST(PromptTemplate, ExplanationTemplateReadsTheAgentsData) {
  const auto t = prompt_template::parse("Showing {{items_shown}} of {{ items_total }} ({{/slots/0}})",
                                        origin(), template_kind::explanation);
  const json::object data{{"items_shown", 3}, {"items_total", 10}, {"slots", json::array{"9:00"}}};
  EXPECT_EQ(t.render(data), "Showing 3 of 10 (9:00)");
  const json::object partial{{"items_shown", 3}};
  try {
    (void)t.render(partial);
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("{{items_total}}"));
  }
  // A name with a slash is neither a member nor a pointer.
  EXPECT_THROW((void)prompt_template::parse("{{a/b}}", origin(), template_kind::explanation),
               agent_error);
}

TEST(PromptTemplate, RenderValueFormatsNumbersForPeople) {
  EXPECT_EQ(render_value(json::value(2.0)), "2");
  EXPECT_EQ(render_value(json::value(0.1)), "0.1");
  EXPECT_EQ(render_value(json::value(-7)), "-7");
  EXPECT_EQ(render_value(json::value("text")), "text");
  EXPECT_EQ(render_value(json::value(nullptr)), "null");
}

}  // namespace
}  // namespace switchboard::agents
