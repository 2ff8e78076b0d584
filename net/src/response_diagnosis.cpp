#include "response_diagnosis.hpp"

#include <switchboard/net/redaction.hpp>
#include "retry_timing.hpp"
#include <switchboard/protocol/utf8.hpp>

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace switchboard::net {

namespace json = boost::json;

namespace {

// A 2xx body larger than this is not searched for an error object: errors
// are short, and a long body is an answer or something else entirely.
constexpr std::size_t max_error_body_size = 64 * 1024;

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string lowered(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(), lower);
  return out;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) { return lower(x) == lower(y); });
}

// "text/html; charset=utf-8" -> "text/html" (a view: checked on every answer).
std::string_view media_type(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && is_space(type.back())) type.remove_suffix(1);
  while (!type.empty() && is_space(type.front())) type.remove_prefix(1);
  return type;
}

std::string_view trimmed_start(std::string_view body) {
  while (!body.empty() && is_space(body.front())) body.remove_prefix(1);
  return body;
}

bool is_compressed(std::string_view content_encoding) {
  const std::string_view encoding = media_type(content_encoding);
  return !encoding.empty() && !equals_ignoring_case(encoding, "identity");
}

bool is_html(std::string_view body, std::string_view content_type) {
  const std::string_view type = media_type(content_type);
  return equals_ignoring_case(type, "text/html") || equals_ignoring_case(type, "application/xhtml+xml") ||
         trimmed_start(body).starts_with('<');
}

bool is_event_stream(std::string_view body, std::string_view content_type) {
  const std::string_view start = trimmed_start(body);
  return equals_ignoring_case(media_type(content_type), "text/event-stream") || start.starts_with("data:") ||
         start.starts_with("event:");
}

std::string content_type_phrase(const response_head& head, std::span<const http_header> secrets) {
  return head.content_type.empty() ? "no Content-Type" : "Content-Type " + excerpt(head.content_type, secrets, 80);
}

// The text of an HTML page's <title>, whitespace collapsed; "" when none.
std::string html_title(std::string_view body) {
  const std::string head = lowered(body.substr(0, max_error_body_size));
  const auto open = head.find("<title");
  if (open == std::string::npos) return {};
  const auto text_begin = head.find('>', open);
  const auto text_end = head.find("</title", open);
  if (text_begin == std::string::npos || text_end == std::string::npos || text_end < text_begin) return {};
  std::string title;
  for (char c : body.substr(text_begin + 1, text_end - text_begin - 1)) {
    if (!is_space(c)) {
      title += c;
    } else if (!title.empty() && title.back() != ' ') {
      title += ' ';
    }
  }
  while (!title.empty() && title.back() == ' ') title.pop_back();
  return title;
}

std::string describe_html(std::string_view body, std::span<const http_header> secrets) {
  const std::string title = html_title(body);
  return title.empty() ? "an HTML page" : "an HTML page titled '" + excerpt(title, secrets, 100) + "'";
}

// error.message, an "error" string, "message" or "detail"; "" when none.
std::string message_in(const json::object& obj) {
  if (const auto* error = obj.if_contains("error")) {
    if (error->is_string()) return std::string(error->as_string());
    if (error->is_object()) {
      if (const auto* m = error->as_object().if_contains("message"); m && m->is_string()) {
        return std::string(m->as_string());
      }
    }
  }
  for (const char* key : {"message", "detail"}) {
    if (const auto* m = obj.if_contains(key); m && m->is_string()) return std::string(m->as_string());
  }
  return {};
}

std::optional<json::object> parse_object(std::string_view body) {
  json::parse_options options;
  options.allow_invalid_utf8 = true;
  boost::system::error_code ec;
  auto value = json::parse(body, ec, {}, options);
  if (ec || !value.is_object()) return std::nullopt;
  return std::move(value.as_object());
}

// An HTTP status given as a number or a numeric string; 0 when not one.
int status_in(const json::value* v) {
  if (!v) return 0;
  std::int64_t n = 0;
  if (v->is_int64()) {
    n = v->as_int64();
  } else if (v->is_string()) {
    const auto& s = v->as_string();
    if (s.size() != 3 || !std::ranges::all_of(s, [](char c) { return c >= '0' && c <= '9'; })) return 0;
    n = std::stoi(std::string(s));
  }
  return n >= 400 && n <= 599 ? static_cast<int>(n) : 0;
}

