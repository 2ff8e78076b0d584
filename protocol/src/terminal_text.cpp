// Escaping untrusted text for terminals and log lines (see terminal_text.hpp).
#include <switchboard/protocol/terminal_text.hpp>

#include <switchboard/protocol/utf8.hpp>

#include <cstdint>

namespace switchboard::protocol {
namespace {

// One decoded UTF-8 sequence: its code point and length, or `valid` false
// for a byte that starts no valid sequence (then `length` is 1).
struct utf8_sequence {
  char32_t code_point = 0;
  std::size_t length = 1;
  bool valid = false;
};

utf8_sequence decode_one(std::string_view text, std::size_t pos) {
  const utf8_char c = decode_utf8(text, pos);
  if (c.size == 0) return {};
  return {c.code_point, c.size, true};
}

// Characters a terminal or a reader would act on rather than read.
bool is_active_code_point(char32_t c, line_breaks breaks) {
  if (c < 0x20) return !(breaks == line_breaks::keep && (c == '\n' || c == '\t'));
  if (c == 0x7F) return true;
  if (c >= 0x80 && c <= 0x9F) return true;      // C1: 8-bit CSI, OSC, NEL...
  if (c >= 0x202A && c <= 0x202E) return true;  // bidi embeddings and overrides
  if (c >= 0x2066 && c <= 0x2069) return true;  // bidi isolates
  return c == 0x2028 || c == 0x2029;            // line and paragraph separators
}

// Printable ASCII never needs a look at UTF-8: the common case.
bool is_plain_ascii(unsigned char byte) { return byte >= 0x20 && byte < 0x7F; }

constexpr char hex_digits[] = "0123456789abcdef";

void append_hex(std::string& out, std::uint32_t value, int digits) {
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += hex_digits[(value >> shift) & 0xF];
}

void append_escape(std::string& out, char32_t c) {
  switch (c) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: break;
  }
  if (c < 0x80) {
    out += "\\x";
    append_hex(out, c, 2);
  } else {
    out += "\\u";
    append_hex(out, c, 4);
  }
}

void append_invalid_byte(std::string& out, unsigned char byte) {
  out += "\\x";
  append_hex(out, byte, 2);
}

}  // namespace

void append_escaped_for_terminal(std::string& out, std::string_view text, line_breaks breaks) {
  out.reserve(out.size() + text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t plain_end = pos;
    while (plain_end < text.size() && is_plain_ascii(static_cast<unsigned char>(text[plain_end]))) ++plain_end;
    out.append(text, pos, plain_end - pos);
    pos = plain_end;
    if (pos == text.size()) break;
    const utf8_sequence seq = decode_one(text, pos);
    if (!seq.valid) append_invalid_byte(out, static_cast<unsigned char>(text[pos]));
    else if (is_active_code_point(seq.code_point, breaks)) append_escape(out, seq.code_point);
    else out.append(text, pos, seq.length);
    pos += seq.length;
  }
}

std::string escape_for_terminal(std::string_view text, line_breaks breaks) {
  std::string out;
  append_escaped_for_terminal(out, text, breaks);
  return out;
}

bool is_terminal_safe(std::string_view text, line_breaks breaks) noexcept {
  for (std::size_t pos = 0; pos < text.size();) {
    if (is_plain_ascii(static_cast<unsigned char>(text[pos]))) {
      ++pos;
      continue;
    }
    const utf8_sequence seq = decode_one(text, pos);
    if (!seq.valid || is_active_code_point(seq.code_point, breaks)) return false;
    pos += seq.length;
  }
  return true;
}

std::string escape_json_for_terminal(std::string_view serialized_json) {
  std::string out;
  out.reserve(serialized_json.size());
  std::size_t pos = 0;
  while (pos < serialized_json.size()) {
    const auto byte = static_cast<unsigned char>(serialized_json[pos]);
    if (is_plain_ascii(byte)) {
      out += static_cast<char>(byte);
      ++pos;
      continue;
    }
    const utf8_sequence seq = decode_one(serialized_json, pos);
    if (!seq.valid) {
      out += "\\ufffd";  // JSON has no escape for a raw byte
    } else if (is_active_code_point(seq.code_point, line_breaks::keep)) {
      // Inside a string \uXXXX denotes the same character; TAB and LF are
      // kept because outside strings they are JSON whitespace.
      out += "\\u";
      append_hex(out, seq.code_point, 4);
    } else {
      out.append(serialized_json, pos, seq.length);
    }
    pos += seq.length;
  }
  return out;
}

}  // namespace switchboard::protocol
