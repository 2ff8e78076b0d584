#include "json_writer.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace switchboard::models::detail {

namespace {

// True for the bytes a JSON string cannot hold as they are.
constexpr auto escape_table = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 0x20; ++c) table[c] = true;
  table['"'] = table['\\'] = true;
  return table;
}();

// The character after the backslash for the two-character escapes, 0 for
// the bytes written as \u00XX.
constexpr auto short_escape = [] {
  std::array<char, 256> table{};
  table['"'] = '"';
  table['\\'] = '\\';
  table['\n'] = 'n';
  table['\r'] = 'r';
  table['\t'] = 't';
  table['\b'] = 'b';
  table['\f'] = 'f';
  return table;
}();

// Finding the first flagged byte with countr_zero assumes little endian.
static_assert(std::endian::native == std::endian::little);

// One bit set (the byte's high bit) for each of the 8 bytes of `word` that
// is a control character, '"' or '\\'. Bytes above the first flagged one may
// be flagged wrongly (borrows), so only the lowest set bit is exact.
std::uint64_t special_bytes(std::uint64_t word) {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t highs = 0x8080808080808080ULL;
  auto zero_bytes = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
  const std::uint64_t below_space = (word - ones * 0x20) & ~word & highs;
  return below_space | zero_bytes(word ^ (ones * '"')) | zero_bytes(word ^ (ones * '\\'));
}

}  // namespace

// Message texts are long and rarely escaped, but prompts that quote JSON
// have many short runs between quotes: the text is scanned 8 bytes at a
// time, jumps straight to the next byte to escape, and is written through a
// pointer into room reserved up front (two output bytes per input byte,
// enough for every escape but the rare \u00XX, which grows it).
void append_json_string(std::string& out, std::string_view text) {
  const std::size_t start = out.size();
  out.resize(start + 2 * text.size() + 2);
  char* o = out.data() + start;
  *o++ = '"';
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p != end) {
    if (end - p >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, sizeof word);
      std::memcpy(o, p, sizeof word);  // room: at least 2 * (end - p) + 1 bytes
      const std::uint64_t special = special_bytes(word);
      const int plain = special == 0 ? 8 : std::countr_zero(special) / 8;
      o += plain;
      p += plain;
      if (plain == 8) continue;
    }
    const auto c = static_cast<unsigned char>(*p++);
    if (!escape_table[c]) {
      *o++ = static_cast<char>(c);
    } else if (const char e = short_escape[c]) {
      *o++ = '\\';
      *o++ = e;
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      const std::size_t at = static_cast<std::size_t>(o - out.data());
      out.resize(out.size() + 4);  // six bytes instead of the two reserved
      o = out.data() + at;
      const char escaped[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
      std::memcpy(o, escaped, sizeof escaped);
      o += sizeof escaped;
    }
  }
  *o++ = '"';
  out.resize(static_cast<std::size_t>(o - out.data()));
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

json_writer& json_writer::key(member_name name) {
  separate();
  out_ += '"';
  out_ += name.text();
  out_.append("\":", 2);
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

}  // namespace switchboard::models::detail
