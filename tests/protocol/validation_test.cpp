#include <switchboard/protocol/validation.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::HasSubstr;

namespace {

sp::compiled_schema scheduling_schema() {
  return sp::compiled_schema::compile(json::parse(R"({
    "type": "object",
    "properties": {
      "start": {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$"},
      "duration_minutes": {"type": "integer", "minimum": 5, "maximum": 480},
      "priority": {"enum": ["low", "normal", "high"]},
      "candidate_times": {
        "type": "array",
        "maxItems": 3,
        "items": {"$ref": "#/definitions/candidate"}
      }
    },
    "required": ["start", "duration_minutes"],
    "additionalProperties": false,
    "definitions": {
      "candidate": {
        "type": "object",
        "properties": {"time": {"type": "string"}, "score": {"type": "number"}},
        "required": ["time", "score"]
      }
    }
  })"), "scheduling.output@1");
}

std::vector<sp::validation_error> check(const sp::compiled_schema& schema, const char* value) {
  return schema.validate(json::parse(value));
}

}  // namespace

TEST(CompiledSchema, AcceptsValidValue) {
  const auto schema = scheduling_schema();
  EXPECT_TRUE(check(schema, R"({"start": "09:30", "duration_minutes": 30,
                               "candidate_times": [{"time": "10:00", "score": 0.5}]})")
                  .empty());
  EXPECT_EQ(schema.id(), "scheduling.output@1");
  EXPECT_TRUE(schema.json().is_object());
}

TEST(CompiledSchema, MissingRequiredFieldNamesThePathOfTheMissingProperty) {
  const auto errors = check(scheduling_schema(), R"({"duration_minutes": 30})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, sp::errc::schema_missing_field);
  EXPECT_EQ(errors[0].path, "/start");
  EXPECT_EQ(errors[0].to_string(), "/start: required property missing");
}

TEST(CompiledSchema, TypeMismatchSaysExpectedAndGot) {
  const auto errors = check(scheduling_schema(),
                            R"({"start": "09:30", "duration_minutes": 30,
                                "candidate_times": [{"time": "10:00", "score": "0.9"}]})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, sp::errc::schema_type_error);
  EXPECT_EQ(errors[0].to_string(), "/candidate_times/0/score: expected number, got string");
}

