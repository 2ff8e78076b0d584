// Stage 2 of the structured-output parser: find the JSON value inside an
// answer that is not JSON as a whole (fenced blocks, JSON in prose).
#include "stages.hpp"

#include <switchboard/protocol/limits.hpp>

#include <boost/json/stream_parser.hpp>

#include <algorithm>
#include <cctype>

namespace switchboard::protocol::detail {

namespace json = boost::json;

std::optional<json::value> parse_strict(std::string_view text, boost::system::error_code& ec) {
  const json::parse_options options = untrusted_parse_options();
  // The parser's working stack lives on ours: no heap allocation for it on a
  // typical answer (the value itself still uses the default resource).
  unsigned char temp[4096];
  json::stream_parser parser({}, options, temp, sizeof temp);
  parser.write(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) return std::nullopt;
  return parser.release();
}

std::string_view trim_output(std::string_view raw) noexcept {
  if (raw.starts_with("\xEF\xBB\xBF")) raw.remove_prefix(3);
  constexpr std::string_view space = " \t\r\n\f\v";
  const auto first = raw.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  const auto last = raw.find_last_not_of(space);
  return raw.substr(first, last - first + 1);
}

namespace {

// Only a bounded number of start positions is tried in prose, so a
// pathological answer ("[[[[...") costs linear-ish time, not quadratic.
constexpr std::size_t max_prose_attempts = 256;

bool is_json_fence_language(std::string_view info) {
  std::string lang;
  for (const char c : info) {
    if (std::isspace(static_cast<unsigned char>(c))) break;
    lang += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return lang.empty() || lang.starts_with("json");
}

// Fenced blocks in order. An unclosed fence (a truncated answer) runs to the
// end of the text.
std::vector<candidate> fenced_blocks(std::string_view text) {
  std::vector<candidate> blocks;
  std::size_t pos = 0;
  while ((pos = text.find("```", pos)) != std::string_view::npos) {
    const std::size_t info_begin = pos + 3;
    const std::size_t newline = text.find('\n', info_begin);
    const std::string_view info =
        text.substr(info_begin, newline == std::string_view::npos ? text.size() : newline - info_begin);
    // ```{"a":1}``` on one line: no language tag, the content starts at once.
    const bool inline_block = info.find_first_of("{[") != std::string_view::npos;
    std::size_t content_begin = inline_block ? info_begin
                                : newline == std::string_view::npos ? text.size()
                                                                    : newline + 1;
    const std::size_t close = text.find("```", content_begin);
    const std::size_t content_end = close == std::string_view::npos ? text.size() : close;
    if (inline_block || is_json_fence_language(info)) {
      blocks.push_back({text.substr(content_begin, content_end - content_begin), content_begin,
                        "fenced block " + std::to_string(blocks.size() + 1)});
    }
    if (close == std::string_view::npos) break;
    pos = close + 3;
  }
  return blocks;
}

enum class match { closed, unclosed, mismatched };

// String-aware bracket matching from text[start] ('{' or '['): where the
// value closes, or that it never does (truncated) or cannot (mismatch).
match find_close(std::string_view text, std::size_t start, std::size_t& end) {
  std::string expected;  // stack of closers
  bool in_string = false;
  for (std::size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '{': expected.push_back('}'); break;
      case '[': expected.push_back(']'); break;
      case '}':
      case ']':
        if (expected.empty() || expected.back() != c) return match::mismatched;
        expected.pop_back();
        if (expected.empty()) {
          end = i + 1;
          return match::closed;
        }
        break;
      default: break;
    }
  }
  return match::unclosed;
}

void add_unique(std::vector<candidate>& list, candidate c) {
  const bool known = std::ranges::any_of(list, [&](const candidate& k) {
    return k.offset == c.offset && k.text.size() == c.text.size();
  });
  if (!known) list.push_back(std::move(c));
}

}  // namespace

extraction extract_json(std::string_view text) {
  extraction result;
  for (auto& block : fenced_blocks(text)) {
    boost::system::error_code ec;
    if (auto value = parse_strict(block.text, ec)) {
      result.value = std::move(value);
      result.origin = block.origin;
      return result;
    }
    if (!trim_output(block.text).empty()) add_unique(result.unparsed, block);
  }

  // JSON in prose: the first object that parses wins; an array only when no
  // object follows it (so a "[1]" footnote does not beat the real answer).
  std::optional<json::value> first_array;
  std::string first_array_origin;
  std::size_t attempts = 0;
  std::size_t pos = text.find_first_of("{[");
  while (pos != std::string_view::npos && attempts++ < max_prose_attempts) {
    std::size_t end = 0;
    const match m = find_close(text, pos, end);
    if (m == match::unclosed) {
      // Everything after this point is inside the unclosed value: hand it to
      // repair rather than pick an inner fragment.
      add_unique(result.unparsed, {text.substr(pos), pos,
                                   "unclosed JSON in prose at offset " + std::to_string(pos)});
      break;
    }
    if (m == match::closed) {
      const std::string_view span = text.substr(pos, end - pos);
      const std::string origin = "JSON in prose at offset " + std::to_string(pos);
      boost::system::error_code ec;
      if (auto value = parse_strict(span, ec)) {
        if (value->is_object()) {
          result.value = std::move(value);
          result.origin = origin;
          return result;
        }
        if (!first_array) {
          first_array = std::move(value);
          first_array_origin = origin;
        }
        pos = text.find_first_of("{[", end);
        continue;
      }
      // A bracketed span that does not parse (a trailing comma, say) is a
      // repair candidate as a whole; its inner fragments are not answers.
      add_unique(result.unparsed, {span, pos, origin});
      pos = text.find_first_of("{[", end);
      continue;
    }
    pos = text.find_first_of("{[", pos + 1);
  }
  if (first_array) {
    result.value = std::move(first_array);
    result.origin = first_array_origin;
  }
  return result;
}

}  // namespace switchboard::protocol::detail
