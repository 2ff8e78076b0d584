// $ref cycles and chains: every shape of a schema that applies itself to the
// same value again is refused while compiling (valijson crashed on them),
// naming the schema and the cycle; recursion that descends into the value,
// and long acyclic chains, keep working.
#include "../../../protocol/src/validator/schema_graph.hpp"

#include <switchboard/protocol/validation.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::HasSubstr;

namespace {

// The message of the refusal; fails the test when the schema compiles.
std::string refusal_of(const json::value& schema, const sp::schema_resolver& resolver = {}) {
  try {
    sp::compiled_schema::compile(schema, "cyclic.schema@1", resolver);
  } catch (const sp::protocol_error& e) {
    EXPECT_EQ(e.code(), sp::make_error_code(sp::errc::unparsable_schema));
    return e.what();
  }
  ADD_FAILURE() << json::serialize(schema) << " compiled";
  return {};
}

std::string refusal(std::string_view schema) { return refusal_of(json::parse(schema)); }

// definitions a0 -> a1 -> ... -> a<n-1> -> {"type": "string"}
json::value ref_chain(int length) {
  json::object definitions;
  for (int i = 0; i < length; ++i) {
    definitions["a" + std::to_string(i)] = json::object{{"$ref", "#/definitions/a" + std::to_string(i + 1)}};
  }
  definitions["a" + std::to_string(length)] = json::object{{"type", "string"}};
  return json::object{{"definitions", std::move(definitions)}, {"$ref", "#/definitions/a0"}};
}

}  // namespace

TEST(SchemaGraph, ARootThatRefersToItselfIsRefused) {
  const std::string why = refusal(R"({"$ref": "#"})");
  EXPECT_THAT(why, HasSubstr("schema 'cyclic.schema@1'"));
  EXPECT_THAT(why, HasSubstr("$ref cycle: # -> #"));
}

TEST(SchemaGraph, DefinitionsReferringToEachOtherAreRefusedNamingTheCycle) {
  const std::string why = refusal(R"({"definitions": {"a": {"$ref": "#/definitions/b"},
                                                      "b": {"$ref": "#/definitions/a"}},
                                      "$ref": "#/definitions/a"})");
  EXPECT_THAT(why, HasSubstr("#/definitions/a -> #/definitions/b -> #/definitions/a"));
  EXPECT_THAT(refusal(R"({"definitions": {"a": {"$ref": "#/definitions/a"}},
                          "properties": {"x": {"$ref": "#/definitions/a"}}})"),
              HasSubstr("#/definitions/a -> #/definitions/a"));
  EXPECT_THAT(refusal(R"({"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/c"},
                                          "c": {"$ref": "#/definitions/a"}},
                          "items": {"$ref": "#/definitions/b"}})"),
              HasSubstr("$ref cycle"));
}

TEST(SchemaGraph, CyclesThroughKeywordsThatApplyToTheSameValueAreRefused) {
  for (const char* schema : {
           R"({"allOf": [{"$ref": "#"}]})",
           R"({"anyOf": [{"type": "string"}, {"$ref": "#"}]})",
           R"({"oneOf": [{"$ref": "#/definitions/x"}], "definitions": {"x": {"not": {"$ref": "#"}}}})",
           R"({"if": {"$ref": "#"}, "then": true})",
           R"({"if": true, "then": {"$ref": "#"}})",
           R"({"dependencies": {"a": {"$ref": "#"}}})",
           R"({"definitions": {"a": {"allOf": [{"$ref": "#/definitions/b"}]}, "b": {"anyOf": [{"$ref": "#/definitions/a"}]}},
               "properties": {"p": {"$ref": "#/definitions/a"}}})",
       }) {
    EXPECT_THAT(refusal(schema), HasSubstr("$ref cycle")) << schema;
  }
}

TEST(SchemaGraph, ACycleThroughARemoteDocumentIsRefused) {
  const sp::schema_resolver resolver = [](const std::string& uri) -> std::optional<json::value> {
    if (uri == "http://example.com/a.json") return json::parse(R"({"$ref": "http://example.com/b.json"})");
    if (uri == "http://example.com/b.json") return json::parse(R"({"allOf": [{"$ref": "http://example.com/a.json"}]})");
    return std::nullopt;
  };
  EXPECT_THAT(refusal_of(json::parse(R"({"properties": {"x": {"$ref": "http://example.com/a.json"}}})"), resolver),
              HasSubstr("http://example.com/a.json# -> http://example.com/b.json# -> "
                        "http://example.com/b.json#/allOf/0 -> http://example.com/a.json#"));
}

TEST(SchemaGraph, RecursionIntoTheValueStillWorks) {
  const auto tree = sp::compiled_schema::compile(json::parse(R"({
    "type": "object",
    "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}},
    "required": ["name"], "additionalProperties": false})"), "tree@1");
  json::value value = json::object{{"name", "leaf"}};
  for (int depth = 0; depth < 30; ++depth) {
    value = json::object{{"name", "level"}, {"children", json::array{value}}};
  }
  EXPECT_TRUE(tree.validate(value).empty());
  value.as_object()["children"].as_array().emplace_back(json::object{{"nom", "x"}});
  EXPECT_FALSE(tree.validate(value).empty());
}

TEST(SchemaGraph, ALongAcyclicChainWorksAndAChainPastTheLimitIsRefused) {
  const auto chain = sp::compiled_schema::compile(ref_chain(100), "chain@1");
  EXPECT_TRUE(chain.validate("text").empty());
  EXPECT_FALSE(chain.validate(12).empty());
  EXPECT_THAT(refusal_of(ref_chain(300)), HasSubstr("nest more than 128 deep"));
}

TEST(SchemaGraph, ReferencesPastTheirLimitsAreRefused) {
  json::object long_uri{{"$ref", "urn:example:" + std::string(600, 'a') + "#/x"}};
  EXPECT_THAT(refusal_of(json::value(long_uri)), HasSubstr("URI is longer than 512 characters"));
  std::string pointer = "#";
  for (int i = 0; i < 200; ++i) pointer += "/";
  EXPECT_THAT(refusal_of(json::value(json::object{{"properties", json::object{{"a", json::object{{"$ref", pointer + "x"}}}}}})),
              HasSubstr("more than 128 tokens"));
  json::value deep = json::object{{"type", "string"}};
  for (int i = 0; i < 200; ++i) deep = json::object{{"items", deep}};
  EXPECT_THAT(refusal_of(deep), HasSubstr("nesting deeper than 128 levels"));
}

TEST(SchemaGraph, ARefIntoPatternPropertiesIsRefusedNamingIt) {
  EXPECT_THAT(refusal(R"({"patternProperties": {"^a": {"type": "string"}},
                          "properties": {"b": {"$ref": "#/patternProperties/^a"}}})"),
              HasSubstr("points into the patternProperties"));
}
