// Reading a tool record's fields (orchestrator::event::tool_call) in the
// observers of host/: a missing or mistyped field reads as empty / false.
#pragma once

#include <boost/json/object.hpp>

#include <string_view>

namespace switchboard::host::detail {

// A field as a string, or "".
inline std::string_view text_field(const boost::json::object& record, std::string_view key) {
  const auto* value = record.if_contains(key);
  return value != nullptr && value->is_string() ? std::string_view(value->get_string()) : std::string_view{};
}

// A field that is true, or false for anything else.
inline bool bool_field(const boost::json::object& record, std::string_view key) {
  const auto* value = record.if_contains(key);
  return value != nullptr && value->is_bool() && value->get_bool();
}

}  // namespace switchboard::host::detail
