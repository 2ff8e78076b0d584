// ECMA-262 pattern → RE2 syntax, then RE2. The translator reads the pattern
// once, left to right, and writes every literal character as \x{...}, so no
// character can take on a meaning in RE2 that it did not have in ECMA-262
// (RE2's [:alpha:], \pN, \Q...\E, (?i) and \z are never produced).
#include "ecma_regex.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

namespace switchboard::protocol::detail {

namespace {

struct char_range {
  char32_t lo, hi;
};

constexpr char32_t max_code_point = 0x10FFFF;

// ECMA-262 WhiteSpace and LineTerminator: what \s matches.
constexpr std::array<char_range, 10> ecma_space{{{0x09, 0x0D},
                                                 {0x20, 0x20},
                                                 {0xA0, 0xA0},
                                                 {0x1680, 0x1680},
                                                 {0x2000, 0x200A},
                                                 {0x2028, 0x2029},
                                                 {0x202F, 0x202F},
                                                 {0x205F, 0x205F},
                                                 {0x3000, 0x3000},
                                                 {0xFEFF, 0xFEFF}}};

// ECMA-262 `.`: anything but a line terminator.
constexpr std::string_view any_but_line_terminator = R"([^\n\r\x{2028}\x{2029}])";
// [^] and [] of ECMA-262: any character at all, and none.
constexpr std::string_view any_character = R"([\x{0}-\x{10FFFF}])";
constexpr std::string_view no_character = R"([^\x{0}-\x{10FFFF}])";

constexpr int max_repeat = 1000;  // RE2's limit on {n,m}

struct bad_pattern {
  std::string why;
};

std::string hex_escape(char32_t c) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\x{%X}", static_cast<unsigned>(c));
  return buffer;
}

// A literal character as RE2 text: ASCII letters and digits as they are,
// anything else as \x{...} so that it cannot mean anything else.
std::string literal_text(char32_t c) {
  const bool plain = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return plain ? std::string(1, static_cast<char>(c)) : hex_escape(c);
}

std::string ranges_text(const char_range* begin, const char_range* end) {
  std::string out;
  for (const auto* r = begin; r != end; ++r) {
    out += hex_escape(r->lo);
    if (r->hi != r->lo) out += "-" + hex_escape(r->hi);
  }
  return out;
}

// The inside of a bracket class for \s, or for \S (its complement).
std::string space_class_body(bool negated) {
  if (!negated) return ranges_text(ecma_space.data(), ecma_space.data() + ecma_space.size());
  std::vector<char_range> complement;
  char32_t next = 0;
  for (const auto& r : ecma_space) {
    if (r.lo > next) complement.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  complement.push_back({next, max_code_point});
  return ranges_text(complement.data(), complement.data() + complement.size());
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_surrogate(char32_t c) { return c >= 0xD800 && c <= 0xDFFF; }

// One element of a bracket class: a character range, or a class escape
// (\d, \s, ...) written as RE2 text that is valid inside brackets.
struct class_item {
  char32_t lo = 0, hi = 0;
  std::string set;  // non-empty for a class escape
};

class translator {
 public:
  explicit translator(std::string_view in) : in_(in) {}

  std::string run() {
    while (pos_ < in_.size()) step();
    if (open_groups_ != 0) fail("missing ')'");
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(std::string why) { throw bad_pattern{std::move(why)}; }

  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < in_.size() ? in_[pos_ + ahead] : '\0';
  }
  bool has(std::size_t ahead) const { return pos_ + ahead < in_.size(); }

  void step() {
    const char c = in_[pos_];
    switch (c) {
      case '\\': atom_escape(); break;
      case '[': char_class(); break;
      case '(': open_group(); break;
      case ')': close_group(); break;
      case '.': emit_atom(any_but_line_terminator, 1); break;
      case '*': case '+': case '?': quantifier(std::string(1, c), 1); break;
      case '{': brace(); break;
      case '^': case '$': case '|': emit_assertion(std::string(1, c), 1); break;
      default: emit_atom(literal_text(code_point()), 0); break;
    }
  }

  void emit_atom(std::string_view text, std::size_t consumed) {
    out_ += text;
    pos_ += consumed;
    can_repeat_ = true;
  }

  void emit_assertion(std::string_view text, std::size_t consumed) {
    out_ += text;
    pos_ += consumed;
    can_repeat_ = false;
  }

  // Decodes the UTF-8 character at pos_ and steps over it.
  char32_t code_point() {
    const auto lead = static_cast<unsigned char>(in_[pos_]);
    int length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || pos_ + static_cast<std::size_t>(length) > in_.size()) fail("the pattern is not valid UTF-8");
    char32_t c = length == 1 ? lead : lead & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      const auto next = static_cast<unsigned char>(in_[pos_ + static_cast<std::size_t>(i)]);
      if ((next & 0xC0) != 0x80) fail("the pattern is not valid UTF-8");
      c = (c << 6) | (next & 0x3F);
    }
    pos_ += static_cast<std::size_t>(length);
    if (c > max_code_point || is_surrogate(c)) fail("the pattern is not valid UTF-8");
    return c;
  }

  void quantifier(const std::string& text, std::size_t consumed) {
    if (!can_repeat_) {
      fail("nothing to repeat before '" + text + "' at offset " + std::to_string(pos_));
    }
    out_ += text;
    pos_ += consumed;
    if (peek() == '?') {  // lazy
      out_ += '?';
      ++pos_;
    }
    can_repeat_ = false;
  }

  // {n}, {n,} or {n,m}; anything else is a literal '{' (Annex B).
  void brace() {
    std::size_t i = pos_ + 1;
    auto number = [&]() -> std::optional<long> {
      const std::size_t start = i;
      long value = 0;
      while (i < in_.size() && is_digit(in_[i])) {
        value = std::min<long>(value * 10 + (in_[i] - '0'), 1'000'000);
        ++i;
      }
      return i == start ? std::nullopt : std::optional<long>(value);
    };
    const auto min = number();
    std::optional<long> max = min;
    bool unbounded = false;
    if (min && i < in_.size() && in_[i] == ',') {
      ++i;
      max = number();
      unbounded = !max;
    }
    if (!min || i >= in_.size() || in_[i] != '}') {
      emit_atom(literal_text('{'), 1);
      return;
    }
    const std::string text(in_.substr(pos_, i + 1 - pos_));
    if (*min > max_repeat || (max && *max > max_repeat)) {
      fail("repetition count in '" + text + "' is above RE2's limit of " + std::to_string(max_repeat));
    }
    if (!unbounded && *max < *min) fail("numbers out of order in '" + text + "'");
    quantifier(text, text.size());
  }

  void open_group() {
    const std::string_view rest = in_.substr(pos_);
    if (rest.starts_with("(?:")) {
      out_ += "(?:";
      pos_ += 3;
    } else if (rest.starts_with("(?=") || rest.starts_with("(?!")) {
      fail("lookahead '" + std::string(rest.substr(0, 3)) + "' is not supported (RE2 has no lookaround)");
    } else if (rest.starts_with("(?<=") || rest.starts_with("(?<!")) {
      fail("lookbehind '" + std::string(rest.substr(0, 4)) + "' is not supported (RE2 has no lookaround)");
    } else if (rest.starts_with("(?<")) {
      named_group(rest);
    } else if (rest.starts_with("(?")) {
      fail("'" + std::string(rest.substr(0, 3)) + "' is not ECMA-262 syntax");
    } else {
      out_ += '(';
      ++pos_;
    }
    ++open_groups_;
    can_repeat_ = false;
  }

  void named_group(std::string_view rest) {
    const auto end = rest.find('>');
    if (end == std::string_view::npos) fail("unterminated group name");
    const std::string_view name = rest.substr(3, end - 3);
    const bool plain = !name.empty() && !is_digit(name.front()) &&
                       std::all_of(name.begin(), name.end(),
                                   [](char c) { return is_ascii_letter(c) || is_digit(c) || c == '_'; });
    if (!plain) fail("group name '" + std::string(name) + "' is not supported (ASCII letters, digits, _)");
    out_ += "(?P<" + std::string(name) + ">";
    pos_ += end + 1;
  }

  void close_group() {
    if (open_groups_ == 0) fail("unmatched ')' at offset " + std::to_string(pos_));
    --open_groups_;
    emit_atom(")", 1);
  }

  // \uXXXX at pos_ + 1 (pos_ at the backslash); a surrogate pair is one
  // character. nullopt when no four hex digits follow (then 'u' is literal).
  std::optional<char32_t> unicode_escape() {
    if (!(has(5) && is_hex(peek(2)) && is_hex(peek(3)) && is_hex(peek(4)) && is_hex(peek(5)))) {
      return std::nullopt;
    }
    const auto unit = static_cast<char32_t>(std::stoul(std::string(in_.substr(pos_ + 2, 4)), nullptr, 16));
    pos_ += 6;
    if (unit >= 0xD800 && unit <= 0xDBFF && peek() == '\\' && peek(1) == 'u' && has(5) &&
        is_hex(peek(2)) && is_hex(peek(3)) && is_hex(peek(4)) && is_hex(peek(5))) {
      const auto low = static_cast<char32_t>(std::stoul(std::string(in_.substr(pos_ + 2, 4)), nullptr, 16));
      if (low >= 0xDC00 && low <= 0xDFFF) {
        pos_ += 6;
        return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
      }
    }
    if (is_surrogate(unit)) {
      fail("lone surrogate \\u" + std::string(in_.substr(pos_ - 4, 4)) + " cannot match UTF-8 text");
    }
    return unit;
  }

  // The character a single-character escape stands for (pos_ at the
  // backslash, which is consumed with it); nullopt when it is not one.
  std::optional<char32_t> character_escape(bool in_class) {
    const char c = peek(1);
    switch (c) {
      case 't': pos_ += 2; return U'\t';
      case 'n': pos_ += 2; return U'\n';
      case 'v': pos_ += 2; return U'\v';
      case 'f': pos_ += 2; return U'\f';
      case 'r': pos_ += 2; return U'\r';
      case '0':
        if (is_digit(peek(2))) fail("octal escape '\\0" + std::string(1, peek(2)) + "' is not supported");
        pos_ += 2;
        return U'\0';
      case 'x':
        if (is_hex(peek(2)) && is_hex(peek(3))) {
          const auto value = static_cast<char32_t>(std::stoul(std::string(in_.substr(pos_ + 2, 2)), nullptr, 16));
          pos_ += 4;
          return value;
        }
        pos_ += 2;
        return U'x';  // Annex B: \x without two hex digits is 'x'
      case 'u':
        if (auto unit = unicode_escape()) return unit;
        pos_ += 2;
        return U'u';
      case 'c':
        if (is_ascii_letter(peek(2)) || (in_class && (is_digit(peek(2)) || peek(2) == '_'))) {
          const char letter = peek(2);
          pos_ += 3;
          return static_cast<char32_t>(letter % 32);
        }
        ++pos_;  // Annex B: a lone "\c" is a backslash, then 'c'
        return U'\\';
      case 'k':
        if (peek(2) == '<') fail("named backreference '\\k<' is not supported (RE2 has no backreferences)");
        pos_ += 2;
        return U'k';
      default:
        break;
    }
    if (c >= '1' && c <= '9') {
      fail(std::string(in_class ? "escape '\\" : "backreference '\\") + c +
           (in_class ? "' inside a character class is not supported"
                     : "' is not supported (RE2 has no backreferences)"));
    }
    return std::nullopt;
  }

  // \d \D \w \W \s \S as RE2 text valid inside brackets; empty otherwise.
  static std::string class_escape_body(char c) {
    switch (c) {
      case 'd': case 'D': case 'w': case 'W': return std::string("\\") + c;
      case 's': return space_class_body(false);
      case 'S': return space_class_body(true);
      default: return {};
    }
  }

  void atom_escape() {
    if (!has(1)) fail("the pattern ends with a lone backslash");
    const char c = peek(1);
    if (c == 'b' || c == 'B') return emit_assertion(std::string("\\") + c, 2);
    if (c == 'd' || c == 'D' || c == 'w' || c == 'W') return emit_atom(std::string("\\") + c, 2);
    if (c == 's' || c == 'S') {
      return emit_atom((c == 's' ? "[" : "[^") + space_class_body(false) + "]", 2);
    }
    if (const auto ch = character_escape(false)) return emit_atom(literal_text(*ch), 0);
    ++pos_;  // identity escape: the character itself
    emit_atom(literal_text(code_point()), 0);
  }

  class_item class_atom() {
    if (peek() != '\\') {
      const char32_t c = code_point();
      return {c, c, {}};
    }
    if (!has(1)) fail("the pattern ends with a lone backslash");
    const char c = peek(1);
    if (auto body = class_escape_body(c); !body.empty()) {
      pos_ += 2;
      return {0, 0, std::move(body)};
    }
    if (c == 'b') {  // backspace inside a class
      pos_ += 2;
      return {U'\b', U'\b', {}};
    }
    if (c == '-') {
      pos_ += 2;
      return {U'-', U'-', {}};
    }
    if (const auto ch = character_escape(true)) return {*ch, *ch, {}};
    ++pos_;
    const char32_t ch = code_point();
    return {ch, ch, {}};
  }

  void char_class() {
    ++pos_;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    std::vector<class_item> items;
    while (true) {
      if (pos_ >= in_.size()) fail("missing ']'");
      if (peek() == ']') break;
      class_item first = class_atom();
      if (peek() == '-' && has(1) && peek(1) != ']') {
        ++pos_;
        class_item last = class_atom();
        if (!first.set.empty() || !last.set.empty()) {  // Annex B: [\d-z] is \d, '-', 'z'
          items.push_back(std::move(first));
          items.push_back({U'-', U'-', {}});
          items.push_back(std::move(last));
        } else if (first.lo > last.lo) {
          fail("range out of order in character class at offset " + std::to_string(pos_));
        } else {
          items.push_back({first.lo, last.lo, {}});
        }
      } else {
        items.push_back(std::move(first));
      }
    }
    ++pos_;  // ']'
    if (items.empty()) return emit_atom(negated ? any_character : no_character, 0);
    std::string text = negated ? "[^" : "[";
    for (const auto& item : items) {
      if (!item.set.empty()) {
        text += item.set;
      } else {
        text += literal_text(item.lo);
        if (item.hi != item.lo) text += "-" + literal_text(item.hi);
      }
    }
    emit_atom(text + "]", 0);
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  std::string out_;
  int open_groups_ = 0;
  bool can_repeat_ = false;  // whether a quantifier may follow what was written last
};

re2::RE2::Options regex_options() {
  re2::RE2::Options options;
  options.set_encoding(re2::RE2::Options::EncodingUTF8);
  options.set_max_mem(max_regex_memory);
  options.set_log_errors(false);
  options.set_never_capture(true);  // only match / no match is ever asked
  return options;
}

}  // namespace

std::optional<std::string> translate_ecma_regex(std::string_view pattern, std::string& why_not) {
  if (pattern.size() > max_regex_pattern_length) {
    why_not = "the pattern is longer than " + std::to_string(max_regex_pattern_length) + " bytes";
    return std::nullopt;
  }
  try {
    return translator(pattern).run();
  } catch (const bad_pattern& e) {
    why_not = e.why;
    return std::nullopt;
  }
}

ecma_regex::ecma_regex(std::string pattern, std::unique_ptr<const re2::RE2> compiled)
    : pattern_(std::move(pattern)), compiled_(std::move(compiled)) {}

ecma_regex::~ecma_regex() = default;

std::shared_ptr<const ecma_regex> ecma_regex::compile(std::string_view pattern, std::string& why_not) {
  const auto translated = translate_ecma_regex(pattern, why_not);
  if (!translated) return nullptr;
  auto compiled = std::make_unique<const re2::RE2>(*translated, regex_options());
  if (!compiled->ok()) {
    why_not = compiled->error_code() == re2::RE2::ErrorPatternTooLarge
                  ? "the pattern needs more than RE2's memory limit of " +
                        std::to_string(max_regex_memory / 1024) + " KiB"
                  : "RE2 cannot compile it: " + compiled->error();
    return nullptr;
  }
  return std::make_shared<const ecma_regex>(std::string(pattern), std::move(compiled));
}

bool ecma_regex::search(std::string_view text) const noexcept {
  return re2::RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *compiled_);
}

}  // namespace switchboard::protocol::detail
