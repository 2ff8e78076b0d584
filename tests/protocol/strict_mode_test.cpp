#include <switchboard/protocol/strict_mode.hpp>

#include <switchboard/protocol/validation.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

namespace {

bool reports(const std::vector<sp::unsupported_keyword>& found, std::string_view path,
             std::string_view keyword) {
  return std::ranges::any_of(found, [&](const sp::unsupported_keyword& k) {
    return k.path == path && k.keyword == keyword;
  });
}

}  // namespace

TEST(MakeStrict, RequiresEveryPropertyAndMakesOptionalOnesNullable) {
  const json::value strict = sp::make_strict(json::parse(R"({
    "type": "object",
    "properties": {
      "title": {"type": "string"},
      "room": {"type": "string"},
      "size": {"type": ["integer", "string"]},
      "kind": {"type": "string", "enum": ["a", "b"]},
      "ref": {"$ref": "#/definitions/x"}
    },
    "required": ["title"],
    "definitions": {"x": {"type": "object", "properties": {"y": {"type": "number"}}}}
  })"));
  EXPECT_EQ(strict.at("required"), json::parse(R"(["title","room","size","kind","ref"])"));
  EXPECT_EQ(strict.at("additionalProperties"), false);
  const auto& props = strict.at("properties");
  EXPECT_EQ(props.at("title"), json::parse(R"({"type": "string"})"));
  EXPECT_EQ(props.at("room"), json::parse(R"({"type": ["string", "null"]})"));
  EXPECT_EQ(props.at("size"), json::parse(R"({"type": ["integer", "string", "null"]})"));
  EXPECT_EQ(props.at("kind"), json::parse(R"({"type": ["string", "null"], "enum": ["a", "b", null]})"));
  EXPECT_EQ(props.at("ref"), json::parse(R"({"anyOf": [{"$ref": "#/definitions/x"}, {"type": "null"}]})"));
  // Definitions are made strict too.
  EXPECT_EQ(strict.at("definitions").at("x").at("required"), json::parse(R"(["y"])"));
  EXPECT_EQ(strict.at("definitions").at("x").at("additionalProperties"), false);
}

TEST(MakeStrict, RecursesIntoItemsAndCompositions) {
  const json::value strict = sp::make_strict(json::parse(R"({
    "type": "object",
    "properties": {
      "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
      "either": {"anyOf": [{"type": "object", "properties": {"b": {"type": "integer"}}},
                           {"type": "string"}]}
    },
    "required": ["list", "either"]
  })"));
  EXPECT_EQ(strict.at("properties").at("list").at("items").at("required"), json::parse(R"(["a"])"));
  EXPECT_EQ(strict.at("properties").at("list").at("items").at("properties").at("a"),
            json::parse(R"({"type": ["string", "null"]})"));
  EXPECT_EQ(strict.at("properties").at("either").at("anyOf").at(0).at("additionalProperties"),
            false);
}

TEST(MakeStrict, StrictFormAcceptsNullForFormerlyOptionalFieldsAndRejectsExtras) {
  const auto strict = sp::compiled_schema::compile(
      sp::make_strict(json::parse(R"({"type": "object", "properties": {
          "title": {"type": "string"}, "room": {"type": "string"}}, "required": ["title"]})")),
      "strict@1");
  EXPECT_TRUE(strict.validate(json::parse(R"({"title": "t", "room": null})")).empty());
  const auto missing = strict.validate(json::parse(R"({"title": "t"})"));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].to_string(), "/room: required property missing");
  const auto extra = strict.validate(json::parse(R"({"title": "t", "room": null, "x": 1})"));
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_EQ(extra[0].path, "/x");
}

TEST(MakeStrict, KeepsSchemaValuedAdditionalPropertiesAndLeavesNonObjectsAlone) {
  const json::value map_schema =
      json::parse(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
  EXPECT_EQ(sp::make_strict(map_schema).at("additionalProperties"),
            json::parse(R"({"type": "integer"})"));
  EXPECT_EQ(sp::make_strict(json::parse(R"({"type": "string"})")),
            json::parse(R"({"type": "string"})"));
  EXPECT_EQ(sp::make_strict(json::value(true)), json::value(true));
}

TEST(StrictModeUnsupported, StrictFormOfASimpleSchemaPassesBothProviders) {
  const json::value strict = sp::make_strict(json::parse(R"({"type": "object", "properties": {
      "title": {"type": "string"}, "n": {"type": "integer"}}})"));
  EXPECT_THAT(sp::strict_mode_unsupported(strict, sp::strict_provider::openai), IsEmpty());
  EXPECT_THAT(sp::strict_mode_unsupported(strict, sp::strict_provider::anthropic), IsEmpty());
}

