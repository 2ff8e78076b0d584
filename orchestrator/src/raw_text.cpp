// audit_entry::keep_raw_text: the start of a model's text, bounded and
// always valid UTF-8, so that a huge or broken answer neither bloats every
// checkpoint nor makes one unreadable (a JSON reader refuses invalid UTF-8).
#include <switchboard/orchestrator/workflow_state.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace switchboard::orchestrator {

namespace {

constexpr std::string_view replacement_character = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at text[i], or 0 when the byte there
// does not start one (a stray continuation byte, an overlong form, a
// surrogate, a code point past U+10FFFF, a sequence cut short).
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[i + k]); };
  const std::uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  std::uint8_t low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // no overlong forms
    if (lead == 0xF4) high = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return length;
}

// Whether the eight bytes at `p` are all ASCII.
bool ascii_word(const char* p) {
  std::uint64_t word;
  std::memcpy(&word, p, sizeof word);
  return (word & 0x8080808080808080ULL) == 0;
}

}  // namespace

// Valid stretches are copied whole, not a character at a time: this runs
// on every model answer.
void audit_entry::keep_raw_text(std::string_view text) {
  raw_text.clear();
  raw_text.reserve(std::min(text.size(), max_raw_text_bytes));
  raw_text_bytes = 0;
  std::size_t i = 0;
  std::size_t valid_from = 0;  // text[valid_from, i) is valid and not copied yet
  while (i < text.size()) {
    if (const std::size_t kept = raw_text.size() + (i - valid_from);
        text.size() - i >= 8 && kept + 8 <= max_raw_text_bytes && ascii_word(text.data() + i)) {
      i += 8;  // a model's text is mostly ASCII: eight bytes at a time
      continue;
    }
    const std::size_t length = static_cast<std::uint8_t>(text[i]) < 0x80 ? 1 : sequence_length(text, i);
    const std::size_t kept = raw_text.size() + (i - valid_from);
    if (kept + (length == 0 ? replacement_character.size() : length) > max_raw_text_bytes) break;
    if (length == 0) {
      raw_text.append(text.data() + valid_from, i - valid_from);
      raw_text += replacement_character;
      valid_from = ++i;
    } else {
      i += length;
    }
  }
  raw_text.append(text.data() + valid_from, i - valid_from);
  if (i < text.size()) raw_text_bytes = static_cast<std::int64_t>(text.size());
}

}  // namespace switchboard::orchestrator
