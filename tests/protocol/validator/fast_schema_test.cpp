// The fast validation path of compiled_schema: which schemas are eligible,
// that it agrees with valijson (the reference) on the cases where the two
// could drift apart, that an invalid value still gets valijson's errors, and
// that its precompiled regexes are safe to share between threads.
#include "../../../protocol/src/validator/fast_schema.hpp"

#include <switchboard/protocol/validation.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using sp::detail::fast_schema;
using ::testing::HasSubstr;

namespace {

std::unique_ptr<const fast_schema> fast(std::string_view schema) {
  std::string why_not;
  auto compiled = fast_schema::compile(json::parse(schema), &why_not);
  EXPECT_TRUE(compiled) << schema << " is not eligible: " << why_not;
  return compiled;
}

std::vector<sp::validation_error> reference_errors(const sp::compiled_schema& schema,
                                                   const json::value& value) {
  const sp::detail::reference_validation_scope guard;
  return schema.validate(value);
}

bool same_errors(const std::vector<sp::validation_error>& a,
                 const std::vector<sp::validation_error>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].path != b[i].path || a[i].message != b[i].message || a[i].kind != b[i].kind) {
      return false;
    }
  }
  return true;
}

// The fast path's answer, after checking it against valijson's.
bool fast_and_reference_agree(std::string_view schema_text, std::string_view value_text) {
  const auto value = json::parse(value_text);
  const auto schema = sp::compiled_schema::compile(json::parse(schema_text), "test");
  const bool reference = reference_errors(schema, value).empty();
  const auto compiled = fast(schema_text);
  if (!compiled) return reference;
  const bool fast_valid = compiled->accepts(value);
  EXPECT_EQ(fast_valid, reference) << schema_text << " on " << value_text;
  EXPECT_EQ(schema.validate(value).empty(), reference) << schema_text << " on " << value_text;
  if (const auto* object = value.if_object()) {
    // An object outside a json::value (an envelope's data): never accepted
    // where the value is not, and validated to the same errors.
    EXPECT_FALSE(compiled->accepts(*object) && !fast_valid) << schema_text << " on " << value_text;
    EXPECT_TRUE(same_errors(schema.validate(*object), schema.validate(value))) << schema_text << " on " << value_text;
  }
  return fast_valid;
}

bool eligible(std::string_view schema, std::string* why_not = nullptr) {
  return fast_schema::compile(json::parse(schema), why_not) != nullptr;
}


constexpr std::string_view scheduling = R"({
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://example.com/scheduling.json",
  "title": "scheduling", "description": "candidate slots", "$comment": "v1",
  "type": "object",
  "properties": {
    "start": {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$", "examples": ["09:30"]},
    "duration_minutes": {"type": "integer", "minimum": 5, "maximum": 480, "default": 30},
    "priority": {"enum": ["low", "normal", "high"]},
    "room": {"type": ["string", "null"], "format": "hostname"},
    "candidate_times": {"type": "array", "maxItems": 3, "uniqueItems": true,
                        "items": {"$ref": "#/definitions/candidate"}}
  },
  "required": ["start", "duration_minutes"],
  "additionalProperties": false,
  "definitions": {
    "candidate": {"type": "object",
                  "properties": {"time": {"type": "string"}, "score": {"type": "number"}},
                  "required": ["time", "score"]}
  }
})";

}  // namespace

TEST(FastSchema, TypicalAgentSchemaIsEligibleAndAgreesWithValijson) {
  EXPECT_TRUE(fast_and_reference_agree(scheduling, R"({"start": "09:30", "duration_minutes": 30,
      "room": null, "candidate_times": [{"time": "10:00", "score": 0.5}]})"));
  EXPECT_FALSE(fast_and_reference_agree(scheduling, R"({"start": "9:30", "duration_minutes": 30})"));
  EXPECT_FALSE(fast_and_reference_agree(scheduling, R"({"start": "09:30"})"));
  EXPECT_FALSE(fast_and_reference_agree(scheduling, R"({"start": "09:30", "duration_minutes": 3})"));
  EXPECT_FALSE(fast_and_reference_agree(scheduling,
                                        R"({"start": "09:30", "duration_minutes": 30, "x": 1})"));
  EXPECT_FALSE(fast_and_reference_agree(scheduling, R"({"start": "09:30", "duration_minutes": 30,
      "candidate_times": [{"time": "10:00", "score": 1}, {"time": "10:00", "score": 1}]})"));
  EXPECT_FALSE(fast_and_reference_agree(scheduling, R"({"start": "09:30", "duration_minutes": 30,
      "candidate_times": [{"time": "10:00"}]})"));
}

