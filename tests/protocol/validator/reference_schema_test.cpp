// compiled_schema on hostile values: long strings against patterns that
// overflowed or hung std::regex, hostile keys under patternProperties, a
// long digit string under a date-time format. Each answers promptly with the
// right verdict on the fast path and on valijson (the reference path), and
// an invalid value is named with its JSON Pointer. Patterns RE2 cannot run
// are refused while compiling.
#include "../../../protocol/src/validator/fast_schema.hpp"

#include <switchboard/protocol/validation.hpp>
#include <switchboard/testing/hang_guard.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::HasSubstr;

namespace {

sp::compiled_schema compile(std::string_view schema) {
  return sp::compiled_schema::compile(json::parse(schema), "hostile.schema@1");
}

// Errors of both paths, which must agree on the verdict. A pattern that
// backtracked would take hours on these values: the guard ends the test
// instead.
std::vector<sp::validation_error> validate_both(const sp::compiled_schema& schema, const json::value& value) {
  const switchboard::testing::hang_guard guard("validating a hostile value");
  auto fast = schema.validate(value);
  std::vector<sp::validation_error> reference;
  {
    const sp::detail::reference_validation_scope guard;
    reference = schema.validate(value);
  }
  EXPECT_EQ(fast.empty(), reference.empty());
  return reference;
}

std::string refusal(std::string_view schema) {
  try {
    compile(schema);
  } catch (const sp::protocol_error& e) {
    EXPECT_EQ(e.code(), sp::make_error_code(sp::errc::unparsable_schema));
    return e.what();
  }
  ADD_FAILURE() << schema << " compiled";
  return {};
}

json::value holder(const std::string& text) { return json::object{{"text", text}}; }

}  // namespace

TEST(HostileValues, LongStringsAgainstRepeatingPatterns) {
  const auto lower = compile(R"({"properties": {"text": {"type": "string", "pattern": "^[a-z]+$"}}})");
  const auto ab_then_c = compile(R"({"properties": {"text": {"type": "string", "pattern": "(a|b)*c"}}})");
  for (const std::size_t size : {std::size_t{30} * 1024, std::size_t{1024} * 1024}) {
    const std::string letters(size, 'a');
    EXPECT_TRUE(validate_both(lower, holder(letters)).empty()) << size;
    EXPECT_FALSE(validate_both(lower, holder(letters + "!")).empty()) << size;
    EXPECT_FALSE(validate_both(ab_then_c, holder(letters)).empty()) << size;
    EXPECT_TRUE(validate_both(ab_then_c, holder(letters + "c")).empty()) << size;
  }
}

TEST(HostileValues, NestedQuantifiersAnswerAtOnce) {
  const auto nested = compile(R"({"properties": {"text": {"type": "string", "pattern": "^(a+)+$"}}})");
  for (const std::size_t length : {41, 64, 100000}) {
    EXPECT_TRUE(validate_both(nested, holder(std::string(length, 'a'))).empty());
    const auto errors = validate_both(nested, holder(std::string(length, 'a') + "!"));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].path, "/text");
  }
}

TEST(HostileValues, AFailedPatternIsNamedWithItsPointer) {
  const auto schema = compile(R"({"properties": {"data": {"properties": {
                                    "code": {"type": "string", "pattern": "^[A-Z]{3}$"}}}}})");
  const auto errors = validate_both(schema, json::parse(R"({"data": {"code": "EURO"}})"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string(), R"(/data/code: does not match pattern "^[A-Z]{3}$", got "EURO")");
}

TEST(HostileValues, PatternPropertiesWithHostileKeys) {
  const auto schema = compile(R"({"type": "object",
      "properties": {"id": {"type": "integer"}},
      "patternProperties": {"^(a+)+$": {"type": "string"}, "^x-[a-z]+$": {"type": "integer"}},
      "additionalProperties": false})");
  const std::string long_key(30 * 1024, 'a');
  json::object ok{{"id", 1}, {long_key, "text"}, {"x-trace", 3}};
  EXPECT_TRUE(validate_both(schema, ok).empty());

  json::object wrong_type{{long_key, 5}};
  auto errors = validate_both(schema, wrong_type);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "/" + long_key);
  EXPECT_EQ(errors[0].message, "expected string, got integer");

  json::object extra{{long_key + "!", "text"}, {"x-TRACE", 3}};
  errors = validate_both(schema, extra);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_THAT(errors[0].message, HasSubstr("additionalProperties is false"));
}

TEST(HostileValues, PatternPropertiesKeepTheirEffectOnAdditionalProperties) {
  const auto schema = compile(R"({
      "properties": {"name": {"type": "string"}},
      "patternProperties": {"^n": {"minLength": 2}, "^[0-9]+$": {"type": "boolean"}},
      "additionalProperties": {"type": "number"}})");
  // "name" meets properties and the ^n pattern; "12" the second pattern;
  // "z" no pattern, so additionalProperties.
  EXPECT_TRUE(validate_both(schema, json::parse(R"({"name": "ab", "12": true, "z": 1.5})")).empty());
  const auto errors = validate_both(schema, json::parse(R"({"name": "a", "12": 1, "z": "s"})"));
  std::vector<std::string> paths;
  for (const auto& e : errors) paths.push_back(e.path);
  EXPECT_THAT(paths, ::testing::UnorderedElementsAre("/name", "/12", "/z"));
}

