// Schema patterns under RE2: what ECMA-262 means is kept (., \s, anchors,
// Annex B leniency), what RE2 cannot do is refused with the reason, hostile
// text costs linear time, and on short ASCII text the verdicts are those of
// std::regex, the engine valijson used before (compared on random patterns).
#include "../../../protocol/src/validator/ecma_regex.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

namespace {

using switchboard::protocol::detail::ecma_regex;
using switchboard::protocol::detail::translate_ecma_regex;
using ::testing::HasSubstr;

std::shared_ptr<const ecma_regex> compiled(std::string_view pattern) {
  std::string why;
  auto regex = ecma_regex::compile(pattern, why);
  EXPECT_TRUE(regex) << pattern << ": " << why;
  return regex;
}

bool matches(std::string_view pattern, std::string_view text) {
  const auto regex = compiled(pattern);
  return regex && regex->search(text);
}

std::string refusal(std::string_view pattern) {
  std::string why;
  EXPECT_FALSE(ecma_regex::compile(pattern, why)) << pattern << " compiled";
  return why;
}

}  // namespace

TEST(EcmaRegex, SearchesAnywhereUnlessAnchored) {
  EXPECT_TRUE(matches("a+", "xxaay"));
  EXPECT_FALSE(matches("^a+$", "xxaay"));
  EXPECT_TRUE(matches("^[A-Z]{3}$", "EUR"));
  EXPECT_FALSE(matches("^[A-Z]{3}$", "EURO"));
}

TEST(EcmaRegex, KeepsWhatEcma262MeansWhereRe2Differs) {
  // `.` stops at every line terminator, not only \n.
  for (const char* terminator : {"\n", "\r", "\u2028", "\u2029"}) {
    EXPECT_FALSE(matches("^a.b$", std::string("a") + terminator + "b")) << terminator;
  }
  EXPECT_TRUE(matches("^a.b$", "a\tb"));
  EXPECT_TRUE(matches("^.$", "\u00e9"));  // one character, two bytes
  // \s is ECMA's white space: \v, no-break space, BOM and the line separators.
  for (const char* space : {" ", "\t", "\v", "\f", "\u00a0", "\ufeff", "\u2028", "\u3000"}) {
    EXPECT_TRUE(matches("^\\s$", space)) << space;
    EXPECT_FALSE(matches("^\\S$", space)) << space;
  }
  EXPECT_TRUE(matches("^[\\S]$", "x"));
  // $ is the end of the text, not "before a final newline".
  EXPECT_FALSE(matches("^abc$", "abc\n"));
  // \d and \w are ASCII.
  EXPECT_FALSE(matches("^\\d$", "\u0663"));  // ARABIC-INDIC DIGIT THREE
  EXPECT_FALSE(matches("^\\w$", "\u00e9"));
  // [^] is any character, [] none.
  EXPECT_TRUE(matches("^[^]$", "\n"));
  EXPECT_FALSE(matches("[]", "anything"));
}

TEST(EcmaRegex, AcceptsEcmaEscapesAndAnnexBLeniency) {
  EXPECT_TRUE(matches("^https?:\\/\\/", "https://example.com"));
  EXPECT_TRUE(matches("^\\x41\\u0042$", "AB"));
  EXPECT_TRUE(matches("^\\uD83D\\uDE00$", "\U0001F600"));  // a surrogate pair is one character
  EXPECT_TRUE(matches("^\\cJ$", "\n"));
  EXPECT_TRUE(matches("^a{,5}$", "a{,5}"));  // a '{' that starts no quantifier is literal
  EXPECT_TRUE(matches("^[\\d-z]+$", "1-z"));  // a class escape cannot bound a range
  EXPECT_TRUE(matches("^[\\b]$", "\b"));       // backspace inside a class
  EXPECT_TRUE(matches("^[[:alpha:]]$", ":]"));  // no POSIX classes: '[', ':', 'a', ... then ']'
  EXPECT_FALSE(matches("^[[:alpha:]]$", "x"));
  EXPECT_TRUE(matches("^(?<year>\\d{4})-\\d{2}$", "2024-05"));
  EXPECT_TRUE(matches("^(?:ab)+?$", "abab"));
}