TEST(CompiledSchema, NumberAsStringIsATypeErrorNotCoerced) {
  const auto errors = check(scheduling_schema(), R"({"start": "09:30", "duration_minutes": "30"})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, sp::errc::schema_type_error);
  EXPECT_EQ(errors[0].to_string(), "/duration_minutes: expected integer, got string");
}

TEST(CompiledSchema, ConstraintViolationsSayWhatWasExpected) {
  const auto errors = check(scheduling_schema(),
                            R"({"start": "9.30", "duration_minutes": 1000, "priority": "urgent"})");
  ASSERT_EQ(errors.size(), 3u);
  for (const auto& e : errors) EXPECT_EQ(e.kind, sp::errc::schema_violation);
  const std::string all = sp::to_string(errors);
  EXPECT_THAT(all, HasSubstr("/start: does not match pattern \"^[0-9]{2}:[0-9]{2}$\", got \"9.30\""));
  EXPECT_THAT(all, HasSubstr("/duration_minutes: must be <= 480, got 1000"));
  EXPECT_THAT(all, HasSubstr("/priority: expected one of [\"low\",\"normal\",\"high\"], got \"urgent\""));
}

TEST(CompiledSchema, ExtraFieldUnderAdditionalPropertiesFalseIsNamed) {
  const auto errors =
      check(scheduling_schema(), R"({"start": "09:30", "duration_minutes": 30, "room": "B2"})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, sp::errc::schema_violation);
  EXPECT_EQ(errors[0].path, "/room");
  EXPECT_THAT(errors[0].message, HasSubstr("additionalProperties"));
}

TEST(CompiledSchema, PointerTokensAreEscaped) {
  const auto schema = sp::compiled_schema::compile(
      json::parse(R"({"properties": {"a/b": {"properties": {"c~d": {"type": "integer"}}}}})"),
      "escape@1");
  const auto errors = schema.validate(json::parse(R"({"a/b": {"c~d": true}})"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "/a~1b/c~0d");
  EXPECT_EQ(errors[0].message, "expected integer, got boolean");
}

TEST(CompiledSchema, RootErrorsHaveAnEmptyPath) {
  const auto errors = check(scheduling_schema(), "[1, 2]");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "");
  EXPECT_EQ(errors[0].to_string(), "(root): expected object, got array");
}

TEST(CompiledSchema, FalseSchemaRejectsWithAMessage) {
  const auto schema = sp::compiled_schema::compile(json::value(false), "never@1");
  const auto errors = schema.validate(json::parse("{}"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0].message, HasSubstr("never@1"));
}

TEST(CompiledSchema, InvalidSchemaIsRefusedNamingIt) {
  try {
    sp::compiled_schema::compile(json::parse(R"({"type": 12})"), "broken@1");
    FAIL() << "expected protocol_error";
  } catch (const sp::protocol_error& e) {
    EXPECT_EQ(e.code(), sp::errc::unparsable_schema);
    EXPECT_THAT(e.what(), HasSubstr("broken@1"));
  }
  EXPECT_THROW(sp::compiled_schema::compile(json::value(3), "number@1"), sp::protocol_error);
}

TEST(CompiledSchema, InvariantsRunOnlyAfterTheSchemaPassed) {
  const auto schema = sp::compiled_schema::compile(json::parse(R"({
      "type": "object",
      "properties": {"items_total": {"type": "integer"}, "items_shown": {"type": "integer"}},
      "required": ["items_total", "items_shown"]})"), "listing@1")
      .with_invariant("items_total >= items_shown",
                      [](const json::value& v) -> std::optional<sp::validation_error> {
                        const auto& o = v.as_object();
                        if (o.at("items_total").as_int64() >= o.at("items_shown").as_int64()) {
                          return std::nullopt;
                        }
                        return sp::validation_error{"/items_shown", "exceeds items_total"};
                      });
  EXPECT_TRUE(schema.validate(json::parse(R"({"items_total": 3, "items_shown": 2})")).empty());

  const auto broken = schema.validate(json::parse(R"({"items_total": 1, "items_shown": 2})"));
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_EQ(broken[0].kind, sp::errc::invariant_violation);
  EXPECT_EQ(broken[0].to_string(),
            "/items_shown: invariant 'items_total >= items_shown' failed: exceeds items_total");

  // Schema errors come first; the invariant is not run on a malformed value.
  const auto malformed = schema.validate(json::parse(R"({"items_total": 1})"));
  ASSERT_EQ(malformed.size(), 1u);
  EXPECT_EQ(malformed[0].kind, sp::errc::schema_missing_field);
}

TEST(CompiledSchema, ThrowingInvariantBecomesAnError) {
  const auto schema = sp::compiled_schema::compile(json::parse("{}"), "any@1")
                          .with_invariant("throws", [](const json::value&)
                                                        -> std::optional<sp::validation_error> {
                            throw std::runtime_error("boom");
                          });
  const auto errors = schema.validate(json::parse("{}"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kind, sp::errc::invariant_violation);
  EXPECT_THAT(errors[0].message, HasSubstr("boom"));
}

TEST(CompiledSchema, WithInvariantLeavesTheOriginalUntouched) {
  const auto base = sp::compiled_schema::compile(json::parse("{}"), "any@1");
  const auto strict = base.with_invariant(
      "never", [](const json::value&) -> std::optional<sp::validation_error> {
        return sp::validation_error{"", "no"};
      });
  EXPECT_TRUE(base.validate(json::parse("{}")).empty());
  EXPECT_EQ(strict.validate(json::parse("{}")).size(), 1u);
}

TEST(CompiledSchema, ValidateIsSafeFromManyThreads) {
  const auto schema = scheduling_schema();
  const json::value good = json::parse(R"({"start": "09:30", "duration_minutes": 30})");
  const json::value bad = json::parse(R"({"start": "9:3", "duration_minutes": 30})");
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        if (!schema.validate(good).empty()) ++wrong;
        if (schema.validate(bad).size() != 1) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CompiledSchema, RemoteRefsAreLoadedThroughTheResolver) {
  const json::value schema = json::parse(R"({"properties": {
      "when": {"$ref": "http://schemas.example/time.json#/definitions/hhmm"}}})");
  std::vector<std::string> asked;
  const auto compiled = sp::compiled_schema::compile(
      schema, "remote@1", [&](const std::string& uri) -> std::optional<json::value> {
        asked.push_back(uri);
        return json::parse(R"({"definitions": {"hhmm": {"type": "string"}}})");
      });
  EXPECT_EQ(asked, std::vector<std::string>{"http://schemas.example/time.json"});
  EXPECT_TRUE(compiled.validate(json::parse(R"({"when": "09:30"})")).empty());
  EXPECT_EQ(compiled.validate(json::parse(R"({"when": 930})")).size(), 1u);

  // Unknown documents, and remote refs without a resolver, are refused.
  const auto unknown = [](const std::string&) -> std::optional<json::value> { return {}; };
  EXPECT_THROW(sp::compiled_schema::compile(schema, "remote@1", unknown), sp::protocol_error);
  EXPECT_THROW(sp::compiled_schema::compile(schema, "remote@1"), sp::protocol_error);
}
