#include <switchboard/protocol/terminal_text.hpp>

#include "../cli_runner.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

namespace json = boost::json;
using switchboard::protocol::append_escaped_for_terminal;
using switchboard::protocol::escape_for_terminal;
using switchboard::protocol::escape_json_for_terminal;
using switchboard::protocol::is_terminal_safe;
using switchboard::protocol::line_breaks;
using switchboard::test::find_raw_control;

// The UTF-8 encoding of `c` (test input built from code points).
std::string utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

std::string hex_escape(unsigned value, const char* format) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

TEST(TerminalText, PrintableAsciiPassesUnchanged) {
  std::string all;
  for (char c = 0x20; c < 0x7F; ++c) all += c;
  EXPECT_EQ(escape_for_terminal(all), all);
  EXPECT_TRUE(is_terminal_safe(all));
  EXPECT_EQ(escape_for_terminal(""), "");
}

TEST(TerminalText, LineBreaksAndTabHaveReadableEscapes) {
  EXPECT_EQ(escape_for_terminal("a\nb\rc\td"), "a\\nb\\rc\\td");
}

TEST(TerminalText, EveryOtherC0ControlAndDelBecomeHexEscapes) {
  for (unsigned c = 0; c < 0x20; ++c) {
    if (c == '\n' || c == '\r' || c == '\t') continue;
    EXPECT_EQ(escape_for_terminal(std::string(1, static_cast<char>(c))), hex_escape(c, "\\x%02x")) << c;
  }
  EXPECT_EQ(escape_for_terminal("\x7f"), "\\x7f");
  EXPECT_EQ(escape_for_terminal(std::string("nul\0byte", 8)), "nul\\x00byte");
  EXPECT_EQ(escape_for_terminal("\x1b[2J\x1b]0;title\x07"), "\\x1b[2J\\x1b]0;title\\x07");
}

TEST(TerminalText, KeepModeKeepsNewlineAndTabButNotCarriageReturn) {
  EXPECT_EQ(escape_for_terminal("line 1\n\tline 2\r\x1b[K", line_breaks::keep), "line 1\n\tline 2\\r\\x1b[K");
  EXPECT_TRUE(is_terminal_safe("a\n\tb", line_breaks::keep));
  EXPECT_FALSE(is_terminal_safe("a\n\tb"));
}

TEST(TerminalText, C1ControlsInUtf8FormBecomeCodePointEscapes) {
  for (char32_t c = 0x80; c <= 0x9F; ++c) {
    EXPECT_EQ(escape_for_terminal(utf8(c)), hex_escape(c, "\\u%04x")) << unsigned(c);
  }
  EXPECT_EQ(escape_for_terminal(utf8(0xA0)), utf8(0xA0));  // no-break space: the first after C1
}

TEST(TerminalText, BidiControlsAndLineSeparatorsAreEscaped) {
  for (char32_t c : {0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029}) {
    EXPECT_EQ(escape_for_terminal("x" + utf8(c) + "y"), "x" + hex_escape(c, "\\u%04x") + "y") << unsigned(c);
  }
  // Neighbours and the implicit marks (which Hebrew and Arabic text uses) stay.
  for (char32_t c : {0x2027, 0x202F, 0x2065, 0x206A, 0x200E, 0x200F}) {
    EXPECT_EQ(escape_for_terminal(utf8(c)), utf8(c)) << unsigned(c);
  }
}

TEST(TerminalText, ValidMultiByteUtf8IsKept) {
  const std::string text = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82 \xef\xbf\xbd \xf4\x8f\xbf\xbf";
  EXPECT_EQ(escape_for_terminal(text), text);
  EXPECT_TRUE(is_terminal_safe(text));
}

