#include <switchboard/orchestrator/condition.hpp>

#include <switchboard/orchestrator/error.hpp>

#include "orchestrator_test_support.hpp"

#include <gtest/gtest.h>

namespace switchboard::orchestrator {
namespace {

using testing::make_envelope;
namespace json = boost::json;

protocol::envelope sample(double confidence = 0.8) {
  return make_envelope(json::parse(R"({"status": "ok", "score": 42, "ratio": 0.5, "empty": "",
                                        "items": [{"id": "a"}], "none": [], "nested": {"value": 1},
                                        "a/b": true, "t~x": 3})")
                           .as_object(),
                       confidence);
}

TEST(condition, otherwise_always_holds_and_is_the_default) {
  EXPECT_TRUE(condition::otherwise().evaluate(sample()));
  EXPECT_TRUE(condition{}.evaluate(sample()));
  EXPECT_EQ(condition{}.type(), condition::kind::otherwise);
  EXPECT_EQ(condition::otherwise().to_string(), "otherwise");
}

TEST(condition, confidence_comparisons) {
  auto e = sample(0.7);
  EXPECT_TRUE(condition::confidence(comparison::ge, 0.7).evaluate(e));
  EXPECT_FALSE(condition::confidence(comparison::gt, 0.7).evaluate(e));
  EXPECT_TRUE(condition::confidence(comparison::le, 0.7).evaluate(e));
  EXPECT_FALSE(condition::confidence(comparison::lt, 0.7).evaluate(e));
  EXPECT_TRUE(condition::confidence(comparison::lt, 0.71).evaluate(e));
  EXPECT_EQ(condition::confidence(comparison::ge, 0.9).to_string(), "confidence >= 0.9");
}

TEST(condition, equals_compares_json_values_and_numbers_across_kinds) {
  EXPECT_TRUE(condition::equals("/status", "ok").evaluate(sample()));
  EXPECT_FALSE(condition::equals("/status", "OK").evaluate(sample()));
  EXPECT_TRUE(condition::equals("/score", 42.0).evaluate(sample()));  // 42 == 42.0
  EXPECT_FALSE(condition::equals("/score", "42").evaluate(sample()));  // no string coercion
  EXPECT_TRUE(condition::equals("/nested", json::parse(R"({"value": 1})")).evaluate(sample()));
  EXPECT_FALSE(condition::equals("/missing", nullptr).evaluate(sample()));
  EXPECT_EQ(condition::equals("/status", "ok").to_string(), R"(/status == "ok")");
}

TEST(condition, in_matches_any_listed_value) {
  EXPECT_TRUE(condition::in("/status", {"bad", "ok"}).evaluate(sample()));
  EXPECT_FALSE(condition::in("/status", {"bad", "worse"}).evaluate(sample()));
  EXPECT_TRUE(condition::in("/score", {1, 42}).evaluate(sample()));
  EXPECT_FALSE(condition::in("/missing", {"ok"}).evaluate(sample()));
  EXPECT_FALSE(condition::in("/status", {}).evaluate(sample()));
}

TEST(condition, exists_follows_objects_arrays_and_escapes) {
  EXPECT_TRUE(condition::exists("/status").evaluate(sample()));
  EXPECT_TRUE(condition::exists("/nested/value").evaluate(sample()));
  EXPECT_TRUE(condition::exists("/items/0/id").evaluate(sample()));
  EXPECT_FALSE(condition::exists("/items/1").evaluate(sample()));
  EXPECT_FALSE(condition::exists("/items/01").evaluate(sample()));  // no leading zeros
  EXPECT_FALSE(condition::exists("/status/deeper").evaluate(sample()));
  EXPECT_TRUE(condition::exists("/a~1b").evaluate(sample()));
  EXPECT_TRUE(condition::exists("/t~0x").evaluate(sample()));
  EXPECT_FALSE(condition::exists("/nope").evaluate(sample()));
  EXPECT_TRUE(condition::exists("").evaluate(sample()));  // data itself
}

TEST(condition, non_empty_on_strings_arrays_objects) {
  EXPECT_TRUE(condition::non_empty("/status").evaluate(sample()));
  EXPECT_FALSE(condition::non_empty("/empty").evaluate(sample()));
  EXPECT_TRUE(condition::non_empty("/items").evaluate(sample()));
  EXPECT_FALSE(condition::non_empty("/none").evaluate(sample()));
  EXPECT_TRUE(condition::non_empty("/nested").evaluate(sample()));
  EXPECT_FALSE(condition::non_empty("/missing").evaluate(sample()));
  EXPECT_TRUE(condition::non_empty("").evaluate(sample()));
  EXPECT_FALSE(condition::non_empty("").evaluate(make_envelope({})));
}

TEST(condition, numeric_comparisons_on_data) {
  EXPECT_TRUE(condition::compare("/score", comparison::gt, 41).evaluate(sample()));
  EXPECT_FALSE(condition::compare("/score", comparison::lt, 42).evaluate(sample()));
  EXPECT_TRUE(condition::compare("/score", comparison::le, 42).evaluate(sample()));
  EXPECT_TRUE(condition::compare("/ratio", comparison::ge, 0.5).evaluate(sample()));
  EXPECT_FALSE(condition::compare("/status", comparison::ge, 0).evaluate(sample()));  // not a number
  EXPECT_FALSE(condition::compare("/missing", comparison::ge, 0).evaluate(sample()));
  EXPECT_EQ(condition::compare("/score", comparison::lt, 60).to_string(), "/score < 60");
}

TEST(condition, all_any_not_combine) {
  auto ok = condition::equals("/status", "ok");
  auto high = condition::compare("/score", comparison::gt, 100);
  EXPECT_FALSE(condition::all({ok, high}).evaluate(sample()));
  EXPECT_TRUE(condition::any({ok, high}).evaluate(sample()));
  EXPECT_TRUE(condition::all({ok, condition::negate(high)}).evaluate(sample()));
  EXPECT_FALSE(condition::negate(ok).evaluate(sample()));
  EXPECT_TRUE(condition::all({}).evaluate(sample()));
  EXPECT_FALSE(condition::any({}).evaluate(sample()));
  EXPECT_EQ(condition::all({ok, condition::negate(high)}).to_string(), R"(all(/status == "ok", not(/score > 100)))");
}

TEST(condition, refuses_a_pointer_that_is_not_a_json_pointer) {
  try {
    (void)condition::equals("status", "ok");
    FAIL() << "expected an error";
  } catch (const orchestrator_error& e) {
    EXPECT_EQ(e.errc(), orchestrator_errc::invalid_workflow);
    EXPECT_NE(std::string(e.what()).find("'status' is not a JSON Pointer"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)condition::exists("/bad~2escape"), orchestrator_error);
}

TEST(condition, collects_every_pointer_it_reads) {
  auto c = condition::all({condition::equals("/a", 1), condition::any({condition::exists("/b/c"),
                                                                       condition::confidence(comparison::lt, 0.5)}),
                           condition::negate(condition::non_empty("/d"))});
  std::vector<std::string> pointers;
  c.collect_pointers(pointers);
  EXPECT_EQ(pointers, (std::vector<std::string>{"/a", "/b/c", "/d"}));
}

TEST(condition, equality_and_json_form) {
  auto c = condition::any({condition::in("/status", {"a", "b"}), condition::confidence(comparison::le, 0.3)});
  EXPECT_EQ(c, c);
  EXPECT_FALSE(c == condition::otherwise());
  EXPECT_EQ(c.to_json(), json::parse(R"({"any": [{"path": "/status", "in": ["a", "b"]},
                                                  {"confidence": {"le": 0.3}}]})"));
}

}  // namespace
}  // namespace switchboard::orchestrator
