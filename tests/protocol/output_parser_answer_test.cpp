// How the parser finds the answer in a model's output: reasoning set aside,
// every candidate checked against the schema (a valid one wins, the last
// among equals), and a truncated output never accepted as complete. The
// corpus in data/messy_model_outputs.json holds the shapes real models
// produce; each case states the outcome it must have.
#include <switchboard/protocol/output_parser.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::HasSubstr;

namespace {

sp::compiled_schema event_schema() {
  return sp::compiled_schema::compile(json::parse(R"({
    "type": "object",
    "properties": {"title": {"type": "string"}, "day": {"type": "string"}},
    "required": ["title", "day"], "additionalProperties": false})"), "event@1");
}

sp::parse_result parse(std::string_view raw, sp::output_end end = sp::output_end::complete) {
  return sp::parse_output(raw, event_schema(), nullptr, end);
}

std::string value_text(const sp::parse_result& r) { return json::serialize(r.value); }

json::value read_corpus() {
  const auto path = std::filesystem::path(__FILE__).parent_path() / "data" / "messy_model_outputs.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

sp::output_end end_of(std::string_view finish) {
  return finish == "length" || finish == "max_tokens" ? sp::output_end::truncated : sp::output_end::complete;
}

}  // namespace

// --- candidates ------------------------------------------------------------------

TEST(ParseAnswer, AValidLaterCandidateBeatsAnInvalidFirstOne) {
  const auto r = parse(R"(Schema: {"type": "object"}. Answer: {"title": "Soccer", "day": "Saturday"})");
  ASSERT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.value.at("title"), "Soccer");
  EXPECT_EQ(r.stage, sp::parse_stage::extracted);
  EXPECT_EQ(r.candidates, 2u);
  EXPECT_EQ(r.origin, "JSON in prose at offset 36");
}

TEST(ParseAnswer, AValidFirstCandidateBeatsAnInvalidLastOne) {
  const auto r = parse(R"({"title": "Soccer", "day": "Saturday"} (or {"day": "Sunday"}))");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value.at("day"), "Saturday");
}

TEST(ParseAnswer, AmongValidCandidatesTheLastWins) {
  const auto r = parse(R"(Draft {"title": "A", "day": "Monday"} final {"title": "B", "day": "Tuesday"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value.at("title"), "B");
}

TEST(ParseAnswer, FencedAndProseCandidatesAreOneListInTextOrder) {
  const auto r = parse("```json\n{\"title\": \"A\", \"day\": \"Monday\"}\n```\nthen {\"title\": \"B\", \"day\": \"Friday\"}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value.at("title"), "B");
  EXPECT_EQ(r.candidates, 2u);  // the fenced block is not found again as prose
}

TEST(ParseAnswer, NoValidCandidateReportsTheLastCompleteOne) {
  const auto r = parse(R"({"title": "A"} and {"day": "Monday"})");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason, sp::errc::schema_missing_field);
  EXPECT_EQ(value_text(r), R"({"day":"Monday"})");
}

TEST(ParseAnswer, AValidRepairedCandidateBeatsAnInvalidCompleteOne) {
  const auto r = parse(R"(e.g. {"title": 1} -> {"title": "Soccer", "day": "Saturday",})");
  ASSERT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.stage, sp::parse_stage::repaired);
  EXPECT_EQ(r.value.at("title"), "Soccer");
}

TEST(ParseAnswer, WithoutASchemaTheLastObjectWins) {
  const auto r = sp::parse_json_output(R"(see [1] and {"a": 1} then {"b": 2} [2])");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(value_text(r), R"({"b":2})");
}

TEST(ParseAnswer, CandidatesAreBoundedAndTheLastOnesKept) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "{\"title\": 1} ";
  text += R"({"title": "Soccer", "day": "Saturday"})";
  const auto r = parse(text);
  ASSERT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_LE(r.candidates, 32u);
}

// --- reasoning -------------------------------------------------------------------