TEST(StrictModeUnsupported, OpenAiKeywordsAreReportedWithTheirPath) {
  const json::value schema = json::parse(R"({
    "type": "object",
    "properties": {
      "tags": {"type": "object", "patternProperties": {"^x": {"type": "string"}},
               "minProperties": 1, "additionalProperties": false},
      "name": {"type": "string", "minLength": 2},
      "cond": {"if": {"type": "string"}, "then": {"maxLength": 3}},
      "neg": {"not": {"type": "null"}},
      "uniq": {"type": "array", "uniqueItems": true}
    },
    "required": ["tags", "name", "cond", "neg", "uniq"],
    "additionalProperties": false
  })");
  const auto found = sp::strict_mode_unsupported(schema, sp::strict_provider::openai);
  EXPECT_TRUE(reports(found, "/properties/tags", "patternProperties"));
  EXPECT_TRUE(reports(found, "/properties/tags", "minProperties"));
  EXPECT_TRUE(reports(found, "/properties/name", "minLength"));
  EXPECT_TRUE(reports(found, "/properties/cond", "if"));
  EXPECT_TRUE(reports(found, "/properties/cond", "then"));
  EXPECT_TRUE(reports(found, "/properties/cond/then", "maxLength"));
  EXPECT_TRUE(reports(found, "/properties/neg", "not"));
  EXPECT_TRUE(reports(found, "/properties/uniq", "uniqueItems"));
  const auto it = std::ranges::find_if(found, [](const auto& k) { return k.keyword == "if"; });
  EXPECT_EQ(it->to_string(), "/properties/cond: OpenAI strict mode: 'if' is not supported");
}

TEST(StrictModeUnsupported, OpenAiNeedsAdditionalPropertiesFalseAndEveryPropertyRequired) {
  const json::value schema = json::parse(R"({"type": "object", "properties": {
      "a": {"type": "string"}, "b": {"type": "object", "properties": {}}}, "required": ["a"]})");
  const auto found = sp::strict_mode_unsupported(schema, sp::strict_provider::openai);
  EXPECT_TRUE(reports(found, "", "additionalProperties"));
  EXPECT_TRUE(reports(found, "/properties/b", "additionalProperties"));
  EXPECT_TRUE(reports(found, "/properties/b", "required"));
  EXPECT_FALSE(reports(found, "/properties/a", "required"));
  // Anthropic allows optional properties but not open objects.
  const auto anthropic = sp::strict_mode_unsupported(schema, sp::strict_provider::anthropic);
  EXPECT_TRUE(reports(anthropic, "", "additionalProperties"));
  EXPECT_FALSE(reports(anthropic, "/properties/b", "required"));
}

TEST(StrictModeUnsupported, OpenAiRootMustBeAnObject) {
  const auto found =
      sp::strict_mode_unsupported(json::parse(R"({"type": "array"})"), sp::strict_provider::openai);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0].to_string(), HasSubstr("root schema must be an object"));
  EXPECT_THAT(sp::strict_mode_unsupported(json::parse(R"({"type": "array"})"),
                                          sp::strict_provider::anthropic),
              IsEmpty());
}

TEST(StrictModeUnsupported, AnthropicLacksNumericAndLengthConstraints) {
  const json::value schema = json::parse(R"({
    "type": "object",
    "properties": {
      "score": {"type": "number", "minimum": 0, "maximum": 1},
      "name": {"type": "string", "maxLength": 10, "pattern": "^[a-z]+$"},
      "list": {"type": "array", "minItems": 2, "items": {"$ref": "other.json#/x"}},
      "one": {"type": "array", "minItems": 1}
    },
    "additionalProperties": false
  })");
  const auto found = sp::strict_mode_unsupported(schema, sp::strict_provider::anthropic);
  EXPECT_TRUE(reports(found, "/properties/score", "minimum"));
  EXPECT_TRUE(reports(found, "/properties/score", "maximum"));
  EXPECT_TRUE(reports(found, "/properties/name", "maxLength"));
  EXPECT_FALSE(reports(found, "/properties/name", "pattern"));
  EXPECT_TRUE(reports(found, "/properties/list", "minItems"));
  EXPECT_FALSE(reports(found, "/properties/one", "minItems"));
  EXPECT_TRUE(reports(found, "/properties/list/items", "$ref"));
  // OpenAI accepts numeric bounds and minItems (newer snapshots).
  const auto openai = sp::strict_mode_unsupported(schema, sp::strict_provider::openai);
  EXPECT_FALSE(reports(openai, "/properties/score", "minimum"));
  EXPECT_FALSE(reports(openai, "/properties/list", "minItems"));
}