// Whether an error's type or code names a condition a later attempt may
// get past (OpenAI's, Anthropic's and common proxies' names).
bool names_transient_condition(const json::object& error) {
  for (const char* key : {"type", "code", "status"}) {
    const auto* v = error.if_contains(key);
    if (!v || !v->is_string()) continue;
    const std::string name = lowered(v->as_string());
    for (const char* word : {"rate_limit", "overloaded", "server_error", "api_error", "timeout", "unavailable"}) {
      if (name.find(word) != std::string::npos) return true;
    }
  }
  return false;
}

// Whether `body` holds `"error"` anywhere. Every answer is searched, and
// string_view::find stops at each of a JSON text's many quotes; memmem skips
// ahead (≈ 2.5 times fewer instructions on a 2 KB answer).
bool mentions_error(std::string_view body) {
  static constexpr std::string_view needle = "\"error\"";
  return ::memmem(body.data(), body.size(), needle.data(), needle.size()) != nullptr;
}

// {"error": {...}} (or {"error": "..."}) in place of an answer.
std::optional<answer_problem> error_object_problem(std::string_view body, std::span<const http_header> secrets) {
  if (body.size() > max_error_body_size || !mentions_error(body)) return std::nullopt;
  const auto root = parse_object(body);
  if (!root || root->contains("choices") || root->contains("content")) return std::nullopt;
  const auto* error = root->if_contains("error");
  if (!error || !(error->is_object() || error->is_string())) return std::nullopt;
  answer_problem p;
  p.code = net_errc::http_status;
  p.server_message = redact(message_in(*root), secrets);
  int status = status_in(root->if_contains("status"));
  if (error->is_object()) {
    const auto& e = error->as_object();
    status = std::max({status, status_in(e.if_contains("code")), status_in(e.if_contains("status"))});
    p.retryable = names_transient_condition(e);
  }
  p.http_status = status != 0 ? status : 200;
  p.retryable = p.retryable || (status != 0 && is_retryable_status(status));
  p.what = "answered HTTP 200 with an error instead of an answer" +
           (status != 0 ? " (code " + std::to_string(status) + ")" : std::string()) +
           (p.server_message.empty() ? std::string() : ": " + excerpt(p.server_message, secrets, 1000));
  return p;
}

answer_problem invalid(std::string what) {
  answer_problem p;
  p.what = std::move(what);
  return p;
}

// Whether a path segment names an API version ("v1", "v1beta").
bool has_version_segment(std::string_view target) {
  for (auto pos = target.find("/v"); pos != std::string_view::npos; pos = target.find("/v", pos + 1)) {
    if (pos + 2 < target.size() && target[pos + 2] >= '0' && target[pos + 2] <= '9') return true;
  }
  return false;
}

// What nginx (and Cloudflare) and Go's net/http answer to plain HTTP on a
// TLS port.
bool rejects_plain_http(std::string_view body) {
  const std::string text = lowered(body.substr(0, max_error_body_size));
  return text.find("plain http request was sent to https port") != std::string::npos ||
         text.find("http request to an https server") != std::string::npos;
}

// The Location of a redirect as an absolute URL where it is relative to the
// server ("/v1/...", "//host/...").
std::string absolute_location(std::string_view location, const endpoint_url& url) {
  const std::string scheme = url.tls ? "https:" : "http:";
  if (location.starts_with("//")) return scheme + std::string(location);
  if (location.starts_with('/')) return scheme + "//" + url.host_header + std::string(location);
  return std::string(location);
}

answer_problem redirect_problem(const response_head& head, const endpoint_url& url, std::string_view target,
                                std::span<const http_header> secrets) {
  answer_problem p;
  p.code = net_errc::http_status;
  p.http_status = head.status;
  const std::string status = "(HTTP " + std::to_string(head.status) + ")";
  if (head.location.empty()) {
    p.what = "answered with a redirect " + status + " without a Location; redirects are not followed: check the "
             "base URL";
    return p;
  }
  const std::string location = without_user_info(absolute_location(head.location, url));
  // The base URL that would reach the new address: the Location without the
  // provider's path (e.g. "/chat/completions") and query.
  const std::string_view provider_path = target.substr(std::min(url.base_path.size(), target.size()));
  const std::string_view path_and_more = std::string_view(location).substr(0, location.find_first_of("?#"));
  std::string suggestion = "the address it names";
  if (!provider_path.empty() && path_and_more.ends_with(provider_path)) {
    suggestion = excerpt(path_and_more.substr(0, path_and_more.size() - provider_path.size()), secrets, 300);
  }
  p.what = "was redirected to " + excerpt(location, secrets, 300) + " " + status +
           "; redirects are not followed, as the API key would go along to the new address: set the base URL to " +
           suggestion;
  return p;
}

}  // namespace

void normalize_body(std::string& body) {
  if (body.starts_with("\xEF\xBB\xBF")) body.erase(0, 3);
  protocol::replace_invalid_utf8(body);
}

