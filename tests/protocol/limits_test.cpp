#include <switchboard/protocol/limits.hpp>

#include <switchboard/protocol/error.hpp>
#include <switchboard/protocol/output_parser.hpp>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace sp = switchboard::protocol;
namespace json = boost::json;

namespace {

std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

json::value nested_value(std::size_t depth) {
  json::value v = json::array{};
  for (std::size_t i = 1; i < depth; ++i) v = json::array{std::move(v)};
  return v;
}

TEST(limits, finite_values_within_the_depth_pass) {
  EXPECT_FALSE(sp::check_untrusted_value(json::parse(R"({"a":[1,2.5,-3e10,{"b":null}],"c":"x"})")));
  EXPECT_FALSE(sp::check_untrusted_value(nested_value(sp::max_json_depth)));
}

TEST(limits, a_number_that_is_not_finite_is_named_by_its_pointer) {
  json::value v = json::parse(R"({"a":[1,{"b/c":{"d~e":2}}]})");
  v.at("a").at(1).at("b/c").at("d~e") = std::numeric_limits<double>::infinity();
  const auto problem = sp::check_untrusted_value(v);
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem, "the number at /a/1/b~1c/d~0e is not finite (JSON has no Infinity or NaN)");
  EXPECT_TRUE(sp::check_untrusted_value(json::value(std::numeric_limits<double>::quiet_NaN())));
}

TEST(limits, 1e999_parses_to_infinity_and_is_refused) {
  const auto v = json::parse(R"({"budget": 1e999})");
  ASSERT_TRUE(v.at("budget").is_double());
  const auto problem = sp::check_untrusted_value(v);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("/budget"), std::string::npos) << *problem;
}

TEST(limits, nesting_past_the_limit_is_refused_naming_where) {
  const auto problem = sp::check_untrusted_value(nested_value(sp::max_json_depth + 1));
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("nesting deeper than 64 levels at /0/0"), std::string::npos) << *problem;
}

TEST(limits, an_object_is_checked_as_the_same_object_in_a_value_would_be) {
  // The overload for an envelope's data, which is an object, not a value.
  json::object data = json::parse(R"({"a":[1,{"b/c":{"d":2}}],"n":3})").as_object();
  EXPECT_FALSE(sp::check_untrusted_value(data));
  data["a"].as_array()[1].as_object()["b/c"].as_object()["d"] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(sp::check_untrusted_value(data), sp::check_untrusted_value(json::value(data)));
  EXPECT_EQ(*sp::check_untrusted_value(data), "the number at /a/1/b~1c/d is not finite (JSON has no Infinity or NaN)");

  json::object deep{{"x", nested_value(sp::max_json_depth)}};
  const auto problem = sp::check_untrusted_value(deep);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem, sp::check_untrusted_value(json::value(deep)));
  EXPECT_NE(problem->find("nesting deeper than 64 levels at /x/0"), std::string::npos) << *problem;
  EXPECT_FALSE(sp::check_untrusted_value(json::object{{"x", nested_value(sp::max_json_depth - 1)}}));
}

TEST(limits, the_parse_options_match_the_check) {
  boost::system::error_code ec;
  json::parse(nested_arrays(sp::max_json_depth), ec, {}, sp::untrusted_parse_options());
  EXPECT_FALSE(ec);
  json::parse(nested_arrays(sp::max_json_depth + 1), ec, {}, sp::untrusted_parse_options());
  EXPECT_TRUE(ec);
  // What enters can be stored wrapped a few levels deeper and read back.
  json::parse("{\"a\":[{\"b\":{\"c\":" + nested_arrays(sp::max_json_depth) + "}}]}", ec, {},
              sp::checkpoint_parse_options());
  EXPECT_FALSE(ec);
}

TEST(limits, a_deep_flat_value_is_walked_without_recursion) {
  json::array big;
  for (int i = 0; i < 200'000; ++i) big.push_back(json::object{{"k", i}});
  EXPECT_FALSE(sp::check_untrusted_value(big));
}

TEST(limits, a_model_answer_with_a_number_that_is_not_finite_is_refused) {
  const auto r = sp::parse_json_output(R"({"count": 2, "total": -1e999})");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason_code(), "invalid_json");
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors.front().message.find("the number at /total is not finite"), std::string::npos)
      << r.errors.front().message;
}

TEST(limits, a_model_answer_nested_past_the_limit_is_refused) {
  const auto r = sp::parse_json_output(nested_arrays(sp::max_json_depth + 1));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(sp::parse_json_output(nested_arrays(sp::max_json_depth)).ok());
}

}  // namespace
