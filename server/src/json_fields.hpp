// Reading the members of the JSON objects the server is given or keeps
// (request bodies, journal entries, interrupts). Internal to server/.
#pragma once

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

namespace switchboard::server {

// A string member of `o`; "" when it is absent, null or not a string.
inline std::string text_field(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string{};
}

// A member of `o` that is present and not null; null otherwise.
inline const boost::json::value* member(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && !v->is_null() ? v : nullptr;
}

}  // namespace switchboard::server
