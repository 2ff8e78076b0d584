// Error codes of the protocol layer, wired into boost::system::error_code
// (and through it std::error_code).
//
// The string form of each code (to_string) is the stable "reason code" that
// the structured-output parser, `switchboard validate` and audit records
// report: "invalid_json", "schema_missing_field", ...
//
// Thread-safety: everything here is stateless and safe to use concurrently.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <string_view>
#include <type_traits>

namespace switchboard::protocol {

enum class errc {
  empty_output = 1,       // the model returned nothing but white space
  invalid_json,           // no JSON value could be parsed, extracted or repaired
  schema_missing_field,   // a required property is absent
  schema_type_error,      // a value has the wrong JSON type
  schema_violation,       // any other JSON Schema constraint failed
  invariant_violation,    // a C++ invariant registered for the schema failed
  invalid_envelope,       // explanation/confidence/reasoning malformed
  unknown_agent,          // a coordination request named an unregistered agent
  unknown_schema,         // no schema with that name (or name@version)
  duplicate_schema,       // name@version registered twice
  unparsable_schema,      // a schema file is not JSON or not a valid schema
  invalid_schema_id,      // not of the form name or name@version
  // Why a model's answer could not be used, from how the model stopped:
  truncated,              // cut off at the token limit: never accepted as complete
  refusal,                // the model declined to answer
  content_filter,         // the provider withheld or cut the answer
  unexpected_tool_call,   // the model called a tool instead of answering
  reasoning_only,         // the model reasoned but gave no answer
};

// "invalid_json", "schema_missing_field", ...: the stable reason code.
std::string_view to_string(errc code) noexcept;

const boost::system::error_category& protocol_category() noexcept;

inline boost::system::error_code make_error_code(errc code) noexcept {
  return {static_cast<int>(code), protocol_category()};
}

// Thrown where failure is a programming or configuration error (loading a
// broken schema file, registering a duplicate). what() names the schema and
// the file; code() is one of errc.
class protocol_error : public boost::system::system_error {
 public:
  protocol_error(errc code, const std::string& message)
      : boost::system::system_error(make_error_code(code), message) {}
};

}  // namespace switchboard::protocol

template <>
struct boost::system::is_error_code_enum<switchboard::protocol::errc> : std::true_type {};