TEST(EcmaRegex, RefusesWhatRe2CannotDoNamingIt) {
  EXPECT_THAT(refusal("(a)\\1"), HasSubstr("backreference '\\1'"));
  EXPECT_THAT(refusal("(?<x>a)\\k<x>"), HasSubstr("named backreference"));
  EXPECT_THAT(refusal("(?=a)"), HasSubstr("lookahead '(?='"));
  EXPECT_THAT(refusal("a(?!b)"), HasSubstr("lookahead '(?!'"));
  EXPECT_THAT(refusal("(?<=a)b"), HasSubstr("lookbehind '(?<='"));
  EXPECT_THAT(refusal("(?<!a)b"), HasSubstr("lookbehind '(?<!'"));
  EXPECT_THAT(refusal("a{1001}"), HasSubstr("above RE2's limit of 1000"));
  EXPECT_THAT(refusal("\\uD800"), HasSubstr("lone surrogate"));
  EXPECT_THAT(refusal("\\01"), HasSubstr("octal escape"));
  EXPECT_THAT(refusal("(?i)abc"), HasSubstr("not ECMA-262 syntax"));
  EXPECT_THAT(refusal("*a"), HasSubstr("nothing to repeat"));
  EXPECT_THAT(refusal("a**"), HasSubstr("nothing to repeat"));
  EXPECT_THAT(refusal("(ab"), HasSubstr("missing ')'"));
  EXPECT_THAT(refusal("ab)"), HasSubstr("unmatched ')'"));
  EXPECT_THAT(refusal("[ab"), HasSubstr("missing ']'"));
  EXPECT_THAT(refusal("[z-a]"), HasSubstr("out of order"));
  EXPECT_THAT(refusal("ab\\"), HasSubstr("lone backslash"));
  EXPECT_THAT(refusal(std::string(9000, 'a')), HasSubstr("longer than 8192 bytes"));
  EXPECT_THAT(refusal(".{1000}.{1000}.{1000}"), HasSubstr("memory limit"));
  EXPECT_THAT(refusal("(a{100}){100}"), HasSubstr("RE2 cannot compile it"));
}

TEST(EcmaRegex, NeverWritesRe2OnlySyntax) {
  std::string why;
  // Letters that mean something to RE2 alone stay literal characters.
  EXPECT_TRUE(matches("^\\z\\Q\\a$", "zQa"));
  const auto text = translate_ecma_regex("[[:alpha:]]\\pL", why);
  ASSERT_TRUE(text) << why;
  EXPECT_EQ(text->find("[:"), std::string::npos) << *text;
  EXPECT_EQ(text->find("\\p"), std::string::npos) << *text;
}

TEST(EcmaRegex, HostileTextTakesLinearTime) {
  const std::string letters_30k(30 * 1024, 'a');
  const std::string letters_1m(1024 * 1024, 'a');
  const auto lower = compiled("^[a-z]+$");
  const auto ab_then_c = compiled("(a|b)*c");
  const auto nested = compiled("^(a+)+$");  // exponential for a backtracking engine
  // Linear time answers these in milliseconds; a backtracking engine would
  // take hours (2^41 paths), quadratic time minutes: the guard catches both
  // without timing anything.
  const switchboard::testing::hang_guard guard("searching hostile text");
  EXPECT_TRUE(lower->search(letters_30k));
  EXPECT_TRUE(lower->search(letters_1m));
  EXPECT_FALSE(lower->search(letters_1m + "!"));
  EXPECT_FALSE(ab_then_c->search(letters_1m));
  EXPECT_TRUE(ab_then_c->search(letters_1m + "c"));
  EXPECT_TRUE(nested->search(std::string(41, 'a')));
  EXPECT_FALSE(nested->search(std::string(41, 'a') + "!"));
  EXPECT_FALSE(nested->search(letters_1m + "!"));
}

// Random patterns over a small ECMA-262 subset, random short ASCII texts:
// RE2 after translation must agree with std::regex (ECMAScript), which is
// safe on inputs this small.
TEST(EcmaRegex, AgreesWithStdRegexOnShortAsciiText) {
  std::mt19937 random(20240611);
  const std::vector<std::string> atoms{"a", "b", "1", ".", "\\d", "\\w", "\\s", "\\S", "[ab]", "[^a]",
                                       "[a-c1]", "\\.", " ", "_", "\\/", "[\\d_]", "\\x61", "\\u0062"};
  const std::vector<std::string> quantifiers{"", "", "*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "+?"};
  auto pick = [&](const auto& list) { return list[random() % list.size()]; };
  auto pattern = [&] {
    std::string out = random() % 4 == 0 ? "^" : "";
    const int pieces = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < pieces; ++i) {
      std::string piece = pick(atoms);
      if (random() % 5 == 0) piece = "(" + piece + "|" + pick(atoms) + ")";
      out += piece + pick(quantifiers);
    }
    return out + (random() % 4 == 0 ? "$" : "");
  };
  const std::string alphabet = "ab1 _.\n\t/";
  auto text = [&] {
    std::string out;
    const int length = static_cast<int>(random() % 7);
    for (int i = 0; i < length; ++i) out += alphabet[random() % alphabet.size()];
    return out;
  };
  int compared = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string p = pattern();
    const std::regex reference(p, std::regex::ECMAScript);
    const auto ours = compiled(p);
    ASSERT_TRUE(ours);
    for (int j = 0; j < 10; ++j) {
      const std::string t = text();
      ASSERT_EQ(ours->search(t), std::regex_search(t, reference)) << "pattern " << p << " on '" << t << "'";
      ++compared;
    }
  }
  EXPECT_EQ(compared, 30000);
}