TEST(FastSchema, SchemaWithIfIsNotEligibleAndStillValidatesThroughValijson) {
  constexpr std::string_view conditional = R"({
    "type": "object",
    "if": {"properties": {"kind": {"const": "meeting"}}},
    "then": {"required": ["start"]}
  })";
  std::string why_not;
  EXPECT_FALSE(eligible(conditional, &why_not));
  EXPECT_THAT(why_not, HasSubstr("'if'"));
  const auto schema = sp::compiled_schema::compile(json::parse(conditional), "conditional");
  EXPECT_TRUE(schema.validate(json::parse(R"({"kind": "meeting", "start": "x"})")).empty());
  EXPECT_TRUE(schema.validate(json::parse(R"({"kind": "call"})")).empty());
  EXPECT_FALSE(schema.validate(json::parse(R"({"kind": "meeting"})")).empty());
}

TEST(FastSchema, KeywordsOutsideTheSubsetAreNotEligible) {
  EXPECT_FALSE(eligible(R"({"contains": {"type": "integer"}})"));
  EXPECT_FALSE(eligible(R"({"propertyNames": {"maxLength": 3}})"));
  EXPECT_FALSE(eligible(R"({"dependencies": {"a": ["b"]}})"));
  EXPECT_FALSE(eligible(R"({"properties": {"a": {"$id": "#inner", "type": "string"}}})"));
  EXPECT_FALSE(eligible(R"({"$ref": "http://example.com/other.json#/definitions/a"})"));
  EXPECT_FALSE(eligible(R"({"$ref": "#/definitions/missing"})"));
  EXPECT_FALSE(eligible(R"({"multipleOf": 18446744073709551615})"));
  EXPECT_FALSE(eligible(R"({"enum": [18446744073709551615]})"));
  // Annotations and the rest of the subset are.
  EXPECT_TRUE(eligible(scheduling));
  EXPECT_TRUE(eligible(R"({"$ref": "#", "definitions": {}})"));
  EXPECT_TRUE(eligible(R"({"$defs": {"a": {"type": "string"}}, "items": {"$ref": "#/$defs/a"}})"));
  EXPECT_TRUE(eligible("true"));
  EXPECT_TRUE(eligible("false"));
}

TEST(FastSchema, DateFormatsAreCheckedAsValijsonChecksThem) {
  for (const auto* format : {"date", "time", "date-time"}) {
    const std::string schema = std::string(R"({"format": ")") + format + R"("})";
    EXPECT_TRUE(eligible(schema)) << format;
    for (const auto* value : {R"("2024-02-29")", R"("2024-02-30")", R"("13:05:00Z")", R"("24:00:00Z")",
                              R"("2024-02-29T13:05:00+01:00")", R"("2024-02-29t13:05:00z")", "null",
                              "true", "12", "1.5", "[]", "{}", R"(["x"])"}) {
      fast_and_reference_agree(schema, value);
    }
  }
  EXPECT_TRUE(fast_and_reference_agree(R"({"format": "date"})", R"("2024-02-29")"));
  EXPECT_FALSE(fast_and_reference_agree(R"({"format": "date"})", R"("2024-04-31")"));
  // valijson reads any value as a string for these formats: null is "".
  EXPECT_FALSE(fast_and_reference_agree(R"({"format": "date-time"})", "null"));
}

TEST(FastSchema, InvalidValueGetsExactlyValijsonsErrors) {
  const auto schema = sp::compiled_schema::compile(json::parse(scheduling), "scheduling.output@1");
  for (const char* text : {
           R"({"start": 930, "duration_minutes": "30", "x": 1, "y": 2})",
           R"({"duration_minutes": 1000, "priority": "urgent"})",
           R"({"start": "09:30", "duration_minutes": 30, "candidate_times": [{"time": 1}, 2, 3, 4]})",
       }) {
    const auto value = json::parse(text);
    const auto reference = reference_errors(schema, value);
    const auto errors = schema.validate(value);
    ASSERT_FALSE(reference.empty()) << text;
    EXPECT_TRUE(same_errors(errors, reference)) << text << "\nfast path:\n"
                                                << sp::to_string(errors) << "\nvalijson:\n"
                                                << sp::to_string(reference);
  }
  const auto errors = schema.validate(json::parse(R"({"start": 930, "duration_minutes": 30})"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string(), "/start: expected string, got integer");
}

TEST(FastSchema, InvariantsStillRunAfterTheFastPathAccepts) {
  const auto schema =
      sp::compiled_schema::compile(json::parse(scheduling), "scheduling.output@1")
          .with_invariant("short meetings only", [](const json::value& v) -> std::optional<sp::validation_error> {
            if (v.at("duration_minutes").as_int64() > 60) {
              return sp::validation_error{"/duration_minutes", "longer than an hour"};
            }
            return std::nullopt;
          });
  EXPECT_TRUE(schema.validate(json::parse(R"({"start": "09:30", "duration_minutes": 30})")).empty());
  const auto errors = schema.validate(json::parse(R"({"start": "09:30", "duration_minutes": 90})"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, sp::errc::invariant_violation);
  EXPECT_THAT(errors[0].message, HasSubstr("short meetings only"));
}

TEST(FastSchema, IntegerMeansAnInt64AsInValijson) {
  constexpr std::string_view integer = R"({"type": "integer"})";
  EXPECT_TRUE(fast_and_reference_agree(integer, "1"));
  EXPECT_TRUE(fast_and_reference_agree(integer, "-9223372036854775808"));
  // Boost.JSON parses 1.0 as a double, and valijson's integer is an int64 only.
  EXPECT_FALSE(fast_and_reference_agree(integer, "1.0"));
  EXPECT_FALSE(fast_and_reference_agree(integer, "18446744073709551615"));
  EXPECT_FALSE(fast_and_reference_agree(integer, R"("1")"));
  constexpr std::string_view number = R"({"type": "number"})";
  EXPECT_TRUE(fast_and_reference_agree(number, "1.0"));
  EXPECT_TRUE(fast_and_reference_agree(number, "1"));
  EXPECT_FALSE(fast_and_reference_agree(number, R"("1")"));
}

TEST(FastSchema, ANumberBeyondInt64IsOfNoTypeAsInValijson) {
  // Boost.JSON holds 18446744073709551615 as a uint64; valijson's adapter
  // calls only int64 and double numbers, so such a value matches no type,
  // skips bounds, equals nothing, and cannot be read as a string.
  constexpr std::string_view big = "18446744073709551615";
  EXPECT_FALSE(fast_and_reference_agree(R"({"type": "number"})", big));
  EXPECT_FALSE(fast_and_reference_agree(R"({"type": "integer"})", big));
  EXPECT_TRUE(fast_and_reference_agree(R"({"maximum": 10})", big));
  EXPECT_FALSE(fast_and_reference_agree(R"({"multipleOf": 2})", big));
  EXPECT_FALSE(fast_and_reference_agree(R"({"enum": [1, 18446744073709551615.0]})", big));
  EXPECT_TRUE(fast_and_reference_agree(R"({"uniqueItems": true})", "[18446744073709551615, 18446744073709551615]"));
  // `format` makes valijson read the value as a string, which fails here:
  // the fast path leaves the answer, and the error, to valijson.
  const auto schema = sp::compiled_schema::compile(json::parse(R"({"format": "email"})"), "format");
  const auto value = json::parse(big);
  EXPECT_FALSE(fast(R"({"format": "email"})")->accepts(value));
  EXPECT_FALSE(schema.validate(value).empty());
  EXPECT_TRUE(same_errors(schema.validate(value), reference_errors(schema, value)));
}

TEST(FastSchema, BoundsAgreeWithValijson) {
  EXPECT_TRUE(fast_and_reference_agree(R"({"maximum": 10})", "10"));
  EXPECT_FALSE(fast_and_reference_agree(R"({"exclusiveMaximum": 10})", "10"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"minimum": 0.5})", "0.5"));
  EXPECT_FALSE(fast_and_reference_agree(R"({"exclusiveMinimum": 0.5})", "0.5"));
  EXPECT_FALSE(fast_and_reference_agree(R"({"minimum": 1, "maximum": 0})", "0.5"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"minimum": 1})", R"("0")"));  // bounds ignore strings
}

TEST(FastSchema, MultipleOfFollowsValijsonIncludingNumericStrings) {
  EXPECT_TRUE(fast_and_reference_agree(R"({"multipleOf": 3})", "9"));
  EXPECT_FALSE(fast_and_reference_agree(R"({"multipleOf": 3})", "10"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"multipleOf": 0.01})", "0.07"));
  EXPECT_FALSE(fast_and_reference_agree(R"({"multipleOf": 0.5})", "0.7"));
  // valijson reads numeric strings as numbers for multipleOf.
  EXPECT_FALSE(fast_and_reference_agree(R"({"multipleOf": 3})", R"("10")"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"multipleOf": 3})", R"("9")"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"multipleOf": 3})", R"("nine")"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"multipleOf": 0.5})", R"("1.5")"));
}

TEST(FastSchema, StringLengthCountsCodePointsOfMultiByteUtf8) {
  constexpr std::string_view three = R"({"minLength": 3, "maxLength": 3})";
  EXPECT_TRUE(fast_and_reference_agree(three, R"("abc")"));
  EXPECT_TRUE(fast_and_reference_agree(three, "\"h\xC3\xA9\xC3\xA9\""));           // 5 bytes
  EXPECT_TRUE(fast_and_reference_agree(three, "\"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\""));  // 9 bytes
  EXPECT_FALSE(fast_and_reference_agree(three, "\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\""));  // 2 emoji
  EXPECT_FALSE(fast_and_reference_agree(three, R"("abcd")"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"maxLength": 2})", "\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\""));
  // Length constraints ignore non-strings.
  EXPECT_TRUE(fast_and_reference_agree(three, "12345"));
}

TEST(FastSchema, FormatIsAnAnnotationExceptWhereValijsonChecksIt) {
  EXPECT_TRUE(fast_and_reference_agree(R"({"format": "email"})", R"("not an address")"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"format": "email"})", "12"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"format": "email"})", "[]"));
  // valijson cannot read a non-empty array as a string and fails the value.
  EXPECT_FALSE(fast_and_reference_agree(R"({"format": "email"})", "[1]"));
}

TEST(FastSchema, ArraysTuplesAndAdditionalItems) {
  constexpr std::string_view tuple = R"({"items": [{"type": "string"}, {"type": "integer"}],
                                         "additionalItems": {"type": "boolean"}})";
  EXPECT_TRUE(fast_and_reference_agree(tuple, R"(["a", 1, true, false])"));
  EXPECT_TRUE(fast_and_reference_agree(tuple, R"(["a"])"));
  EXPECT_FALSE(fast_and_reference_agree(tuple, R"(["a", 1, "x"])"));
  EXPECT_FALSE(fast_and_reference_agree(tuple, R"([1, 1])"));
  constexpr std::string_view closed = R"({"items": [{}], "additionalItems": false})";
  EXPECT_TRUE(fast_and_reference_agree(closed, R"([{"any": 1}])"));
  EXPECT_FALSE(fast_and_reference_agree(closed, R"([1, 2])"));
  constexpr std::string_view unique = R"({"uniqueItems": true, "minItems": 1, "maxItems": 3})";
  EXPECT_FALSE(fast_and_reference_agree(unique, R"([1, "1", [1], {"a": 1}])"));
  EXPECT_TRUE(fast_and_reference_agree(unique, R"([1, "1", {"a": 1}])"));
  EXPECT_FALSE(fast_and_reference_agree(unique, R"([1, 1.0])"));
  EXPECT_FALSE(fast_and_reference_agree(unique, R"([{"a": [1]}, {"a": [1.0]}])"));
  EXPECT_FALSE(fast_and_reference_agree(unique, "[]"));
}

TEST(FastSchema, ObjectsPatternPropertiesAndAdditionalProperties) {
  constexpr std::string_view schema = R"({
    "properties": {"id": {"type": "integer"}},
    "patternProperties": {"^x-": {"type": "string"}},
    "additionalProperties": {"type": "boolean"},
    "minProperties": 1, "maxProperties": 3
  })";
  EXPECT_TRUE(fast_and_reference_agree(schema, R"({"id": 1, "x-a": "s", "flag": true})"));
  EXPECT_FALSE(fast_and_reference_agree(schema, R"({"id": 1, "x-a": 2})"));
  EXPECT_FALSE(fast_and_reference_agree(schema, R"({"id": 1, "other": "s"})"));
  EXPECT_FALSE(fast_and_reference_agree(schema, "{}"));
  EXPECT_FALSE(fast_and_reference_agree(schema, R"({"a": true, "b": true, "c": true, "d": true})"));
  EXPECT_TRUE(fast_and_reference_agree(schema, "[]"));  // object keywords ignore arrays
}

TEST(FastSchema, CombinatorsRefsAndBooleanSchemas) {
  constexpr std::string_view tree = R"({
    "definitions": {"node": {"type": "object", "required": ["value"],
      "properties": {"value": {"type": "integer"},
                     "children": {"type": "array", "items": {"$ref": "#/definitions/node"}}}}},
    "$ref": "#/definitions/node"
  })";
  EXPECT_TRUE(fast_and_reference_agree(tree, R"({"value": 1, "children": [{"value": 2, "children": []}]})"));
  EXPECT_FALSE(fast_and_reference_agree(tree, R"({"value": 1, "children": [{"value": "2"}]})"));
  constexpr std::string_view combined = R"({
    "anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}],
    "oneOf": [{"type": "integer", "minimum": 0}, {"type": "string"}],
    "allOf": [true, {"not": {"const": 7}}],
    "not": false
  })";
  EXPECT_TRUE(fast_and_reference_agree(combined, "3"));
  EXPECT_FALSE(fast_and_reference_agree(combined, "7"));
  EXPECT_FALSE(fast_and_reference_agree(combined, "-1"));
  EXPECT_TRUE(fast_and_reference_agree(combined, R"("ab")"));
  EXPECT_FALSE(fast_and_reference_agree(combined, R"("abc")"));
  EXPECT_FALSE(fast_and_reference_agree("false", "1"));
  EXPECT_TRUE(fast_and_reference_agree("true", "1"));
  EXPECT_TRUE(fast_and_reference_agree(R"({"enum": [[1, {"a": null}], "x"]})", R"([1.0, {"a": null}])"));
  EXPECT_FALSE(fast_and_reference_agree(R"({"enum": [[1, {"a": null}], "x"]})", R"([1, {"a": 0}])"));
}

