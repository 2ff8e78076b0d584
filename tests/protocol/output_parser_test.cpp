#include <switchboard/protocol/output_parser.hpp>

#include <switchboard/protocol/metrics.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

namespace {

sp::compiled_schema meeting_schema() {
  return sp::compiled_schema::compile(json::parse(R"({
    "type": "object",
    "properties": {
      "title": {"type": "string"},
      "slots": {"type": "array", "items": {"type": "integer"}},
      "confidence": {"type": "number"}
    },
    "required": ["title", "slots"],
    "additionalProperties": false
  })"), "meeting@1");
}

sp::parse_result parse(std::string_view raw) { return sp::parse_output(raw, meeting_schema()); }

std::string value_text(const sp::parse_result& r) { return json::serialize(r.value); }

}  // namespace

// --- direct -------------------------------------------------------------------

TEST(ParseOutput, DirectJson) {
  const auto r = parse(R"({"title": "standup", "slots": [9, 10]})");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::direct);
  EXPECT_THAT(r.repairs, IsEmpty());
  EXPECT_EQ(r.reason_code(), "");
  EXPECT_EQ(value_text(r), R"({"title":"standup","slots":[9,10]})");
}

TEST(ParseOutput, DirectWithBomAndSurroundingWhiteSpace) {
  const std::string raw = "\xEF\xBB\xBF  \n{\"title\": \"x\", \"slots\": []}\n\n";
  const auto r = parse(raw);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::direct);
  EXPECT_EQ(r.raw, raw);  // the raw text is kept as the model sent it
}

// --- extract ------------------------------------------------------------------

TEST(ParseOutput, ExtractsFromProse) {
  const auto r = parse(
      "Sure! Here is the meeting you asked for:\n"
      R"({"title": "retro", "slots": [14]})"
      "\nLet me know if you need anything else.");
  EXPECT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.stage, sp::parse_stage::extracted);
  EXPECT_EQ(value_text(r), R"({"title":"retro","slots":[14]})");
}

TEST(ParseOutput, ExtractsFencedJsonBlock) {
  const auto r = parse("Here you go:\n```json\n{\"title\": \"a\", \"slots\": [1]}\n```\nDone.");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::extracted);
  EXPECT_EQ(value_text(r), R"({"title":"a","slots":[1]})");
}

TEST(ParseOutput, ExtractsUnlabelledFence) {
  const auto r = parse("```\n{\"title\": \"a\", \"slots\": []}\n```");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::extracted);
}

TEST(ParseOutput, AmongValidFencedBlocksTheLastWinsAndABrokenOneIsSkipped) {
  const auto r = parse(
      "First attempt:\n```json\n{\"title\": oops}\n```\n"
      "Corrected:\n```json\n{\"title\": \"second\", \"slots\": [2]}\n```\n"
      "Final:\n```json\n{\"title\": \"third\", \"slots\": [3]}\n```");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::extracted);
  EXPECT_EQ(r.value.at("title"), "third");
  EXPECT_EQ(r.origin, "fenced block 3");
}

TEST(ParseOutput, AFenceMarkerInsideAStringValueDoesNotCloseTheBlock) {
  // A model explaining Markdown: the inner ``` is part of the title.
  const auto r = parse(
      "Here it is:\n```json\n{\"title\": \"Use ```code``` blocks\", \"slots\": [1]}\n```\nDone.");
  EXPECT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.stage, sp::parse_stage::extracted);
  EXPECT_EQ(r.value.at("title"), "Use ```code``` blocks");
  EXPECT_EQ(r.origin, "fenced block 1");
}

TEST(ParseOutput, AnInlineFenceWithAMarkerInsideAStringIsWhole) {
  const auto r = parse(R"(```{"title": "a ``` b", "slots": []}``` and more text)");
  EXPECT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.value.at("title"), "a ``` b");
}

TEST(ParseOutput, SkipsFencesInOtherLanguages) {
  const auto r = parse(
      "```python\nprint({'a': 1})\n```\nThe answer:\n```json\n{\"title\": \"t\", \"slots\": []}\n```");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.value.at("title"), "t");
}

