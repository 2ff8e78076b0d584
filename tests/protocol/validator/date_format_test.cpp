// The date/time/date-time checks that replace valijson's std::regex ones:
// the same acceptance on random and near-valid strings (compared with
// valijson's own regexes and day check on short text, where std::regex is
// safe), and no stack overflow on a long run of digits.
#include "../../../protocol/src/validator/date_format.hpp"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

namespace {

using switchboard::protocol::detail::date_format;
using switchboard::protocol::detail::matches;

// valijson's validate_date_range.
bool valijson_day_in_month(int month, int day) {
  if (month == 2) return day >= 0 && day <= 29;
  int limit = 31;
  if (month <= 7) {
    if (month % 2 == 0) limit = 30;
  } else if (month % 2 != 0) {
    limit = 30;
  }
  return day >= 0 && day <= limit;
}

// valijson's FormatConstraint visit, verbatim regexes.
bool valijson_accepts(date_format format, const std::string& s) {
  static const std::regex date("^([0-9]+)-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])$");
  static const std::regex time(
      "^([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(\\.[0-9]+)?(([Zz])|([\\+|\\-]([01][0-9]|2[0-3]):[0-5][0-9]))$");
  static const std::regex date_time(
      "^([0-9]+)-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(\\.[0-9]+)?(([Zz])|([\\+|\\-]([01][0-9]|2[0-3]):[0-5][0-9]))$");
  std::smatch m;
  switch (format) {
    case date_format::date:
      return std::regex_match(s, m, date) && valijson_day_in_month(std::stoi(m[2].str()), std::stoi(m[3].str()));
    case date_format::time: return std::regex_match(s, time);
    case date_format::date_time:
      return std::regex_match(s, m, date_time) &&
             valijson_day_in_month(std::stoi(m[2].str()), std::stoi(m[3].str()));
    case date_format::none: return true;
  }
  return true;
}

constexpr date_format all[] = {date_format::date, date_format::time, date_format::date_time};

}  // namespace

TEST(DateFormat, AcceptsWhatValijsonAccepts) {
  EXPECT_TRUE(matches(date_format::date, "1963-06-19"));
  EXPECT_TRUE(matches(date_format::date, "2024-02-29"));
  EXPECT_FALSE(matches(date_format::date, "2024-02-30"));
  EXPECT_FALSE(matches(date_format::date, "2024-04-31"));
  EXPECT_TRUE(matches(date_format::date, "2024-08-31"));
  EXPECT_FALSE(matches(date_format::date, "2024-00-10"));
  EXPECT_FALSE(matches(date_format::date, "06/19/1963"));
  EXPECT_TRUE(matches(date_format::time, "08:30:06.283185Z"));
  EXPECT_TRUE(matches(date_format::time, "23:59:60-08:00"));
  EXPECT_TRUE(matches(date_format::time, "23:59:60|08:00"));  // valijson's [\+|\-] quirk
  EXPECT_FALSE(matches(date_format::time, "08:30:06 PST"));
  EXPECT_FALSE(matches(date_format::time, "08:30:06."));
  EXPECT_TRUE(matches(date_format::date_time, "1963-06-19t08:30:06.283185z"));
  EXPECT_FALSE(matches(date_format::date_time, "1990-12-31T15:59:60-24:00"));
  EXPECT_FALSE(matches(date_format::date_time, "1990-02-31T15:59:59Z"));
}

TEST(DateFormat, AgreesWithValijsonsRegexesOnRandomText) {
  std::mt19937 random(7);
  const std::string valid[] = {"2024-02-29", "13:05:00Z", "2024-02-29T13:05:00.5+01:00", "1-12-31t00:00:60z"};
  const std::string alphabet = "0123456789-:.TtZz+|x ";
  int compared = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    if (i % 2 == 0) {  // a valid string with a few characters changed, dropped or added
      text = valid[random() % std::size(valid)];
      for (int edits = 1 + static_cast<int>(random() % 2); edits > 0 && !text.empty(); --edits) {
        const std::size_t at = random() % text.size();
        const char c = alphabet[random() % alphabet.size()];
        switch (random() % 3) {
          case 0: text[at] = c; break;
          case 1: text.erase(at, 1); break;
          default: text.insert(at, 1, c); break;
        }
      }
    } else {
      for (int n = static_cast<int>(random() % 30); n > 0; --n) text += alphabet[random() % alphabet.size()];
    }
    for (const auto format : all) {
      ASSERT_EQ(matches(format, text), valijson_accepts(format, text)) << "'" << text << "'";
      ++compared;
    }
  }
  EXPECT_EQ(compared, 60000);
}

TEST(DateFormat, ALongRunOfDigitsIsAnsweredWithoutRecursion) {
  const std::string digits(100 * 1024, '7');
  for (const auto format : all) EXPECT_FALSE(matches(format, digits));
  // Any number of year digits is a year to valijson.
  EXPECT_TRUE(matches(date_format::date, digits + "-01-31"));
  EXPECT_TRUE(matches(date_format::date_time, digits + "-01-31T00:00:00Z"));
  EXPECT_FALSE(matches(date_format::time, "00:00:00." + digits));  // no zone
  EXPECT_TRUE(matches(date_format::time, "00:00:00." + digits + "Z"));
}
