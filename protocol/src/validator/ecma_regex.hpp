// JSON Schema regular expressions (ECMA-262 syntax) run by RE2: linear time
// in the text, bounded memory, no recursion on the text. Internal.
//
// A pattern is translated from ECMA-262 to RE2 syntax so that it means what
// ECMA-262 says for the strings a schema sees: `.` stops at \n, \r, U+2028
// and U+2029; \s is ECMA's white space and line terminators; ^ and $ are the
// start and end of the text; \d and \w are ASCII; Annex B leniency (a `{`
// that starts no quantifier, `\c` without a letter, identity escapes such as
// `\/`) is kept. Text is matched as UTF-8 code points, as ECMA's `u` flag
// does (a character outside the BMP is one character, not two).
//
// What RE2 cannot do is refused with the reason: backreferences (\1, \k<n>),
// lookahead and lookbehind, a repetition count above 1000, a pattern longer
// than max_regex_pattern_length or whose program needs more than
// max_regex_memory, lone surrogates (\uD800), octal escapes.
//
// Thread-safety: an ecma_regex is immutable; search() may be called from
// many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace switchboard::protocol::detail {

// Limits of one schema pattern (documented in docs/structured-outputs.md).
inline constexpr std::size_t max_regex_pattern_length = 8192;  // bytes of the ECMA pattern
inline constexpr std::int64_t max_regex_memory = 1 << 20;      // RE2 max_mem: program + DFA cache

class ecma_regex {
 public:
  // nullptr when the pattern cannot be used; `why_not` then says why, e.g.
  // "backreference \1 is not supported (RE2 has no backreferences)".
  static std::shared_ptr<const ecma_regex> compile(std::string_view pattern, std::string& why_not);

  // True when the pattern matches anywhere in `text` (RegExp.prototype.test;
  // JSON Schema patterns are not implicitly anchored).
  bool search(std::string_view text) const noexcept;

  const std::string& pattern() const noexcept { return pattern_; }

  ecma_regex(std::string pattern, std::unique_ptr<const re2::RE2> compiled);
  ~ecma_regex();
  ecma_regex(const ecma_regex&) = delete;
  ecma_regex& operator=(const ecma_regex&) = delete;

 private:
  std::string pattern_;
  std::unique_ptr<const re2::RE2> compiled_;
};

// The RE2 syntax of an ECMA-262 pattern; nullopt with `why_not` set when it
// uses what RE2 cannot do or is not ECMA-262 syntax. Exposed for tests.
std::optional<std::string> translate_ecma_regex(std::string_view pattern, std::string& why_not);

}  // namespace switchboard::protocol::detail
