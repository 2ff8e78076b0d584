#include <switchboard/net/redaction.hpp>

#include <switchboard/protocol/utf8.hpp>

#include <switchboard/protocol/terminal_text.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <vector>

namespace switchboard::net {

namespace {

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// The position of `needle` (lower case) in `text` from `from` on, ignoring
// case; npos when absent. Linear in text.size() for the short needles used.
std::size_t find_ignoring_case(std::string_view text, std::string_view needle, std::size_t from) {
  if (needle.empty() || text.size() < needle.size()) return std::string_view::npos;
  for (std::size_t i = from; i + needle.size() <= text.size(); ++i) {
    if (lower(text[i]) != needle[0]) continue;
    std::size_t k = 1;
    while (k < needle.size() && lower(text[i + k]) == needle[k]) ++k;
    if (k == needle.size()) return i;
  }
  return std::string_view::npos;
}

// A word starts at `pos`: no letter, digit, '-' or '_' right before it.
bool starts_word(std::string_view text, std::size_t pos) {
  if (pos == 0) return true;
  const char c = text[pos - 1];
  return !is_alnum(c) && c != '-' && c != '_';
}

bool is_token_char(char c) {
  return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=';
}

// A piece of text that the marker replaces: [begin, end).
struct secret_span {
  std::size_t begin;
  std::size_t end;
};

// `text` with `spans` (in order, not overlapping) replaced by the marker,
// built in one pass: linear however many spans there are.
std::string with_spans_replaced(std::string_view text, const std::vector<secret_span>& spans) {
  if (spans.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size() + spans.size() * redacted_marker.size());
  std::size_t copied = 0;
  for (const auto& s : spans) {
    out.append(text.substr(copied, s.begin - copied)).append(redacted_marker);
    copied = s.end;
  }
  out.append(text.substr(copied));
  return out;
}

// Where `needle` occurs in `text` from `from` on (memmem: linear time).
std::size_t find_exact(std::string_view text, std::string_view needle, std::size_t from) {
  if (from > text.size()) return std::string_view::npos;
  const void* hit = ::memmem(text.data() + from, text.size() - from, needle.data(), needle.size());
  return hit ? static_cast<std::size_t>(static_cast<const char*>(hit) - text.data()) : std::string_view::npos;
}

std::string without_occurrences(std::string text, std::string_view secret) {
  if (secret.size() < min_secret_size) return text;
  std::vector<secret_span> spans;
  for (auto pos = find_exact(text, secret, 0); pos != std::string_view::npos;
       pos = find_exact(text, secret, pos + secret.size())) {
    spans.push_back({pos, pos + secret.size()});
  }
  return with_spans_replaced(text, spans);
}

std::string without_known_secrets(std::string text, std::span<const http_header> headers) {
  for (const auto& h : headers) {
    if (!h.secret) continue;
    text = without_occurrences(std::move(text), h.value);
    if (const auto space = h.value.rfind(' '); space != std::string_view::npos) {
      text = without_occurrences(std::move(text), h.value.substr(space + 1));
    }
  }
  return text;
}

// "Bearer <token>", "Basic <token>": the token, when it looks like one (long
// enough and with a digit, so that "Bearer authentication" survives).
std::string without_scheme_tokens(std::string text) {
  for (const std::string_view scheme : {std::string_view("bearer "), std::string_view("basic ")}) {
    std::vector<secret_span> spans;
    for (auto pos = find_ignoring_case(text, scheme, 0); pos != std::string_view::npos;
         pos = find_ignoring_case(text, scheme, pos + 1)) {
      if (!starts_word(text, pos)) continue;
      std::size_t begin = pos + scheme.size();
      while (begin < text.size() && text[begin] == ' ') ++begin;
      std::size_t end = begin;
      while (end < text.size() && is_token_char(text[end])) ++end;
      const std::string_view token(text.data() + begin, end - begin);
      if (token.size() >= 12 && std::ranges::any_of(token, [](char c) { return c >= '0' && c <= '9'; })) {
        spans.push_back({begin, end});
        pos = end;
      }
    }
    text = with_spans_replaced(text, spans);
  }
  return text;
}

// The end of a field's value starting at `begin`: the closing `quote`, or
// for an unquoted value the end of the line (authorization values hold a
// scheme and a token) or the first delimiter.
std::size_t value_end(std::string_view text, std::size_t begin, char quote, bool whole_line) {
  std::size_t end = begin;
  while (end < text.size()) {
    const char c = text[end];
    if (quote != 0 ? (c == quote || c == '\r' || c == '\n')
                   : (c == '\r' || c == '\n' || c == '"' || c == '\'' || c == '&' || c == '<' || c == '>' ||
                      (!whole_line && (c == ' ' || c == '\t' || c == ',' || c == ';')))) {
      break;
    }
    ++end;
  }
  return end;
}

// Where the value of the field whose name ends at `after_name` begins, and
// its quote character (0 when unquoted); npos when no ':' or '=' follows.
std::size_t value_begin(std::string_view text, std::size_t after_name, char& quote) {
  std::size_t i = after_name;
  if (i < text.size() && (text[i] == '"' || text[i] == '\'')) ++i;  // the name's closing quote
  while (i < text.size() && text[i] == ' ') ++i;
  if (i >= text.size() || (text[i] != ':' && text[i] != '=')) return std::string_view::npos;
  ++i;
  while (i < text.size() && text[i] == ' ') ++i;
  quote = 0;
  if (i < text.size() && (text[i] == '"' || text[i] == '\'')) quote = text[i++];
  return i;
}

// The value of the field `name` whose name starts at `pos`, after its
// scheme word for authorization fields ("Bearer [redacted]"); an empty
// span when `pos` starts no such field.
secret_span field_value_at(std::string_view text, std::size_t pos, std::string_view name) {
  const std::size_t after = pos + name.size();
  if (!starts_word(text, pos) || (after < text.size() && (is_alnum(text[after]) || text[after] == '-'))) {
    return {pos, pos};
  }
  char quote = 0;
  std::size_t begin = value_begin(text, after, quote);
  if (begin == std::string_view::npos) return {pos, pos};
  const bool authorization = name.ends_with("authorization");
  const std::size_t end = value_end(text, begin, quote, authorization);
  if (authorization) {
    const auto space = text.substr(begin, end - begin).find(' ');
    if (space != std::string_view::npos) begin += space + 1;
  }
  if (text.substr(begin, end - begin) == redacted_marker) return {pos, pos};
  return {begin, end};
}

// "name: value", "name=value", "\"name\": \"value\"" for credential-bearing names.
std::string without_credential_fields(std::string text) {
  static constexpr std::array<std::string_view, 9> names{
      "proxy-authorization", "authorization", "x-api-key", "api-key",       "api_key",
      "apikey",              "access_token",  "x-goog-api-key", "password"};
  for (const std::string_view name : names) {
    std::vector<secret_span> spans;
    for (auto pos = find_ignoring_case(text, name, 0); pos != std::string_view::npos;
         pos = find_ignoring_case(text, name, pos + 1)) {
      const secret_span value = field_value_at(text, pos, name);
      if (value.end <= value.begin) continue;
      spans.push_back(value);
      pos = value.end;
    }
    text = with_spans_replaced(text, spans);
  }
  return text;
}

// "sk-..." keys (OpenAI, Anthropic and many compatible servers).
std::string without_sk_keys(std::string text) {
  std::vector<secret_span> spans;
  for (auto pos = find_exact(text, "sk-", 0); pos != std::string_view::npos; pos = find_exact(text, "sk-", pos + 1)) {
    if (pos > 0 && is_alnum(text[pos - 1])) continue;
    std::size_t end = pos + 3;
    while (end < text.size() && (is_alnum(text[end]) || text[end] == '-' || text[end] == '_')) ++end;
    if (end - pos - 3 < 16) continue;
    spans.push_back({pos, end});
    pos = end;
  }
  return with_spans_replaced(text, spans);
}

// The span of user information ("user:password@") in the URL authority that
// starts at `authority`; empty when there is none.
secret_span user_info_at(std::string_view text, std::size_t authority) {
  std::size_t end = authority;
  std::size_t at = std::string_view::npos;
  while (end < text.size()) {
    const char c = text[end];
    if (c == '/' || c == '?' || c == '#' || c == ' ' || c == '"' || c == '\'' || c == '<' || c == '>' ||
        c == '\r' || c == '\n' || c == '\t') {
      break;
    }
    if (c == '@') at = end;
    ++end;
  }
  return {authority, at == std::string_view::npos ? authority : at};
}

std::string without_url_user_info(std::string text) {
  std::vector<secret_span> spans;
  for (auto pos = find_exact(text, "://", 0); pos != std::string_view::npos; pos = find_exact(text, "://", pos + 3)) {
    const secret_span info = user_info_at(text, pos + 3);
    if (info.end > info.begin && text.substr(info.begin, info.end - info.begin) != redacted_marker) {
      spans.push_back(info);
      pos = info.end;
    }
  }
  return with_spans_replaced(text, spans);
}

std::size_t longest_secret(std::span<const http_header> headers) {
  std::size_t longest = 0;
  for (const auto& h : headers) {
    if (h.secret) longest = std::max(longest, h.value.size());
  }
  return longest;
}

}  // namespace

std::string redact(std::string_view text, std::span<const http_header> headers) {
  std::string out = without_known_secrets(std::string(text), headers);
  out = without_url_user_info(std::move(out));
  out = without_credential_fields(std::move(out));
  out = without_scheme_tokens(std::move(out));
  return without_sk_keys(std::move(out));
}

std::string excerpt(std::string_view text, std::span<const http_header> headers, std::size_t max_bytes) {
  // Redact a little past the cut, so that a secret straddling it is
  // recognised whole rather than printed in part.
  const std::size_t window = max_bytes + longest_secret(headers) + 256;
  const std::string clean = redact(text.substr(0, window), headers);
  constexpr std::string_view ellipsis = "...";
  const bool cut = clean.size() > max_bytes || text.size() > window;
  const std::size_t room = cut ? max_bytes - std::min(max_bytes, ellipsis.size()) : clean.size();
  std::size_t end = 0;  // the last character boundary within `room`
  while (end < clean.size()) {
    const std::size_t size = std::max<std::size_t>(1, protocol::utf8_sequence_size(clean, end));
    if (end + size > room) break;
    end += size;
  }
  std::string out = protocol::escape_for_terminal(std::string_view(clean).substr(0, end));
  if (cut) out += ellipsis;
  return out;
}

bool contains_secret(std::string_view text, std::span<const http_header> headers, std::size_t min_size) {
  for (const auto& h : headers) {
    if (!h.secret) continue;
    std::string_view key = h.value;
    if (const auto space = key.rfind(' '); space != std::string_view::npos) key = key.substr(space + 1);
    if (key.size() >= std::max(min_size, min_secret_size) && find_exact(text, key, 0) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

std::string without_user_info(std::string_view url) {
  std::string out(url);
  if (const auto scheme_end = out.find("://"); scheme_end != std::string::npos) {
    const secret_span info = user_info_at(out, scheme_end + 3);
    if (info.end > info.begin) out.erase(info.begin, info.end - info.begin + 1);  // with its '@'
  }
  return out;
}

}  // namespace switchboard::net