std::optional<answer_problem> check_success_answer(const response_head& head, std::string_view body,
                                                   std::span<const http_header> secrets) {
  const std::string status = "HTTP " + std::to_string(head.status);  // short: no allocation
  if (is_compressed(head.content_encoding)) {
    const std::string encoding = excerpt(head.content_encoding, secrets, 40);
    return invalid("answered with a " + encoding + "-compressed body (Content-Encoding: " + encoding +
                   ") though none was requested (the request says Accept-Encoding: identity); a proxy in between "
                   "is probably compressing responses: turn that off for this route");
  }
  if (is_event_stream(body, head.content_type)) {
    return invalid("answered with a stream (SSE, " + content_type_phrase(head, secrets) +
                   ") though the request did not ask for one; the server or a proxy in between streams "
                   "regardless: turn streaming off there");
  }
  const std::string_view start = trimmed_start(body);
  if (start.empty()) return invalid("answered " + status + " with an empty body, not the provider's JSON");
  if (is_html(body, head.content_type)) {
    return invalid("answered " + status + " with " + describe_html(body, secrets) + " (" +
                   content_type_phrase(head, secrets) +
                   "), not the provider's JSON: a proxy, login or error page is answering in the provider's "
                   "place (body starts '" + excerpt(start, secrets, 120) + "')");
  }
  if (!start.starts_with('{') && !start.starts_with('[')) {
    return invalid("answered " + status + " with a body that is not JSON (" + content_type_phrase(head, secrets) +
                   "), not the provider's JSON: body starts '" + excerpt(start, secrets, 120) + "'");
  }
  if (contains_secret(body, secrets, 8)) {
    return invalid("answered " + status + " with a body holding the request's API key: an echo of the request "
                   "(a proxy or test page), not the provider's answer (body starts '" +
                   excerpt(start, secrets, 120) + "')");
  }
  return error_object_problem(body, secrets);
}

answer_problem check_error_answer(const response_head& head, std::string_view body, const endpoint_url& url,
                                  std::string_view target, std::span<const http_header> secrets) {
  if (head.status >= 300 && head.status < 400) return redirect_problem(head, url, target, secrets);
  answer_problem p;
  p.code = net_errc::http_status;
  p.http_status = head.status;
  p.retryable = is_retryable_status(head.status);
  p.server_message = provider_error_message(body, head.content_type, head.content_encoding, secrets);
  p.what = "returned HTTP " + std::to_string(head.status) +
           (p.server_message.empty() ? std::string() : ": " + excerpt(p.server_message, secrets, 1000));
  if (head.status == 404 && !has_version_segment(target)) {
    p.what += "; the base URL may be missing /v1 (try " + url.display + "/v1)";
  } else if (head.status == 404 && target.find("/v1/v1/") != std::string_view::npos) {
    p.what += "; the base URL may end in /v1 once too often (the provider's path already starts with /v1)";
  }
  if (!url.tls && head.status == 400 && rejects_plain_http(body)) {
    p.what += "; the server expects HTTPS on this port: use https:// in the base URL";
  }
  return p;
}

std::string provider_error_message(std::string_view body, std::string_view content_type,
                                   std::string_view content_encoding, std::span<const http_header> secrets) {
  if (is_compressed(content_encoding)) {
    return "(a " + excerpt(content_encoding, secrets, 40) + "-compressed body, not shown)";
  }
  if (const auto root = parse_object(body)) return redact(message_in(*root), secrets);
  if (is_html(body, content_type) && !html_title(body).empty()) return describe_html(body, secrets);
  return excerpt(trimmed_start(body), secrets, 200);
}

bool looks_like_tls_record(std::string_view bytes) {
  if (bytes.size() < 3) return false;
  const auto type = static_cast<unsigned char>(bytes[0]);
  return (type == 0x15 || type == 0x16) && bytes[1] == 0x03 && static_cast<unsigned char>(bytes[2]) <= 0x04;
}

std::optional<std::string> plain_text_reply(std::string_view rest) {
  const std::string_view sample = rest.substr(0, 64);
  const bool text = !sample.empty() && std::ranges::all_of(sample, [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= 0x20 && u < 0x7F) || c == '\r' || c == '\n' || c == '\t';
  });
  if (!text) return std::nullopt;
  const std::string_view line = rest.substr(0, rest.find_first_of("\r\n"));
  // OpenSSL read the first five bytes as a record header: "HTTP/" of a status line.
  return (line.starts_with("1.0 ") || line.starts_with("1.1 ") ? "HTTP/" : "") + std::string(line);
}

}  // namespace switchboard::net
