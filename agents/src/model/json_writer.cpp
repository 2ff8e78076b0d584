#include "json_writer.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace switchboard::agents::detail {

namespace {

// True for the bytes a JSON string cannot hold as they are.
constexpr auto escape_table = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 0x20; ++c) table[c] = true;
  table['"'] = table['\\'] = true;
  return table;
}();

void append_escape(std::string& out, unsigned char c) {
  static constexpr char hex[] = "0123456789abcdef";
  switch (c) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    default:
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 0xf];
  }
}

}  // namespace

// Whether any of the 8 bytes in `word` is a control character, '"' or '\\'
// (bit tricks on a 64-bit word: message texts are long and rarely escaped,
// so they are scanned 8 bytes at a time).
bool has_special_byte(std::uint64_t word) {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t highs = 0x8080808080808080ULL;
  auto has_zero = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
  const std::uint64_t below_space = (word - ones * 0x20) & ~word & highs;
  return below_space | has_zero(word ^ (ones * '"')) | has_zero(word ^ (ones * '\\'));
}

void append_json_string(std::string& out, std::string_view text) {
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  const char* plain = text.data();
  const char* const end = text.data() + text.size();
  const char* p = plain;
  while (p != end) {
    if (end - p >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, sizeof word);
      if (!has_special_byte(word)) {
        p += 8;
        continue;
      }
    }
    const auto c = static_cast<unsigned char>(*p);
    if (escape_table[c]) {
      out.append(plain, p);
      append_escape(out, c);
      plain = p + 1;
    }
    ++p;
  }
  out.append(plain, end);
  out += '"';
}

void json_writer::separate() {
  if (need_comma_) out_ += ',';
  need_comma_ = false;
}

json_writer& json_writer::begin_object() {
  separate();
  out_ += '{';
  return *this;
}

json_writer& json_writer::end_object() {
  out_ += '}';
  need_comma_ = true;
  return *this;
}

json_writer& json_writer::begin_array() {
  separate();
  out_ += '[';
  return *this;
}

json_writer& json_writer::end_array() {
  out_ += ']';
  need_comma_ = true;
  return *this;
}

json_writer& json_writer::key(std::string_view name) {
  separate();
  append_json_string(out_, name);
  out_ += ':';
  return *this;
}

json_writer& json_writer::string(std::string_view text) {
  separate();
  append_json_string(out_, text);
  need_comma_ = true;
  return *this;
}

json_writer& json_writer::boolean(bool value) {
  separate();
  out_ += value ? "true" : "false";
  need_comma_ = true;
  return *this;
}

json_writer& json_writer::number(double value) {
  // Boost.JSON's own formatting, so bodies read the same as before.
  return raw(boost::json::serialize(boost::json::value(value)));
}

json_writer& json_writer::number(std::int64_t value) {
  separate();
  char buffer[24];
  out_.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
  need_comma_ = true;
  return *this;
}

json_writer& json_writer::raw(std::string_view json_text) {
  separate();
  out_ += json_text;
  need_comma_ = true;
  return *this;
}

}  // namespace switchboard::agents::detail