TEST(TerminalText, InvalidUtf8IsShownBytewise) {
  struct example {
    std::string in, out;
  };
  for (const auto& [in, out] : {
           example{"\xff", "\\xff"},
           example{"\x80", "\\x80"},                          // lone continuation byte
           example{"\xc0\xaf", "\\xc0\\xaf"},                 // overlong '/'
           example{"\xe0\x80\xaf", "\\xe0\\x80\\xaf"},        // overlong, 3 bytes
           example{"\xed\xa0\x80", "\\xed\\xa0\\x80"},        // UTF-16 surrogate
           example{"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},  // above U+10FFFF
           example{"\xf8\x88\x80\x80\x80", "\\xf8\\x88\\x80\\x80\\x80"},
           example{"ok \xe6\x97", "ok \\xe6\\x97"},           // truncated at the end
           example{"\xe6\x97z", "\\xe6\\x97z"},               // truncated before ASCII
           example{"\xc2\x1b", "\\xc2\\x1b"},                 // an escape inside a broken sequence
       }) {
    EXPECT_EQ(escape_for_terminal(in), out);
    EXPECT_FALSE(is_terminal_safe(in));
  }
}

TEST(TerminalText, AppendAddsToWhatIsThere) {
  std::string line = "[info] ";
  append_escaped_for_terminal(line, "a\nb");
  EXPECT_EQ(line, "[info] a\\nb");
}

TEST(TerminalText, HostileTextBecomesOneSafeLine) {
  const std::string escaped = escape_for_terminal(switchboard::test::hostile_text);
  EXPECT_EQ(find_raw_control(escaped), "");
  EXPECT_EQ(escaped.find('\n'), std::string::npos);
  EXPECT_NE(escaped.find("\\x1b[2J\\x1b]0;pwned\\x07"), std::string::npos) << escaped;
  EXPECT_NE(escaped.find("\\n[2026-11-25 10:00:00] [info] approved|c1 \\u009b31m|bidi \\u202e"), std::string::npos)
      << escaped;
  EXPECT_NE(escaped.find("\xc3\xa9\xe6\x97\xa5\xf0\x9f\x99\x82"), std::string::npos);  // kept as is
}

// Every one- and two-byte input: the result is safe, and is_terminal_safe
// agrees with "escaping changes nothing".
TEST(TerminalText, EscapedOutputIsAlwaysSafeAndTheCheckAgrees) {
  for (unsigned a = 0; a < 256; ++a) {
    for (unsigned b = 0; b < 257; ++b) {
      std::string in(1, static_cast<char>(a));
      if (b < 256) in += static_cast<char>(b);
      for (const auto breaks : {line_breaks::escape, line_breaks::keep}) {
        const std::string out = escape_for_terminal(in, breaks);
        ASSERT_TRUE(is_terminal_safe(out, breaks)) << a << " " << b;
        ASSERT_EQ(is_terminal_safe(in, breaks), out == in) << a << " " << b;
        if (breaks == line_breaks::escape) {
          ASSERT_EQ(find_raw_control(out), "") << a << " " << b;
        }
      }
    }
  }
}

TEST(TerminalJson, HostileStringsParseBackExactly) {
  const json::value value = {{"explanation", switchboard::test::hostile_text},
                             {"list", json::array{"\x7f", utf8(0x85), utf8(0x2066), "plain"}}};
  const std::string safe = escape_json_for_terminal(json::serialize(value));
  EXPECT_EQ(find_raw_control(safe), "") << safe;
  EXPECT_EQ(json::parse(safe), value);
  // Not escaped twice: the serializer's own \u001b stays one escape.
  EXPECT_NE(safe.find("\\u001b[2J"), std::string::npos) << safe;
  EXPECT_NE(safe.find("\\u007f"), std::string::npos) << safe;
  EXPECT_NE(safe.find("\\u202e"), std::string::npos) << safe;
}

TEST(TerminalJson, MultiByteUtf8AndBackslashesAreKept) {
  const json::value value = {{"text", "caf\xc3\xa9 \\x1b \\\\ \xf0\x9f\x99\x82"}};
  const std::string serialized = json::serialize(value);
  EXPECT_EQ(escape_json_for_terminal(serialized), serialized);
}

TEST(TerminalJson, InvalidUtf8BecomesTheReplacementCharacter) {
  const json::value value = {{"raw", std::string("a\xff" "b\xe6\x97")}};
  const std::string safe = escape_json_for_terminal(json::serialize(value));
  EXPECT_EQ(find_raw_control(safe), "");
  EXPECT_EQ(json::parse(safe).at("raw"), "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd");
}

}  // namespace
