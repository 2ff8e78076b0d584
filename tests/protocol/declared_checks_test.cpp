// Invariants and schema versions declared in schema files: enforced like C++
// invariants, refused with a clear error when malformed, never sent on.
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/json/parse.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::HasSubstr;

namespace {

sp::compiled_schema listing(sp::schema_registry& registry, std::string_view extra) {
  return registry.add({"listing", 1}, json::parse(R"({
    "type": "object",
    "properties": {"items": {"type": "array"}, "items_shown": {"type": "integer"},
                   "items_total": {"type": "integer"}, "start": {"type": "string"}, "end": {"type": "string"},
                   "schema_version": {"type": "string"}},
    "required": ["items"])" + std::string(extra) + "}"));
}

std::string errors_of(const sp::compiled_schema& schema, std::string_view value) {
  return sp::to_string(schema.validate(json::parse(value)));
}

std::string refusal_of(std::string_view extra) {
  sp::schema_registry registry;
  try {
    listing(registry, extra);
  } catch (const sp::protocol_error& e) {
    EXPECT_EQ(e.code(), sp::errc::unparsable_schema);
    return e.what();
  }
  return "<accepted>";
}

}  // namespace

TEST(DeclaredChecks, InvariantsComparePointersLengthsAndConstants) {
  sp::schema_registry registry;
  const auto schema = listing(registry, R"(, "x-invariants": [
      {"name": "shown_within_total", "left": "/items_total", "op": ">=", "right": "/items_shown"},
      {"name": "shown_matches_list", "left": "/items_shown", "op": "==", "right": {"length": "/items"}},
      {"name": "ends_after_start", "left": "/end", "op": ">", "right": "/start"},
      {"name": "at_most_three", "left": {"length": "/items"}, "op": "<=", "right": 3}])");
  EXPECT_EQ(errors_of(schema, R"({"items": [1, 2], "items_shown": 2, "items_total": 5,
                                   "start": "2026-11-25T10:00", "end": "2026-11-25T11:00"})"), "");
  const std::string errors = errors_of(schema, R"({"items": [1, 2, 3, 4], "items_shown": 2, "items_total": 1,
                                                  "start": "2026-11-25T10:00", "end": "2026-11-25T09:00"})");
  EXPECT_THAT(errors, HasSubstr("invariant 'shown_within_total' failed: /items_total (1) must be >= /items_shown (2)"));
  EXPECT_THAT(errors, HasSubstr("invariant 'shown_matches_list' failed"));
  EXPECT_THAT(errors, HasSubstr("ends_after_start"));
  EXPECT_THAT(errors, HasSubstr("the length of /items (4) must be <= 3"));
  EXPECT_EQ(schema.validate(json::parse(R"({"items": [], "items_shown": 1, "items_total": 0})")).front().kind,
            sp::errc::invariant_violation);
}

TEST(DeclaredChecks, AnInvariantOverAnAbsentFieldIsSkipped) {
  sp::schema_registry registry;
  const auto schema = listing(registry, R"(, "x-invariants": [
      {"name": "shown_within_total", "left": "/items_total", "op": ">=", "right": "/items_shown"}])");
  EXPECT_EQ(errors_of(schema, R"({"items": [], "items_shown": 3})"), "");
}

TEST(DeclaredChecks, DeclarationsAreNotPartOfTheCompiledSchemaButApplyToTheEnvelope) {
  sp::schema_registry registry;
  const auto schema = listing(registry, R"(, "x-invariants": [
      {"name": "shown_within_total", "left": "/items_total", "op": ">=", "right": "/items_shown"}])");
  EXPECT_FALSE(schema.json().as_object().contains("x-invariants"));
  const auto envelope = registry.envelope_schema("listing@1");
  const auto errors = envelope.validate(json::parse(
      R"({"data": {"items": [], "items_shown": 2, "items_total": 1}, "explanation": "e", "confidence": 1,
          "reasoning": "r"})"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "/data/items_total");
  EXPECT_EQ(registry.at("listing").validate(json::parse(R"({"items": [], "items_shown": 2, "items_total": 1})")).size(),
            1u);
}

TEST(DeclaredChecks, SchemaVersionMustBeSupportedWithItsRequiredFields) {
  sp::schema_registry registry;
  const auto schema = listing(registry, R"(, "x-schema-versions": {
      "1": {"required": ["items"]}, "2": {"required": ["items", "items_total"]}})");
  EXPECT_EQ(errors_of(schema, R"({"items": [], "schema_version": "1.4"})"), "");
  EXPECT_EQ(errors_of(schema, R"({"items": [], "items_total": 0, "schema_version": "2"})"), "");
  EXPECT_THAT(errors_of(schema, R"({"items": [], "schema_version": "2.0"})"),
              HasSubstr("/items_total: invariant 'schema_version' failed: required by schema_version 2 but missing"));
  EXPECT_THAT(errors_of(schema, R"({"items": [], "schema_version": "3.1"})"),
              HasSubstr("schema_version \"3.1\" is not supported (supported major versions: 1, 2)"));
  EXPECT_THAT(errors_of(schema, R"({"items": [], "schema_version": "latest"})"), HasSubstr("is not supported"));
  EXPECT_EQ(errors_of(schema, R"({"items": []})"), "") << "no schema_version: left to the schema";
}

TEST(DeclaredChecks, MalformedDeclarationsAreRefusedNamingSchemaAndPlace) {
  EXPECT_THAT(refusal_of(R"(, "x-invariants": {"a": 1})"), HasSubstr("schema 'listing@1': x-invariants: must be an array"));
  EXPECT_THAT(refusal_of(R"(, "x-invariants": [{"name": "n", "left": "/a", "op": "=>", "right": 1}])"),
              HasSubstr("x-invariants[0]: \"op\" must be one of"));
  EXPECT_THAT(refusal_of(R"(, "x-invariants": [{"left": "/a", "op": "==", "right": 1}])"), HasSubstr("needs a \"name\""));
  EXPECT_THAT(refusal_of(R"(, "x-invariants": [{"name": "n", "left": {"size": "/a"}, "op": "==", "right": 1}])"),
              HasSubstr("x-invariants[0].left"));
  EXPECT_THAT(refusal_of(R"(, "x-invariants": [{"name": "n", "left": "/a", "op": "==", "rigth": 1}])"),
              HasSubstr("needs \"left\" and \"right\""));
  EXPECT_THAT(refusal_of(R"(, "x-schema-versions": {"v1": {"required": []}})"),
              HasSubstr("\"v1\" is not a major version number"));
  EXPECT_THAT(refusal_of(R"(, "x-schema-versions": {"1": {"fields": []}})"), HasSubstr("needs \"required\""));
}
