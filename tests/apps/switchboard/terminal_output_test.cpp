// to_json_text / print_json: numbers as people write them, JSON that parses
// back to the same value, terminal-safe strings.
#include "terminal_output.hpp"

#include "../../cli_runner.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

namespace switchboard::cli {
namespace {

namespace json = boost::json;

std::string text_of(double d) { return to_json_text(json::value(d)); }

// The text is JSON for a double (Boost.JSON reads a double) and denotes
// exactly `d` (read back with std::from_chars: Boost.JSON 1.81's own number
// parser may be an ulp off for long mantissas, whoever wrote them).
void round_trips(double d) {
  const std::string text = text_of(d);
  ASSERT_TRUE(json::parse(text).is_double()) << text;
  double back = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), back);
  ASSERT_EQ(ec, std::errc{}) << text;
  EXPECT_EQ(end, text.data() + text.size()) << text;
  EXPECT_EQ(back, d) << text;
}

TEST(to_json_text, ordinary_doubles_print_as_decimals) {
  EXPECT_EQ(text_of(0.9), "0.9");
  EXPECT_EQ(text_of(0.95), "0.95");
  EXPECT_EQ(text_of(0.7), "0.7");
  EXPECT_EQ(text_of(-12.5), "-12.5");
  EXPECT_EQ(text_of(0.1 + 0.2), "0.30000000000000004");  // shortest that reads back the same
  EXPECT_EQ(text_of(1e-6), "0.000001");
  EXPECT_EQ(text_of(123456789012.25), "123456789012.25");
}

TEST(to_json_text, whole_doubles_keep_a_decimal_point_and_stay_doubles) {
  EXPECT_EQ(text_of(1.0), "1.0");
  EXPECT_EQ(text_of(0.0), "0.0");
  EXPECT_EQ(text_of(-0.0), "-0.0");
  EXPECT_EQ(text_of(100.0), "100.0");
  round_trips(1.0);
  round_trips(1e15);
  round_trips(1e20);
}

TEST(to_json_text, extreme_magnitudes_use_the_shortest_exponent_form) {
  EXPECT_EQ(text_of(1e-7), "1e-07");
  EXPECT_EQ(text_of(1e300), "1e+300");
  EXPECT_EQ(text_of(1e21), "1e+21");
  EXPECT_EQ(text_of(1e16), "1e+16");
  EXPECT_EQ(text_of(1152921504606846976.0), "1.152921504606847e+18");  // 2^60, no binary noise
  EXPECT_EQ(text_of(1234567890123456.5), "1234567890123456.5");
  for (double d : {1e-7, 1e300, -1e300, 1e21, 5e-324, std::numeric_limits<double>::max(),
                   std::numeric_limits<double>::min(), 0.9, 0.95, 2.0 / 3.0, 1e-6, 9.999999999999999e20}) {
    round_trips(d);
  }
}

TEST(to_json_text, integers_stay_integers) {
  EXPECT_EQ(to_json_text(json::value(std::int64_t{42})), "42");
  EXPECT_EQ(to_json_text(json::value(std::int64_t{-7})), "-7");
  EXPECT_EQ(to_json_text(json::value(std::numeric_limits<std::uint64_t>::max())), "18446744073709551615");
  EXPECT_TRUE(json::parse(to_json_text(json::value(std::int64_t{3}))).is_int64());
}

TEST(to_json_text, nan_and_infinities_are_what_boost_json_writes) {
  EXPECT_EQ(text_of(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(text_of(std::numeric_limits<double>::infinity()), "1e99999");
  EXPECT_EQ(text_of(-std::numeric_limits<double>::infinity()), "-1e99999");
}

TEST(to_json_text, structures_and_strings_match_boost_json_apart_from_numbers) {
  const json::value v = json::parse(
      R"({"ok": true, "none": null, "list": [1, "two", {"x": "a\"b\\c\n\u0001"}], "empty": {}, "arr": []})");
  EXPECT_EQ(to_json_text(v), json::serialize(v));
  const json::value with_double = json::parse(R"({"confidence": 0.9, "items": [0.25, 3]})");
  EXPECT_EQ(to_json_text(with_double), R"({"confidence":0.9,"items":[0.25,3]})");
  EXPECT_EQ(json::parse(to_json_text(with_double)), with_double);
}

TEST(print_json, is_terminal_safe_and_parses_to_the_same_value) {
  const json::value v = json::parse(R"({"text": "\u001b[2J\u202e evil", "confidence": 0.9})");
  std::ostringstream out;
  print_json(out, v);
  EXPECT_EQ(switchboard::test::find_raw_control(out.str()), "");
  EXPECT_NE(out.str().find("\"confidence\":0.9"), std::string::npos) << out.str();
  EXPECT_EQ(json::parse(out.str()), v);
}

}  // namespace
}  // namespace switchboard::cli