TEST(ParseOutput, BracesAndEscapedQuotesInsideStringsDoNotConfuseMatching) {
  const auto r = parse(
      R"(Result: {"title": "use {braces} and [brackets] and \"quotes\" \\", "slots": [1]} -- end })");
  EXPECT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.stage, sp::parse_stage::extracted);
  EXPECT_EQ(r.value.at("title"), R"(use {braces} and [brackets] and "quotes" \)");
}

TEST(ParseOutput, FootnoteArrayInProseDoesNotBeatTheObject) {
  const auto r = parse(R"(As noted [1], the plan is {"title": "plan", "slots": [8]}.)");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.value.at("title"), "plan");
}

TEST(ParseJsonOutput, TopLevelArrayInProseIsExtracted) {
  const auto r = sp::parse_json_output(R"(The list: [{"a": 1}, {"b": 2}] as requested.)");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::extracted);
  EXPECT_EQ(value_text(r), R"([{"a":1},{"b":2}])");
}

// --- repair -------------------------------------------------------------------

TEST(ParseOutput, RepairsTrailingCommas) {
  const auto r = parse(R"({"title": "x", "slots": [1, 2,], })");
  EXPECT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.stage, sp::parse_stage::repaired);
  EXPECT_THAT(r.repairs, ElementsAre("removed trailing comma at offset 29",
                                     "removed trailing comma at offset 31"));
  EXPECT_EQ(value_text(r), R"({"title":"x","slots":[1,2]})");
}

TEST(ParseOutput, RepairsTrailingCommaInsideFencedBlock) {
  const auto r = parse("Answer:\n```json\n{\"title\": \"x\", \"slots\": [],}\n```");
  EXPECT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.stage, sp::parse_stage::repaired);
  ASSERT_EQ(r.repairs.size(), 1u);
  EXPECT_THAT(r.repairs[0], HasSubstr("removed trailing comma"));
}

TEST(ParseOutput, TrailingCommaObjectIsRepairedNotReplacedByAnInnerObject) {
  const auto r = sp::parse_json_output(R"(Here: {"outer": {"inner": 1}, "n": 2,} ok)");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::repaired);
  EXPECT_EQ(value_text(r), R"({"outer":{"inner":1},"n":2})");
}

TEST(ParseOutput, TruncatedMidArrayDropsTheCutNumberAndCloses) {
  // "12" might have been "123": it goes, it is not kept as a guess.
  const auto r = sp::parse_json_output(R"({"title": "x", "slots": [9, 10, 12)");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::repaired);
  EXPECT_EQ(value_text(r), R"({"title":"x","slots":[9,10]})");
  EXPECT_THAT(r.repairs, ElementsAre(HasSubstr("dropped value '12' cut off"),
                                     "closed 2 unclosed brackets at end of output: ]}"));
}

TEST(ParseOutput, TruncatedAfterCommaInArray) {
  const auto r = sp::parse_json_output("{\"slots\": [9, 10, ");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(value_text(r), R"({"slots":[9,10]})");
  EXPECT_THAT(r.repairs[0], HasSubstr("removed dangling comma"));
}

TEST(ParseOutput, CutOffStringValueIsDroppedWithItsKeyNotClosed) {
  // "weekly sync with the des" closed would pass for the whole title.
  const auto r = sp::parse_json_output(R"({"n": 1, "title": "weekly sync with the des)");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(value_text(r), R"({"n":1})");
  EXPECT_THAT(r.repairs, ElementsAre(HasSubstr("dropped string cut off at end of output"),
                                     "closed 1 unclosed bracket at end of output: }"));
}

TEST(ParseOutput, CutOffStringElementIsDroppedFromItsArray) {
  const auto r = sp::parse_json_output(R"({"people": ["Maya", "Le)");
  EXPECT_EQ(value_text(r), R"({"people":["Maya"]})");
}

TEST(ParseOutput, DanglingKeyIsCutNotCompleted) {
  const auto r = sp::parse_json_output(R"({"title": "x", "slots": )");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(value_text(r), R"({"title":"x"})");
  EXPECT_THAT(r.repairs[0], HasSubstr("dropped key at offset 15 whose value is missing"));
}

