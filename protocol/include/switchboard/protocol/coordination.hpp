// The coordination request a coordinator model answers with:
//   { "agent_name": "<one of the registered agents>", "additional_instructions": "..." }
// The schema's enum is generated from the registered agent names, so an
// unknown name is a validation error (errc::unknown_agent), never a silent
// fallback.
//
// Pure functions and value types; thread-safe.
#pragma once

#include <switchboard/protocol/validation.hpp>

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace switchboard::protocol {

struct coordination_request {
  std::string agent_name;
  std::string additional_instructions;
};

// JSON Schema whose agent_name enum lists `agent_names`.
boost::json::value coordination_schema(std::span<const std::string> agent_names);

// Checks a parsed value: shape and agent_name ∈ agent_names. On failure the
// errors name the path and, for an unknown agent, the allowed names.
struct coordination_parse {
  std::optional<coordination_request> request;
  std::vector<validation_error> errors;
};
coordination_parse read_coordination_request(const boost::json::value& value,
                                             std::span<const std::string> agent_names);

}  // namespace switchboard::protocol