TEST(ParseAnswer, ADraftInsideThinkNeverWins) {
  const auto r = parse("<think>draft {\"title\": \"Draft\", \"day\": \"Sunday\"}</think>\n"
                       "{\"title\": \"Soccer\", \"day\": \"Saturday\"}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value.at("title"), "Soccer");
  EXPECT_TRUE(r.reasoning_set_aside);
  EXPECT_EQ(r.origin, "the answer after the reasoning");
  EXPECT_THAT(r.raw, HasSubstr("<think>draft"));  // kept in the raw text
}

TEST(ParseAnswer, OnlyReasoningIsReasoningOnly) {
  for (const std::string_view raw : {std::string_view("<think>{\"title\": \"X\", \"day\": \"Monday\"}</think>"),
                                     std::string_view("<thinking>still thinking about {\"title\""),
                                     std::string_view("all reasoning</think>  ")}) {
    const auto r = parse(raw);
    EXPECT_FALSE(r.ok()) << raw;
    EXPECT_EQ(r.reason_code(), "reasoning_only") << raw;
  }
}

TEST(ParseAnswer, TextOnBothSidesOfAReasoningBlockIsTheAnswer) {
  const auto r = parse("{\"title\": \"Soccer\", <reasoning>is the day right?</reasoning>\"day\": \"Saturday\"}");
  ASSERT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.value.at("day"), "Saturday");
}

TEST(ParseAnswer, ThinkInsideAJsonStringOfAWholeJsonAnswerIsData) {
  const auto r = parse(R"({"title": "<think>tag</think>", "day": "Monday"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::direct);
  EXPECT_EQ(r.value.at("title"), "<think>tag</think>");
}

// --- truncation ------------------------------------------------------------------

TEST(ParseAnswer, ATruncatedAnswerIsNeverRepaired) {
  const auto r = parse(R"({"title": "Soccer", "day": "Saturday", "notes": "bring)", sp::output_end::truncated);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason, sp::errc::truncated);
  EXPECT_THAT(r.errors[0].message, HasSubstr("token limit"));
  EXPECT_TRUE(r.repairs.empty());
}

TEST(ParseAnswer, AWholeObjectBeforeTheLimitIsAccepted) {
  const auto r = parse("{\"title\": \"Soccer\", \"day\": \"Saturday\"}\n\n\n", sp::output_end::truncated);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::direct);
}

TEST(ParseAnswer, ABareNumberAtTheLimitMayBeCut) {
  const auto schema = sp::compiled_schema::compile(json::parse(R"({"type": "integer"})"), "n@1");
  const auto r = sp::parse_output("1234", schema, nullptr, sp::output_end::truncated);
  EXPECT_EQ(r.reason, sp::errc::truncated);
}

TEST(ParseAnswer, NothingBeforeTheLimitIsTruncatedNotEmpty) {
  EXPECT_EQ(parse("", sp::output_end::truncated).reason, sp::errc::truncated);
}

TEST(ParseAnswer, ResultJsonNamesOriginCandidatesAndReasoning) {
  const auto r = parse("<think>x</think>{\"title\": \"A\", \"day\": \"Monday\"}");
  const auto j = r.to_json().as_object();
  EXPECT_EQ(j.at("origin"), "the answer after the reasoning");
  EXPECT_EQ(j.at("candidates"), 1);
  EXPECT_EQ(j.at("reasoning_set_aside"), true);
}

TEST(ParseAnswer, AnUnusableNumberIsNoValueAtAll) {
  // Found by the fuzz target: 4E444 parses to infinity, which no JSON reader
  // accepts back, so the result is a failure with no value, not a direct one.
  const auto r = sp::parse_json_output("4E444");
  EXPECT_EQ(r.stage, sp::parse_stage::failed);
  EXPECT_EQ(r.reason, sp::errc::invalid_json);
  EXPECT_TRUE(r.value.is_null());
  const auto in_prose = parse(R"(x {"title": 1e999} then {"title": "A", "day": "Monday"})");
  EXPECT_TRUE(in_prose.ok()) << "an unusable candidate never wins over a usable one";
}

// --- the corpus ------------------------------------------------------------------

TEST(ParseAnswer, CorpusOfMessyModelOutputs) {
  const json::value corpus = read_corpus();
  const auto schema = sp::compiled_schema::compile(corpus.at("schema"), "corpus@1");
  const auto& cases = corpus.at("cases").as_array();
  ASSERT_GE(cases.size(), 15u);
  for (const auto& item : cases) {
    const auto& c = item.as_object();
    const std::string name(c.at("name").as_string());
    const auto& expect = c.at("expect").as_object();
    const auto r = sp::parse_output(c.at("output").as_string(), schema, nullptr,
                                    end_of(c.at("finish").as_string()));
    EXPECT_EQ(r.ok(), expect.at("ok").as_bool()) << name << ": " << sp::to_string(r.errors);
    if (const auto* reason = expect.if_contains("reason")) {
      EXPECT_EQ(r.reason_code(), reason->as_string()) << name;
    }
    if (const auto* value = expect.if_contains("value")) {
      EXPECT_EQ(r.value, *value) << name << ": got " << value_text(r);
    }
  }
}
