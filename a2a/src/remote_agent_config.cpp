// Remote agent configurations from a workflow file's "a2a_agents" entry.
#include <switchboard/a2a/remote_agent_config.hpp>

#include <boost/url/parse.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace switchboard::a2a {

namespace json = boost::json;

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& what) {
  throw std::invalid_argument(field + ": " + what);
}

std::string url_of(const json::value& v, const std::string& field) {
  if (!v.is_string()) fail(field, "expected a string");
  std::string url(v.get_string());
  const auto parsed = boost::urls::parse_uri(url);
  if (!parsed) fail(field, "'" + url + "' is not a URL (expected http://host[:port]/path or https://...)");
  if (parsed->scheme() != "http" && parsed->scheme() != "https") fail(field, "must use http or https");
  if (parsed->host_address().empty()) fail(field, "has no host");
  if (parsed->has_userinfo()) fail(field, "must not carry credentials (user:password@); send them in \"headers\"");
  return url;
}

std::map<std::string, std::string> headers_of(const json::value& v) {
  if (!v.is_object()) fail("headers", "expected an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& m : v.get_object()) {
    const std::string key(m.key());
    // RFC 9110: a name is a token; a value has no control characters but tab.
    const auto token = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    };
    if (key.empty() || !std::ranges::all_of(key, token))
      fail("headers/" + key, "a header name must be a token (letters, digits, !#$%&'*+-.^_`|~)");
    std::string lowered = key;
    for (auto& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (std::string_view owned : {"host", "content-length", "transfer-encoding", "connection", "content-type",
                                   "a2a-version", "traceparent", "tracestate"}) {
      if (lowered == owned) fail("headers/" + key, "is written by the client itself and cannot be set");
    }
    if (!m.value().is_string()) fail("headers/" + key, "expected a string");
    const std::string value(m.value().get_string());
    if (std::ranges::any_of(value, [](char c) {
          const auto u = static_cast<unsigned char>(c);
          return (u < 0x20 && c != '\t') || u == 0x7f;
        }))
      fail("headers/" + key, "a value must not hold control characters");
    out.emplace(key, value);
  }
  return out;
}

std::chrono::milliseconds milliseconds_of(const json::value& v, const std::string& field, std::int64_t most) {
  if (!v.is_int64() || v.get_int64() <= 0 || v.get_int64() > most)
    fail(field, "expected a positive integer of milliseconds (at most " + std::to_string(most) + ")");
  return std::chrono::milliseconds(v.get_int64());
}

bool is_schema_reference(std::string_view s) {
  const auto at = s.rfind('@');
  return at != std::string_view::npos && at > 0 && at + 1 < s.size() &&
         std::ranges::all_of(s.substr(at + 1), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

bool is_valid_agent_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > max_agent_name_length) return false;
  return std::ranges::all_of(name, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

remote_agent_config from_json(std::string name, const json::value& entry) {
  if (!is_valid_agent_name(name)) fail(name, "an agent name must be 1 to 64 of [A-Za-z0-9_.-]");
  if (!entry.is_object()) fail(name, "expected an object with \"card\" or \"url\", and \"output_schema\"");
  remote_agent_config c;
  c.name = std::move(name);
  for (const auto& m : entry.get_object()) {
    const std::string key(m.key());
    const auto& v = m.value();
    if (key == "card") {
      c.card_url = url_of(v, key);
    } else if (key == "url") {
      c.url = url_of(v, key);
    } else if (key == "output_schema") {
      if (!v.is_string() || !is_schema_reference(v.get_string()))
        fail(key, "expected a schema as name@version (\"booking.output@1\")");
      c.output_schema = std::string(v.get_string());
    } else if (key == "description") {
      if (!v.is_string()) fail(key, "expected a string");
      c.description = std::string(v.get_string());
    } else if (key == "headers") {
      c.headers = headers_of(v);
    } else if (key == "timeout_ms") {
      c.request_timeout = milliseconds_of(v, key, 3'600'000);
    } else if (key == "poll_ms") {
      c.poll_interval = milliseconds_of(v, key, 600'000);
    } else {
      fail(key, "unknown key (allowed: card, url, output_schema, description, headers, timeout_ms, poll_ms)");
    }
  }
  if (c.card_url.empty() == c.url.empty())
    fail(c.name, "needs exactly one of \"card\" (the agent card's URL) or \"url\" (its JSON-RPC endpoint)");
  if (c.output_schema.empty()) fail("output_schema", "is required: the schema the remote agent's data must satisfy");
  return c;
}

json::object to_json(const remote_agent_config& c) {
  json::object out;
  if (!c.card_url.empty()) out["card"] = c.card_url;
  if (!c.url.empty()) out["url"] = c.url;
  out["output_schema"] = c.output_schema;
  if (!c.description.empty()) out["description"] = c.description;
  if (!c.headers.empty()) {
    json::object headers;
    for (const auto& [k, v] : c.headers) headers[k] = v;
    out["headers"] = std::move(headers);
  }
  const remote_agent_config defaults;
  if (c.request_timeout != defaults.request_timeout) out["timeout_ms"] = c.request_timeout.count();
  if (c.poll_interval != defaults.poll_interval) out["poll_ms"] = c.poll_interval.count();
  return out;
}

}  // namespace switchboard::a2a
