// UTF-8 checks for text from outside, in one place: response bodies are
// repaired before anything parses them, excerpts are cut at character
// boundaries, terminal output escapes what is not valid.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace switchboard::protocol {

// The length of the well-formed UTF-8 sequence starting at text[pos], or 0
// when the bytes there are not one (Unicode 15 table 3-7: no overlong forms,
// no surrogates, nothing above U+10FFFF, no cut-off sequence).
std::size_t utf8_sequence_size(std::string_view text, std::size_t pos);

// The code point of the well-formed sequence at text[pos] and its size;
// size 0 when the bytes there are not one (as utf8_sequence_size).
struct utf8_char {
  char32_t code_point = 0;
  std::size_t size = 0;
};
utf8_char decode_utf8(std::string_view text, std::size_t pos);

// Replaces every maximal ill-formed subsequence of `text` with U+FFFD, the
// replacement character (Unicode's "substitution of maximal subparts").
// Text that is already well-formed is left untouched (and not copied).
void replace_invalid_utf8(std::string& text);

}  // namespace switchboard::protocol
