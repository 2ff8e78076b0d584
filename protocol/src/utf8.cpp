// UTF-8 decoding after Unicode 15 table 3-7 (see utf8.hpp).
#include <switchboard/protocol/utf8.hpp>

#include <cstdint>
#include <cstring>

namespace switchboard::protocol {

namespace {

constexpr std::string_view replacement_character = "\xEF\xBF\xBD";

struct lead_rule {
  std::size_t size = 0;     // 0: not a lead byte
  unsigned char low = 0x80;  // the range of the second byte
  unsigned char high = 0xBF;
};

lead_rule rule_for(unsigned char lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return {2};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};  // no surrogates
  if (lead >= 0xE1 && lead <= 0xEF) return {3};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead >= 0xF1 && lead <= 0xF3) return {4};
  if (lead == 0xF4) return {4, 0x80, 0x8F};  // nothing above U+10FFFF
  return {};
}

bool is_continuation(unsigned char c) { return c >= 0x80 && c <= 0xBF; }

// How many bytes at `pos` form the longest prefix of a valid sequence (at
// least 1): the "maximal subpart" that one U+FFFD replaces.
std::size_t maximal_subpart(std::string_view text, std::size_t pos) {
  const lead_rule rule = rule_for(static_cast<unsigned char>(text[pos]));
  if (rule.size == 0 || pos + 1 >= text.size()) return 1;
  const auto second = static_cast<unsigned char>(text[pos + 1]);
  if (second < rule.low || second > rule.high) return 1;
  std::size_t n = 2;
  while (n < rule.size && pos + n < text.size() && is_continuation(static_cast<unsigned char>(text[pos + n]))) ++n;
  return n;
}

// The index of the first byte of `text` that is not ASCII, 8 bytes at a time.
std::size_t ascii_prefix(std::string_view text) {
  std::size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, text.data() + i, 8);
    if (word & 0x8080808080808080ULL) break;
  }
  while (i < text.size() && static_cast<unsigned char>(text[i]) < 0x80) ++i;
  return i;
}

// The index of the first ill-formed byte of `text`, text.size() when none.
std::size_t first_invalid(std::string_view text) {
  std::size_t pos = ascii_prefix(text);
  while (pos < text.size()) {
    const std::size_t size = utf8_sequence_size(text, pos);
    if (size == 0) return pos;
    pos += size;
    if (size == 1) pos += ascii_prefix(text.substr(pos));
  }
  return pos;
}

}  // namespace

utf8_char decode_utf8(std::string_view text, std::size_t pos) {
  const std::size_t size = utf8_sequence_size(text, pos);
  if (size == 0) return {};
  const auto lead = static_cast<unsigned char>(text[pos]);
  char32_t code_point = size == 1 ? lead : lead & (0xFF >> (size + 1));
  for (std::size_t i = 1; i < size; ++i) code_point = (code_point << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  return {code_point, size};
}

std::size_t utf8_sequence_size(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return 1;
  const lead_rule rule = rule_for(lead);
  if (rule.size == 0 || pos + rule.size > text.size()) return 0;
  const auto second = static_cast<unsigned char>(text[pos + 1]);
  if (second < rule.low || second > rule.high) return 0;
  for (std::size_t i = 2; i < rule.size; ++i) {
    if (!is_continuation(static_cast<unsigned char>(text[pos + i]))) return 0;
  }
  return rule.size;
}

void replace_invalid_utf8(std::string& text) {
  std::size_t pos = first_invalid(text);
  if (pos == text.size()) return;
  std::string repaired(text, 0, pos);
  repaired.reserve(text.size() + 16);
  while (pos < text.size()) {
    const std::size_t size = utf8_sequence_size(text, pos);
    if (size != 0) {
      repaired.append(text, pos, size);
      pos += size;
    } else {
      repaired.append(replacement_character);
      pos += maximal_subpart(text, pos);
    }
  }
  text = std::move(repaired);
}

}  // namespace switchboard::protocol
