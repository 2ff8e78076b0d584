// The request-body writer's string escaping, checked against Boost.JSON's
// parser: whatever it writes must read back as the original text, at every
// length and with escapes at every position of the 8-byte scan.
#include "../../models/src/json_writer.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/string.hpp>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <type_traits>

namespace switchboard::models::detail {
namespace {

std::string read_back(const std::string& written) {
  boost::system::error_code ec;
  const auto value = boost::json::parse(written, ec);
  EXPECT_FALSE(ec) << ec.message() << " in " << written;
  if (ec || !value.is_string()) return "<not a JSON string>";
  return std::string(value.get_string());
}

TEST(json_writer, escapes_quotes_backslashes_and_control_characters) {
  std::string out = "prefix:";
  static constexpr char text[] = "a\"b\\c\nd\re\tf\bg\fh\x01i\x1f";
  append_json_string(out, std::string_view(text, sizeof text - 1));
  EXPECT_EQ(out, R"(prefix:"a\"b\\c\nd\re\tf\bg\fh\u0001i\u001f")");
}

TEST(json_writer, keeps_utf8_and_plain_text_as_is) {
  std::string out;
  append_json_string(out, "Grüße, 東京 — a plain sentence longer than eight bytes");
  EXPECT_EQ(out, "\"Grüße, 東京 — a plain sentence longer than eight bytes\"");
  out.clear();
  append_json_string(out, "");
  EXPECT_EQ(out, "\"\"");
}

TEST(json_writer, every_escape_at_every_position_reads_back) {
  const std::string specials = std::string("\"\\\n\x01\x1f\t", 6);
  for (std::size_t length = 1; length <= 24; ++length) {
    for (std::size_t at = 0; at < length; ++at) {
      for (const char special : specials) {
        std::string text(length, 'x');
        text[at] = special;
        std::string out;
        append_json_string(out, text);
        ASSERT_EQ(read_back(out), text) << "length " << length << ", escape at " << at;
      }
    }
  }
}

TEST(json_writer, random_texts_read_back) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> byte(0, 127);  // ASCII: every control character included
  std::uniform_int_distribution<int> size(0, 200);
  for (int round = 0; round < 2000; ++round) {
    std::string text(static_cast<std::size_t>(size(random)), ' ');
    for (auto& c : text) c = static_cast<char>(byte(random));
    std::string out = "[";
    append_json_string(out, text);
    ASSERT_EQ(out.front(), '[');
    ASSERT_EQ(read_back(out.substr(1)), text) << "round " << round;
  }
}

TEST(json_writer, member_names_are_literals_written_as_they_are) {
  static_assert(!std::is_convertible_v<std::string_view, json_writer::member_name>);
  static_assert(!std::is_convertible_v<std::string, json_writer::member_name>);
  std::string body;
  json_writer w(body);
  w.begin_object().key("model").string("m \"1\"").key("messages").begin_array();
  w.begin_object().key("role").string("user").end_object().begin_object().end_object().end_array();
  w.key("n").number(std::int64_t{3}).key("stream").boolean(false).key("empty").begin_object().end_object();
  w.end_object();
  EXPECT_EQ(body,
            R"({"model":"m \"1\"","messages":[{"role":"user"},{}],"n":3,"stream":false,"empty":{}})");
  EXPECT_EQ(boost::json::parse(body).at("messages").at(0).at("role"), "user");
}

}  // namespace
}  // namespace switchboard::models::detail