TEST(FastSchema, ARegexPatternIsSafeToUseFromSeveralThreadsAtOnce) {
  const auto schema = sp::compiled_schema::compile(json::parse(R"({
    "type": "object",
    "properties": {"start": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}$"}},
    "patternProperties": {"^slot_[a-z]+$": {"type": "string", "pattern": "^[A-Z][0-9]$"}}
  })"), "concurrent");
  const auto good = json::parse(R"({"start": "2026-11-22T09:30", "slot_room": "B2"})");
  const auto bad_start = json::parse(R"({"start": "2026-11-22 09:30"})");
  const auto bad_slot = json::parse(R"({"slot_room": "b2"})");
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        if (!schema.validate(good).empty()) ++wrong;
        if (schema.validate(bad_start).empty()) ++wrong;
        if (schema.validate(bad_slot).empty()) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(FastSchema, AnObjectOutsideAValueIsAcceptedInPlaceWhereTheRootAllowsIt) {
  const auto answer = json::parse(R"({"start": "09:30", "duration_minutes": 30,
      "candidate_times": [{"time": "10:00", "score": 0.5}]})").as_object();
  EXPECT_TRUE(fast(scheduling)->accepts(answer));
  EXPECT_FALSE(fast(scheduling)->accepts(json::parse(R"({"start": "9:30", "duration_minutes": 30})").as_object()));
  // Combinators and $refs at the root are followed on the object itself.
  const auto combined = fast(R"({"definitions": {"o": {"type": "object", "required": ["a"]}},
                                 "allOf": [{"$ref": "#/definitions/o"}], "anyOf": [{"maxProperties": 1}, false],
                                 "not": {"required": ["b"]}})");
  EXPECT_TRUE(combined->accepts(json::parse(R"({"a": 1})").as_object()));
  EXPECT_FALSE(combined->accepts(json::parse(R"({"a": 1, "b": 2})").as_object()));
  EXPECT_FALSE(combined->accepts(json::parse(R"({"c": 1})").as_object()));
  // A const or enum at the root is left to valijson: not accepted in place,
  // yet validate() of the object still answers as it does for a value.
  fast_and_reference_agree(R"({"enum": [{"a": 1}]})", R"({"a": 1})");
  EXPECT_FALSE(fast(R"({"const": {"a": 1}})")->accepts(json::parse(R"({"a": 1})").as_object()));
  const auto constant = sp::compiled_schema::compile(json::parse(R"({"const": {"a": 1}})"), "constant");
  EXPECT_TRUE(constant.validate(json::parse(R"({"a": 1})").as_object()).empty());
  EXPECT_FALSE(constant.validate(json::parse(R"({"a": 2})").as_object()).empty());
  // A number still means a json::value, not an object of that capacity.
  EXPECT_TRUE(sp::compiled_schema::compile(json::parse(R"({"type": "integer"})"), "n").validate(1).empty());
}
