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

// A bracket whose value closes wrongly is retried one character further on;
// only so many such retries, so a pathological answer ("[}[}[}...") costs
// linear-ish time, not quadratic. A value that closes is skipped as a whole.
constexpr std::size_t max_mismatched_starts = 256;

struct reasoning_tag {
  std::string_view open, close;
};
constexpr reasoning_tag reasoning_tags[] = {
    {"<think>", "</think>"}, {"<thinking>", "</thinking>"}, {"<reasoning>", "</reasoning>"}};

// The first opening or closing reasoning tag at or after `from`.
struct tag_hit {
  std::size_t pos = std::string_view::npos;
  const reasoning_tag* tag = nullptr;
  bool closing = false;
};
tag_hit next_tag(std::string_view text, std::size_t from) {
  tag_hit best;
  for (const auto& tag : reasoning_tags) {
    for (const bool closing : {false, true}) {
      const std::size_t p = text.find(closing ? tag.close : tag.open, from);
      if (p < best.pos) best = {p, &tag, closing};
    }
  }
  return best;
}

bool is_json_fence_language(std::string_view info) {
  std::string lang;
  for (const char c : info) {
    if (std::isspace(static_cast<unsigned char>(c))) break;
    lang += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return lang.empty() || lang.starts_with("json");
}

// Where the JSON string opened by the quote at text[open] closes (its
// closing quote), or npos when it never does.
std::size_t string_end(std::string_view text, std::size_t open) {
  for (std::size_t i = open + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i;
    }
  }
  return std::string_view::npos;
}

// Where the fence whose JSON content starts at `from` closes: the first
// ``` outside a JSON string, so that a value explaining Markdown
// ("Use ```code``` blocks") does not end the block early. When the quotes
// never balance (not JSON after all), the first ``` at all.
std::size_t json_fence_close(std::string_view text, std::size_t from) {
  for (std::size_t i = from; i < text.size(); ++i) {
    if (text[i] == '"') {
      i = string_end(text, i);
      if (i == std::string_view::npos) break;
    } else if (text.compare(i, 3, "```") == 0) {
      return i;
    }
  }
  return text.find("```", from);
}

struct fence {
  candidate content;
  std::size_t end = 0;  // just past the closing ``` (or the text's end)
};

// Fenced blocks in order. An unclosed fence (a truncated answer) runs to the
// end of the text.
std::vector<fence> fenced_blocks(std::string_view text) {
  std::vector<fence> blocks;
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
    const bool json_block = inline_block || is_json_fence_language(info);
    const std::size_t close =
        json_block ? json_fence_close(text, content_begin) : text.find("```", content_begin);
    const std::size_t content_end = close == std::string_view::npos ? text.size() : close;
    const std::size_t block_end = close == std::string_view::npos ? text.size() : close + 3;
    if (json_block) {
      blocks.push_back({{text.substr(content_begin, content_end - content_begin), content_begin,
                         "fenced block " + std::to_string(blocks.size() + 1)},
                        block_end});
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
  for (std::size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
      case '"':
        i = string_end(text, i);
        if (i == std::string_view::npos) return match::unclosed;
        break;
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

// Keeps the last max_candidates entries: the answer tends to come last.
template <class T>
void keep_bounded(std::vector<T>& list, T item) {
  if (list.size() == max_candidates) list.erase(list.begin());
  list.push_back(std::move(item));
}

void consider(extraction& out, candidate c) {
  boost::system::error_code ec;
  if (auto value = parse_strict(c.text, ec)) {
    keep_bounded(out.parsed, parsed_candidate{std::move(*value), c.offset, std::move(c.origin)});
  } else if (!trim_output(c.text).empty()) {
    keep_bounded(out.unparsed, std::move(c));
  }
}

// The fence that holds `pos`, if any.
const fence* fence_at(const std::vector<fence>& fences, std::size_t pos) {
  for (const auto& f : fences) {
    if (pos >= f.content.offset && pos < f.end) return &f;
  }
  return nullptr;
}

// JSON objects and arrays in prose, outside the fenced blocks.
void scan_prose(std::string_view text, const std::vector<fence>& fences, extraction& out) {
  std::size_t mismatched = 0;
  std::size_t pos = text.find_first_of("{[");
  while (pos != std::string_view::npos && mismatched < max_mismatched_starts) {
    if (const fence* f = fence_at(fences, pos)) {
      pos = text.find_first_of("{[", f->end);
      continue;
    }
    std::size_t end = 0;
    const match m = find_close(text, pos, end);
    if (m == match::unclosed) {
      // Everything after this point is inside the unclosed value: hand it to
      // repair rather than pick an inner fragment.
      keep_bounded(out.unparsed, candidate{text.substr(pos), pos,
                                           "unclosed JSON in prose at offset " + std::to_string(pos)});
      return;
    }
    if (m == match::closed) {
      // A bracketed span that does not parse (a trailing comma, say) is a
      // repair candidate as a whole; its inner fragments are not answers.
      consider(out, {text.substr(pos, end - pos), pos, "JSON in prose at offset " + std::to_string(pos)});
      pos = text.find_first_of("{[", end);
      continue;
    }
    ++mismatched;
    pos = text.find_first_of("{[", pos + 1);
  }
}

template <class T>
void sort_by_offset(std::vector<T>& list) {
  std::ranges::stable_sort(list, {}, &T::offset);
}

}  // namespace

void set_aside_reasoning(std::string_view text, answer_text& out) {
  out = {};
  out.answer = text;
  tag_hit hit = next_tag(text, 0);
  if (hit.tag == nullptr) return;
  out.had_reasoning = true;
  std::size_t kept_from = 0;
  if (hit.closing) {
    // The block was opened before the output began.
    kept_from = hit.pos + hit.tag->close.size();
    hit = next_tag(text, kept_from);
  }
  while (hit.tag != nullptr) {
    if (!hit.closing) out.storage.append(text.substr(kept_from, hit.pos - kept_from));
    const std::size_t close = text.find(hit.tag->close, hit.pos);
    if (close == std::string_view::npos) {  // unclosed: reasoning to the end
      kept_from = text.size();
      break;
    }
    kept_from = close + hit.tag->close.size();
    hit = next_tag(text, kept_from);
  }
  out.storage.append(text.substr(kept_from));
  out.answer = out.storage;
}

extraction extract_json(std::string_view text) {
  extraction result;
  const std::vector<fence> fences = fenced_blocks(text);
  for (const auto& f : fences) consider(result, f.content);
  scan_prose(text, fences, result);
  sort_by_offset(result.parsed);
  sort_by_offset(result.unparsed);
  return result;
}

}  // namespace switchboard::protocol::detail