TEST(ParseOutput, DanglingKeyWithoutColonAndCutKeyAreDropped) {
  EXPECT_EQ(value_text(sp::parse_json_output(R"({"a": 1, "slots")")), R"({"a":1})");
  EXPECT_EQ(value_text(sp::parse_json_output(R"({"a": 1, "slo)")), R"({"a":1})");
  EXPECT_EQ(value_text(sp::parse_json_output(R"({"a": [1, {"b": tr)")), R"({"a":[1,{}]})");
}

TEST(ParseOutput, CompleteLiteralAtEndIsKept) {
  const auto r = sp::parse_json_output(R"({"a": [true, null)");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(value_text(r), R"({"a":[true,null]})");
}

TEST(ParseOutput, CutOffEscapeAndUtf8DropTheirString) {
  EXPECT_EQ(value_text(sp::parse_json_output(R"({"a": "line\)")), "{}");
  EXPECT_EQ(value_text(sp::parse_json_output(R"({"a": "x\u00)")), "{}");
  // "é" is C3 A9; only its first byte arrived.
  EXPECT_EQ(value_text(sp::parse_json_output("{\"b\": 2, \"a\": \"caf\xC3")), R"({"b":2})");
}

TEST(ParseOutput, TruncatedFencedBlockIsRepaired) {
  const auto r = parse("```json\n{\"title\": \"x\", \"slots\": [1, 2");
  EXPECT_TRUE(r.ok()) << sp::to_string(r.errors);
  EXPECT_EQ(r.stage, sp::parse_stage::repaired);
  EXPECT_EQ(value_text(r), R"({"title":"x","slots":[1]})");
}

TEST(ParseOutput, TruncationThatLosesARequiredFieldIsReportedAsTruncated) {
  // No stop reason is known (as `switchboard validate` reads a file): the
  // missing field is what the cut took, so the reason says truncated, and
  // the validator's finding follows it.
  const auto r = parse(R"({"title": "x", "slo)");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::repaired);
  EXPECT_EQ(r.reason_code(), "truncated");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_THAT(r.errors[0].message, HasSubstr("ends inside a JSON value"));
  EXPECT_EQ(r.errors[1].to_string(), "/slots: required property missing");
}

TEST(ParseOutput, AnswerCutInsideAStringIsTruncatedNotAMissingField) {
  const auto r = parse(R"({"slots": [1], "title": "weekly sync with the des)");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason, sp::errc::truncated);
}

TEST(ParseOutput, RepairedTrailingCommaThatFailsTheSchemaKeepsTheSchemasReason) {
  // Closed and whole, only a comma too many: nothing was cut.
  const auto r = parse(R"({"title": "x",})");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::repaired);
  EXPECT_EQ(r.reason_code(), "schema_missing_field");
}

// --- failures and reason codes ------------------------------------------------

TEST(ParseOutput, EmptyOutput) {
  for (const std::string_view raw : {std::string_view(""), std::string_view("  \n\t "),
                                     std::string_view("\xEF\xBB\xBF")}) {
    const auto r = parse(raw);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.stage, sp::parse_stage::failed);
    EXPECT_EQ(r.reason_code(), "empty_output");
    EXPECT_THAT(r.errors, ::testing::SizeIs(1));
  }
}

TEST(ParseOutput, ProseWithoutJsonIsInvalidJson) {
  const auto r = parse("I'm sorry, I can't help with scheduling today.");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::failed);
  EXPECT_EQ(r.reason_code(), "invalid_json");
  EXPECT_THAT(r.errors[0].message, HasSubstr("contains no JSON object or array"));
  EXPECT_TRUE(r.value.is_null());
}

TEST(ParseOutput, BrokenJsonThatRepairCannotFixIsInvalidJson) {
  const auto r = parse(R"({"title": 'single quotes', "slots": []})");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason_code(), "invalid_json");
  EXPECT_GE(r.errors.size(), 2u);  // the direct error and why repair failed
  EXPECT_THAT(r.errors[1].message, HasSubstr("could not repair"));
}

TEST(ParseOutput, NumbersAsStringsAreATypeErrorNotCoerced) {
  const auto r = parse(R"({"title": "x", "slots": ["9", 10]})");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.stage, sp::parse_stage::direct);
  EXPECT_EQ(r.reason_code(), "schema_type_error");
  EXPECT_EQ(r.errors[0].to_string(), "/slots/0: expected integer, got string");
  EXPECT_EQ(r.value.at("slots").as_array()[0], "9");  // kept for diagnostics
}

TEST(ParseOutput, ExtraFieldsUnderStrictSchemaAreViolations) {
  const auto r = parse(R"({"title": "x", "slots": [], "room": "B2", "notes": ""})");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason_code(), "schema_violation");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].path, "/room");
  EXPECT_EQ(r.errors[1].path, "/notes");
}

