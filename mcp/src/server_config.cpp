// Server configurations from a workflow file's entry or a command-line SPEC.
#include <switchboard/mcp/server_config.hpp>

#include <boost/json/array.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

namespace switchboard::mcp {

namespace json = boost::json;

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& what) {
  throw std::invalid_argument(field + ": " + what);
}

std::map<std::string, std::string> string_map(const json::value& v, const std::string& field) {
  if (!v.is_object()) fail(field, "expected an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& m : v.get_object()) {
    const std::string key(m.key());
    if (key.empty() || key.find_first_of("\r\n") != std::string::npos)
      fail(field + "/" + key, "a name must be non-empty and on one line");
    if (!m.value().is_string()) fail(field + "/" + key, "expected a string");
    const std::string value(m.value().get_string());
    if (value.find_first_of("\r\n") != std::string::npos) fail(field + "/" + key, "a value must be on one line");
    out.emplace(key, value);
  }
  return out;
}

void check_url(const std::string& url, const std::string& field) {
  const auto parsed = boost::urls::parse_uri(url);
  if (!parsed) fail(field, "'" + url + "' is not a URL (expected http://host[:port]/path or https://...)");
  if (parsed->scheme() != "http" && parsed->scheme() != "https") fail(field, "must use http or https");
  if (parsed->host_address().empty()) fail(field, "has no host");
  if (parsed->has_userinfo()) fail(field, "must not carry credentials (user:password@); send them in \"headers\"");
}

void check_name(const std::string& name) {
  if (!is_valid_server_name(name))
    throw std::invalid_argument("server name '" + name + "' must be 1 to 64 of [A-Za-z0-9_.-]");
}

}  // namespace

bool is_valid_server_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > max_server_name_length) return false;
  return std::ranges::all_of(name, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

server_config from_json(std::string name, const json::value& entry) {
  check_name(name);
  if (!entry.is_object()) fail(name, "expected an object with \"command\" or \"url\"");
  const auto& o = entry.get_object();
  server_config c;
  c.name = std::move(name);
  for (const auto& m : o) {
    const std::string key(m.key());
    const auto& v = m.value();
    if (key == "command") {
      if (!v.is_array() || v.get_array().empty()) fail(key, "expected a non-empty array of strings");
      for (std::size_t i = 0; i < v.get_array().size(); ++i) {
        const auto& item = v.get_array()[i];
        if (!item.is_string()) fail(key + "/" + std::to_string(i), "expected a string");
        if (item.get_string().find('\0') != json::string::npos) fail(key + "/" + std::to_string(i), "has a NUL");
        c.command.emplace_back(item.get_string());
      }
      if (c.command.front().empty()) fail(key + "/0", "the program must not be empty");
    } else if (key == "env") {
      c.env = string_map(v, key);
      for (const auto& [k, _] : c.env)
        if (k.find('=') != std::string::npos) fail(key + "/" + k, "a variable name must not contain '='");
    } else if (key == "url") {
      if (!v.is_string()) fail(key, "expected a string");
      c.url = std::string(v.get_string());
      check_url(c.url, key);
    } else if (key == "headers") {
      c.headers = string_map(v, key);
    } else if (key == "timeout_ms") {
      if (!v.is_int64() || v.get_int64() <= 0 || v.get_int64() > 3'600'000)
        fail(key, "expected a positive integer of milliseconds (at most 3600000)");
      c.request_timeout = std::chrono::milliseconds(v.get_int64());
    } else if (key == "needs_approval") {
      if (!v.is_bool()) fail(key, "expected true or false");
      c.needs_approval = v.get_bool();
    } else {
      fail(key, "unknown key (allowed: command, env, url, headers, timeout_ms, needs_approval)");
    }
  }
  if (c.command.empty() == c.url.empty()) fail(c.name, "needs exactly one of \"command\" (stdio) or \"url\" (HTTP)");
  if (!c.env.empty() && !c.url.empty()) fail("env", "is for a stdio server (with \"command\")");
  if (!c.headers.empty() && !c.command.empty()) fail("headers", "is for an HTTP server (with \"url\")");
  return c;
}

json::object to_json(const server_config& c) {
  json::object out;
  if (c.is_stdio()) {
    json::array command;
    for (const auto& a : c.command) command.emplace_back(a);
    out["command"] = std::move(command);
    if (!c.env.empty()) {
      json::object env;
      for (const auto& [k, v] : c.env) env[k] = v;
      out["env"] = std::move(env);
    }
  } else {
    out["url"] = c.url;
    if (!c.headers.empty()) {
      json::object headers;
      for (const auto& [k, v] : c.headers) headers[k] = v;
      out["headers"] = std::move(headers);
    }
  }
  if (c.request_timeout != server_config{}.request_timeout) out["timeout_ms"] = c.request_timeout.count();
  if (c.needs_approval) out["needs_approval"] = true;
  return out;
}

server_config parse_spec(std::string name, std::string_view spec) {
  check_name(name);
  server_config c;
  c.name = std::move(name);
  if (spec.starts_with("stdio:")) {
    std::istringstream words{std::string(spec.substr(6))};
    for (std::string w; words >> w;) c.command.push_back(w);
    if (c.command.empty()) throw std::invalid_argument("MCP SPEC 'stdio:' names no command (stdio:COMMAND ARG...)");
  } else if (spec.starts_with("http://") || spec.starts_with("https://")) {
    c.url = std::string(spec);
    check_url(c.url, "MCP SPEC");
  } else {
    throw std::invalid_argument("MCP SPEC '" + std::string(spec) +
                                "' is neither stdio:COMMAND ARG... nor an http(s):// URL");
  }
  return c;
}

}  // namespace switchboard::mcp
