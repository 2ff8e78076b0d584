#include "json_writer.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <charconv>

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

void append_json_string(std::string& out, std::string_view text) {
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  const char* plain = text.data();
  const char* const end = text.data() + text.size();
  for (const char* p = plain; p != end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (!escape_table[c]) continue;
    out.append(plain, p);
    append_escape(out, c);
    plain = p + 1;
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