TEST(ParseOutput, MissingFieldOutranksOtherErrorsAsTheReason) {
  const auto r = parse(R"({"slots": ["x"]})");
  EXPECT_EQ(r.reason_code(), "schema_missing_field");
  EXPECT_EQ(r.errors.size(), 2u);
}

TEST(ParseOutput, InvariantViolationReason) {
  const auto schema = meeting_schema().with_invariant(
      "at most 3 slots", [](const json::value& v) -> std::optional<sp::validation_error> {
        if (v.at("slots").as_array().size() <= 3) return std::nullopt;
        return sp::validation_error{"/slots", "has more than 3 entries"};
      });
  const auto r = sp::parse_output(R"({"title": "x", "slots": [1, 2, 3, 4]})", schema);
  EXPECT_EQ(r.reason_code(), "invariant_violation");
  EXPECT_EQ(r.errors[0].to_string(),
            "/slots: invariant 'at most 3 slots' failed: has more than 3 entries");
}

TEST(ParseResult, ToJsonHasEveryField) {
  const auto r = parse(R"({"title": 1, "slots": []})");
  const json::value j = r.to_json();
  EXPECT_EQ(j.at("ok"), false);
  EXPECT_EQ(j.at("stage"), "direct");
  EXPECT_TRUE(j.at("repairs").as_array().empty());
  EXPECT_EQ(j.at("reason"), "schema_type_error");
  EXPECT_EQ(j.at("errors").at(0).at("path"), "/title");
  EXPECT_EQ(j.at("errors").at(0).at("message"), "expected string, got integer");
  EXPECT_EQ(j.at("errors").at(0).at("kind"), "schema_type_error");
  EXPECT_EQ(j.at("value").at("title"), 1);

  const json::value ok = parse(R"({"title": "t", "slots": []})").to_json();
  EXPECT_EQ(ok.at("ok"), true);
  EXPECT_TRUE(ok.at("reason").is_null());
}

TEST(ParseStage, Names) {
  EXPECT_EQ(sp::to_string(sp::parse_stage::direct), "direct");
  EXPECT_EQ(sp::to_string(sp::parse_stage::extracted), "extracted");
  EXPECT_EQ(sp::to_string(sp::parse_stage::repaired), "repaired");
  EXPECT_EQ(sp::to_string(sp::parse_stage::failed), "failed");
}

TEST(ParseOutput, DeepNestingFailsCleanly) {
  const std::string deep(5000, '[');
  const auto r = sp::parse_json_output(deep);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason_code(), "invalid_json");
}

TEST(ParseOutput, ReportsToTheMetricsHook) {
  sp::parser_metrics metrics;
  sp::parse_output(R"({"title": "x", "slots": []})", meeting_schema(), &metrics);
  sp::parse_output(R"(text {"title": "x", "slots": []} text)", meeting_schema(), &metrics);
  sp::parse_output(R"({"title": "x", "slots": [],})", meeting_schema(), &metrics);
  sp::parse_output("", meeting_schema(), &metrics);
  sp::parse_output(R"({"title": 1, "slots": []})", meeting_schema(), &metrics);
  const auto counts = metrics.outcomes();
  EXPECT_EQ(counts.direct, 1u);
  EXPECT_EQ(counts.extracted, 1u);
  EXPECT_EQ(counts.repaired, 1u);
  EXPECT_EQ(counts.failed, 2u);
  EXPECT_EQ(counts.failed_by_reason.at("empty_output"), 1u);
  EXPECT_EQ(counts.failed_by_reason.at("schema_type_error"), 1u);
}
