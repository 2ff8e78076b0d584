// JSON Pointer helpers shared by the validator, the envelope checks and
// strict mode. Internal.
#pragma once

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <charconv>

#include <string>
#include <string_view>

namespace switchboard::protocol::detail {

// Escapes one reference token: "~" → "~0", "/" → "~1" (RFC 6901).
inline std::string escape_pointer_token(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (const char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

inline std::string append_pointer(std::string_view base, std::string_view token) {
  std::string out(base);
  out += '/';
  out += escape_pointer_token(token);
  return out;
}

// "string", "number", "object", ... as JSON Schema names them. Integers are
// reported as "integer" so "expected string, got integer" reads naturally.
inline std::string_view json_type_name(const boost::json::value& v) noexcept {
  switch (v.kind()) {
    case boost::json::kind::null: return "null";
    case boost::json::kind::bool_: return "boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64: return "integer";
    case boost::json::kind::double_: return "number";
    case boost::json::kind::string: return "string";
    case boost::json::kind::array: return "array";
    case boost::json::kind::object: return "object";
  }
  return "unknown";
}

// A value as it reads in a message: doubles in their shortest form ("1.2",
// not Boost.JSON's "1.2E0"), everything else serialised, long text cut.
inline std::string readable_json(const boost::json::value& v) {
  std::string text;
  if (v.is_double()) {
    char buffer[32];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v.get_double());
    text = ec == std::errc{} ? std::string(buffer, end) : boost::json::serialize(v);
  } else {
    text = boost::json::serialize(v);
  }
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

}  // namespace switchboard::protocol::detail