TEST(HostileValues, ALongDigitStringUnderADateTimeFormat) {
  const auto schema = compile(R"({"properties": {"at": {"type": "string", "format": "date-time"}}})");
  const std::string digits(100 * 1024, '9');
  const auto errors = validate_both(schema, json::object{{"at", digits}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "/at");
  EXPECT_THAT(errors[0].message, HasSubstr("valid date-time"));
  EXPECT_TRUE(validate_both(schema, json::object{{"at", "2024-02-29T10:30:00Z"}}).empty());
}

TEST(HostileValues, APatternRe2CannotRunIsRefusedWhileCompiling) {
  std::string why = refusal(R"({"properties": {"code": {"type": "string", "pattern": "(a)\\1"}}})");
  EXPECT_THAT(why, HasSubstr("schema 'hostile.schema@1'"));
  EXPECT_THAT(why, HasSubstr(R"(pattern "(a)\\1" at #/properties/code/pattern)"));
  EXPECT_THAT(why, HasSubstr("backreference"));

  why = refusal(R"js({"patternProperties": {"(?=a)": {"type": "string"}}})js");
  EXPECT_THAT(why, HasSubstr(R"js(pattern "(?=a)" at #/patternProperties/(?=a))js"));
  EXPECT_THAT(why, HasSubstr("lookahead"));

  // Also where only a $ref reaches it.
  why = refusal(R"({"definitions": {"d": {"pattern": "(?<=x)y"}}, "items": {"$ref": "#/definitions/d"}})");
  EXPECT_THAT(why, HasSubstr("#/definitions/d/pattern"));
  EXPECT_THAT(why, HasSubstr("lookbehind"));
}

TEST(HostileValues, KeywordsOfOursInASchemaAreRefused) {
  EXPECT_THAT(refusal(R"({"$switchboard:pattern": 0})"), HasSubstr("is reserved"));
}

TEST(HostileValues, PatternsReachedOnlyThroughPropertyNamesAndRemoteDocumentsRunOnRe2) {
  const auto names = compile(R"({"propertyNames": {"pattern": "^[a-z]+$"}})");
  EXPECT_TRUE(validate_both(names, json::object{{std::string(30 * 1024, 'a'), 1}}).empty());
  EXPECT_FALSE(validate_both(names, json::object{{std::string(30 * 1024, 'a') + "!", 1}}).empty());

  const sp::schema_resolver resolver = [](const std::string& uri) -> std::optional<json::value> {
    if (uri != "http://example.com/defs.json") return std::nullopt;
    return json::parse(R"({"definitions": {"word": {"type": "string", "pattern": "^(a+)+$"},
                                            "map": {"patternProperties": {"^(a+)+$": {"$ref": "#/definitions/word"}},
                                                    "additionalProperties": false}}})");
  };
  const auto remote = sp::compiled_schema::compile(
      json::parse(R"({"properties": {"w": {"$ref": "http://example.com/defs.json#/definitions/word"},
                                     "m": {"$ref": "http://example.com/defs.json#/definitions/map"}}})"),
      "remote@1", resolver);
  const std::string a(50000, 'a');
  EXPECT_TRUE(validate_both(remote, json::object{{"w", a}, {"m", json::object{{a, a}}}}).empty());
  const auto errors = validate_both(remote, json::object{{"w", a + "!"}, {"m", json::object{{a, a + "!"}, {"b", a}}}});
  std::vector<std::string> found;  // path (the long key shortened) and message
  for (const auto& e : errors) found.push_back((e.path == "/m/" + a ? "/m/<a>" : e.path) + " " + e.message.substr(0, 40));
  // (Messages name the keyword in valijson's words: the lookup of the
  // governing subschema does not follow remote $refs.)
  EXPECT_THAT(found, ::testing::UnorderedElementsAre(HasSubstr("/w failed to match regex"),
                                                     HasSubstr("/m/<a> failed to match regex"),
                                                     HasSubstr("/m/b property not allowed")));
}

TEST(HostileValues, TheReferencePathIsSafeFromManyThreads) {
  const auto schema = compile(R"({"patternProperties": {"^(a+)+$": {"type": "string", "pattern": "^[a-z]+$"}},
                                  "additionalProperties": {"format": "date"}})");
  const json::value value = json::object{{std::string(5000, 'a'), "Abc"}, {"when", "2024-02-30"}};
  const auto expected = validate_both(schema, value);
  ASSERT_EQ(expected.size(), 2u);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      const sp::detail::reference_validation_scope guard;  // the flag is global; every thread sets it
      for (int i = 0; i < 200; ++i) {
        if (schema.validate(value).size() != expected.size()) ++mismatches;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
}
