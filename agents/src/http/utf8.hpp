// UTF-8 checks for text from outside: response bodies are repaired before
// anything parses them, excerpts are cut at character boundaries. Internal.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace switchboard::agents::detail {

// The length of the well-formed UTF-8 sequence starting at text[pos], or 0
// when the bytes there are not one (Unicode 15 table 3-7: no overlong forms,
// no surrogates, nothing above U+10FFFF, no cut-off sequence).
std::size_t utf8_sequence_size(std::string_view text, std::size_t pos);

// Replaces every maximal ill-formed subsequence of `text` with U+FFFD, the
// replacement character (Unicode's "substitution of maximal subparts").
// Text that is already well-formed is left untouched (and not copied).
void replace_invalid_utf8(std::string& text);

}  // namespace switchboard::agents::detail
