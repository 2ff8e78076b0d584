// The one place text from outside is made fit for an error message or a log
// (net/redaction.hpp), and the UTF-8 repair of response bodies
// (switchboard/protocol/utf8.hpp).
#include <switchboard/net/redaction.hpp>

#include <switchboard/protocol/utf8.hpp>

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace switchboard::net {
namespace {

constexpr std::string_view key = "k3y-0123456789-abcdefghij";
const std::string bearer = "Bearer " + std::string(key);

std::array<http_header, 2> request_headers() {
  return {{{"Authorization", bearer, true}, {"anthropic-version", "2023-06-01", false}}};
}

TEST(Redaction, SecretHeaderValuesAndTheirLastWordAreReplaced) {
  const auto headers = request_headers();
  const std::string text = "got '" + bearer + "' and the bare key " + std::string(key) + " twice " + std::string(key);
  const std::string clean = redact(text, headers);
  EXPECT_EQ(clean.find(key), std::string::npos) << clean;
  EXPECT_EQ(clean, "got '[redacted]' and the bare key [redacted] twice [redacted]");
  // Values of headers not marked secret stay.
  EXPECT_EQ(redact("version 2023-06-01", headers), "version 2023-06-01");
}

TEST(Redaction, CredentialShapedTextIsReplacedWithoutKnowingTheKey) {
  EXPECT_EQ(redact("Authorization: Bearer abcdef0123456789xyz\r\nHost: h"),
            "Authorization: Bearer [redacted]\r\nHost: h");
  EXPECT_EQ(redact(R"({"X-Api-Key": "ant-secret-value", "Accept": "*/*"})"),
            R"({"X-Api-Key": "[redacted]", "Accept": "*/*"})");
  EXPECT_EQ(redact("GET /v1?api_key=abc123xyz&page=2"), "GET /v1?api_key=[redacted]&page=2");
  EXPECT_EQ(redact("key sk-proj-AAAAbbbbCCCCdddd1234 is bad"), "key [redacted] is bad");
  EXPECT_EQ(redact("see https://bob:pa55word@proxy.example/v1"), "see https://[redacted]@proxy.example/v1");
  EXPECT_EQ(redact("token: Basic dXNlcjpwYXNzd29yZDE="), "token: Basic [redacted]");
}

TEST(Redaction, OrdinaryWordsNearCredentialNamesSurvive) {
  for (const std::string text : {"expected a Bearer token", "Bearer authentication failed",
                                 "the x-api-key header is missing", "sk-short", "task-0123456789abcdefghij"}) {
    EXPECT_EQ(redact(text), text);
  }
  // Secrets too short to be keys would garble every message: left alone.
  const std::array<http_header, 1> tiny{{{"x-api-key", "abc", true}}};
  EXPECT_EQ(redact("abc abc", tiny), "abc abc");
}

TEST(Redaction, TakesLinearTimeOnAHostileMessage) {
  // A 2 MiB error message made of nothing but credentials: replacing them
  // one by one in place would move megabytes per match and never finish.
  std::string hostile;
  while (hostile.size() < 2 * 1024 * 1024) hostile += "api_key=abcdefgh sk-0123456789abcdef01 ";
  const std::string clean = redact(hostile);
  EXPECT_EQ(clean.find("abcdefgh"), std::string::npos);
  EXPECT_EQ(clean.find("sk-0123"), std::string::npos);
  EXPECT_EQ(clean.substr(0, 30), "api_key=[redacted] [redacted] ");
}

TEST(Redaction, ExcerptEscapesControlCharactersAndCutsAtACharacterBoundary) {
  const std::string hostile = "a\x1b[2Jb\x07\x7f\r\n\t\xc2\x9b" "c\xff";
  EXPECT_EQ(excerpt(hostile), "a\\x1b[2Jb\\x07\\x7f\\r\\n\\t\\u009bc\\xff");

  const std::string accents = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";  // 5 x "é", 10 bytes
  const std::string cut = excerpt(accents, {}, 8);
  EXPECT_EQ(cut, "\xc3\xa9\xc3\xa9...");  // 4 + 3 bytes: a third "é" would pass 8
  EXPECT_LE(cut.size(), 8u);
  EXPECT_EQ(excerpt("short", {}, 8), "short");
}

TEST(Redaction, ExcerptNeverPrintsPartOfAKeyThatStraddlesTheCut) {
  const auto headers = request_headers();
  const std::string body = std::string(100, '.') + std::string(key) + " tail";
  const std::string cut = excerpt(body, headers, 110);
  EXPECT_EQ(cut.find(key.substr(0, 6)), std::string::npos) << cut;
  // The marker took the key's place before the cut, and the cut fell in the marker.
  EXPECT_EQ(cut, std::string(100, '.') + "[redact...");
}

TEST(Redaction, ContainsSecretFindsTheKeyOnlyWhenLongEnough) {
  const auto headers = request_headers();
  EXPECT_TRUE(contains_secret(R"({"echo":")" + std::string(key) + "\"}", headers, 8));
  EXPECT_FALSE(contains_secret(R"({"choices":[]})", headers, 8));
  const std::array<http_header, 1> short_key{{{"x-api-key", "ollama", true}}};
  EXPECT_FALSE(contains_secret("ask ollama", short_key, 8));
}

TEST(Redaction, UserInfoIsRemovedFromAnAddress) {
  EXPECT_EQ(without_user_info("https://u:p@host:8/v1?x=1"), "https://host:8/v1?x=1");
  EXPECT_EQ(without_user_info("https://host/v1"), "https://host/v1");
}

std::string repaired(std::string text) {
  protocol::replace_invalid_utf8(text);
  return text;
}

TEST(Utf8, InvalidSequencesBecomeOneReplacementCharacterEach) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(repaired("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(repaired("a\xff" "b"), "a" + fffd + "b");
  EXPECT_EQ(repaired("\xc0\xaf"), fffd + fffd);                // overlong '/'
  EXPECT_EQ(repaired("x\xe2\x82"), "x" + fffd);               // cut short: one maximal subpart
  EXPECT_EQ(repaired("\xed\xa0\x80"), fffd + fffd + fffd);    // a surrogate
  EXPECT_EQ(repaired("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // above U+10FFFF
  EXPECT_EQ(repaired(std::string(40, 'a') + "\x80"), std::string(40, 'a') + fffd);
}

}  // namespace
}  // namespace switchboard::net
