// The last check of what valijson loaded, tested by handing it what the
// schema preparation would never let through: plain valijson loads of
// schemas with std::regex keywords, and of a schema that applies itself to
// the same value. Then end to end: a $ref into `enum` that the preparation
// does not expect a schema in is refused instead of reaching std::regex.
#include "../../../protocol/src/validator/valijson_audit.hpp"

#include "../../../protocol/src/validator/schema_documents.hpp"

#include <switchboard/protocol/validation.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <valijson/adapters/boost_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using ::testing::HasSubstr;

namespace {

// The audit's refusal of `schema` loaded by plain valijson; "" when it passes.
std::string audit_of_plain_load(std::string_view schema) {
  const json::value document = json::parse(schema);
  valijson::Schema loaded;
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  parser.populateSchema(valijson::adapters::BoostJsonAdapter(document), loaded);
  try {
    sp::detail::audit_loaded_schema({&loaded});
  } catch (const sp::detail::schema_refusal& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST(ValijsonAudit, RefusesEveryConstraintThatWouldRunStdRegex) {
  EXPECT_THAT(audit_of_plain_load(R"({"properties": {"a": {"items": {"pattern": "x"}}}})"),
              HasSubstr("a 'pattern' reached valijson"));
  EXPECT_THAT(audit_of_plain_load(R"({"not": {"patternProperties": {"x": {}}}})"),
              HasSubstr("'patternProperties' reached valijson"));
  EXPECT_THAT(audit_of_plain_load(R"({"anyOf": [true, {"format": "date-time"}]})"),
              HasSubstr("format 'date-time' reached valijson"));
  EXPECT_EQ(audit_of_plain_load(R"({"properties": {"a": {"format": "email", "minLength": 2}}})"), "");
}

TEST(ValijsonAudit, RefusesSubschemasThatApplyEachOtherToTheSameValue) {
  EXPECT_THAT(audit_of_plain_load(R"({"allOf": [{"$ref": "#"}]})"), HasSubstr("in a cycle"));
  EXPECT_THAT(audit_of_plain_load(R"({"definitions": {"a": {"not": {"$ref": "#/definitions/b"}},
                                                      "b": {"if": {"$ref": "#/definitions/a"}, "then": true}},
                                      "items": {"$ref": "#/definitions/a"}})"),
              HasSubstr("in a cycle"));
  // Recursion that descends into the value is not a cycle.
  EXPECT_EQ(audit_of_plain_load(R"({"properties": {"next": {"$ref": "#"}}, "items": {"allOf": [{"$ref": "#"}]}})"), "");
}

TEST(ValijsonAudit, ARefIntoDataThatHoldsAPatternIsRefusedEndToEnd) {
  try {
    sp::compiled_schema::compile(json::parse(R"({"$ref": "#/enum/0", "enum": [{"pattern": "^(a+)+$"}]})"), "odd@1");
    FAIL() << "compiled";
  } catch (const sp::protocol_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("schema 'odd@1': a 'pattern' reached valijson"));
  }
}
