// The regex engine was swapped under valijson, not its semantics: on random
// schemas mixing pattern, patternProperties, properties,
// additionalProperties and the combinators, and random small values, the
// verdict of compiled_schema (valijson with RE2, and the fast path) is the
// verdict of plain valijson with std::regex, which is safe on values and
// patterns this small.
#include "../../../protocol/src/validator/fast_schema.hpp"

#include <switchboard/protocol/validation.hpp>

#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <valijson/adapters/boost_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include <random>
#include <string>
#include <vector>

namespace sp = switchboard::protocol;
namespace json = boost::json;

namespace {

class generator {
 public:
  explicit generator(unsigned seed) : random_(seed) {}

  json::value schema(int depth) {
    json::object s;
    if (chance(3)) s["type"] = pick(types_);
    if (chance(3)) s["pattern"] = pick(patterns_);
    if (chance(4)) s["minLength"] = static_cast<std::int64_t>(random_() % 3);
    if (depth > 0) {
      if (chance(2)) s["properties"] = schema_map(names_, depth);
      if (chance(2)) s["patternProperties"] = schema_map(patterns_, depth);
      if (chance(2)) s["additionalProperties"] = chance(2) ? json::value(chance(2)) : schema(depth - 1);
      if (chance(6)) s["not"] = schema(depth - 1);
      if (chance(6)) s["anyOf"] = json::array{schema(depth - 1), schema(depth - 1)};
      if (chance(6)) s["required"] = json::array{pick(names_)};
    }
    return s;
  }

  json::value value(int depth) {
    switch (random_() % (depth > 0 ? 5 : 4)) {
      case 0: return json::value(pick(strings_));
      case 1: return static_cast<std::int64_t>(random_() % 20);
      case 2: return chance(2);
      case 3: return nullptr;
      default: {
        json::object o;
        for (int n = static_cast<int>(random_() % 4); n > 0; --n) o[pick(names_)] = value(depth - 1);
        return o;
      }
    }
  }

 private:
  bool chance(unsigned one_in) { return random_() % one_in == 0; }
  std::string pick(const std::vector<std::string>& list) { return list[random_() % list.size()]; }

  json::object schema_map(const std::vector<std::string>& keys, int depth) {
    json::object map;
    for (int n = 1 + static_cast<int>(random_() % 2); n > 0; --n) map[pick(keys)] = schema(depth - 1);
    return map;
  }

  std::mt19937 random_;
  const std::vector<std::string> types_{"string", "object", "integer", "boolean"};
  const std::vector<std::string> patterns_{"^a", "a$", "b+", "^[ab]{2}$", "x", "^$", ".", "^\\d+$", "[^a]", "a|1"};
  const std::vector<std::string> names_{"a", "b", "ab", "ba", "x", "1", "12", ""};
  const std::vector<std::string> strings_{"a", "ab", "b1", "", "xyz", "12", "aa", "ba"};
};

// Plain valijson, std::regex and all; nullopt when it refuses the schema.
std::optional<bool> plain_valijson(const json::value& schema, const json::value& value) {
  valijson::Schema parsed;
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    parser.populateSchema(valijson::adapters::BoostJsonAdapter(schema), parsed);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  valijson::Validator validator;
  return validator.validate(parsed, valijson::adapters::BoostJsonAdapter(value), nullptr);
}

}  // namespace

TEST(ValijsonAgreement, RandomSchemasWithPatternsGiveValijsonsVerdicts) {
  generator make(42);
  int compared = 0, invalid = 0, objects = 0;
  for (int i = 0; i < 2000; ++i) {
    const json::value schema = make.schema(2);
    std::optional<sp::compiled_schema> compiled_or_not;
    try {
      compiled_or_not = sp::compiled_schema::compile(schema, "random@1");
    } catch (const std::exception& e) {
      FAIL() << json::serialize(schema) << ": " << e.what();
    }
    const auto& compiled = *compiled_or_not;
    for (int j = 0; j < 12; ++j) {
      const json::value value = make.value(2);
      const auto expected = plain_valijson(schema, value);
      ASSERT_TRUE(expected) << json::serialize(schema);
      std::vector<sp::validation_error> reference;
      {
        const sp::detail::reference_validation_scope guard;
        reference = compiled.validate(value);
      }
      const auto both = compiled.validate(value);
      ASSERT_EQ(reference.empty(), *expected) << json::serialize(schema) << " on " << json::serialize(value);
      ASSERT_EQ(both.empty(), *expected) << json::serialize(schema) << " on " << json::serialize(value);
      if (const auto* object = value.if_object()) {
        // An object outside a json::value (an envelope's data) is judged alike.
        const auto as_object = compiled.validate(*object);
        ASSERT_EQ(as_object.size(), both.size()) << json::serialize(schema) << " on " << json::serialize(value);
        for (std::size_t k = 0; k < both.size(); ++k) {
          ASSERT_EQ(as_object[k].path, both[k].path);
          ASSERT_EQ(as_object[k].message, both[k].message);
        }
        ++objects;
      }
      ++compared;
      invalid += *expected ? 0 : 1;
    }
  }
  EXPECT_EQ(compared, 24000);
  EXPECT_GT(objects, 2000);
  // Both verdicts occur often enough for the comparison to mean something.
  EXPECT_GT(invalid, 4000);
  EXPECT_LT(invalid, 20000);
}
