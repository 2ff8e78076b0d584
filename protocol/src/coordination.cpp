// The coordination request: which registered agent handles the next step.
#include <switchboard/protocol/coordination.hpp>

#include "detail/json_pointer.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>

namespace switchboard::protocol {

namespace json = boost::json;

json::value coordination_schema(std::span<const std::string> agent_names) {
  json::array names;
  for (const auto& name : agent_names) names.emplace_back(name);
  return json::object{
      {"$schema", "http://json-schema.org/draft-07/schema#"},
      {"type", "object"},
      {"properties",
       json::object{
           {"agent_name", json::object{{"type", "string"},
                                       {"enum", std::move(names)},
                                       {"description", "The registered agent to run next."}}},
           {"additional_instructions",
            json::object{{"type", "string"},
                         {"description", "Extra instructions for that agent; may be empty."}}},
       }},
      {"required", json::array{"agent_name"}},
      {"additionalProperties", false},
  };
}

namespace {

std::string joined(std::span<const std::string> names) {
  if (names.empty()) return "(none registered)";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

coordination_parse read_coordination_request(const json::value& value,
                                             std::span<const std::string> agent_names) {
  coordination_parse result;
  auto& errors = result.errors;
  const auto* obj = value.if_object();
  if (!obj) {
    errors.push_back({"", "expected a coordination request object, got " +
                              std::string(detail::json_type_name(value)),
                      errc::schema_type_error});
    return result;
  }
  coordination_request request;
  const auto* name = obj->if_contains("agent_name");
  if (!name) {
    errors.push_back({"/agent_name", "required property missing", errc::schema_missing_field});
  } else if (!name->is_string()) {
    errors.push_back({"/agent_name",
                      "expected string, got " + std::string(detail::json_type_name(*name)),
                      errc::schema_type_error});
  } else {
    request.agent_name = std::string(name->get_string());
    if (std::ranges::find(agent_names, request.agent_name) == agent_names.end()) {
      errors.push_back({"/agent_name",
                        "unknown agent '" + request.agent_name + "'; registered agents: " +
                            joined(agent_names),
                        errc::unknown_agent});
    }
  }
  if (const auto* extra = obj->if_contains("additional_instructions"); extra && !extra->is_null()) {
    if (!extra->is_string()) {
      errors.push_back({"/additional_instructions",
                        "expected string, got " + std::string(detail::json_type_name(*extra)),
                        errc::schema_type_error});
    } else {
      request.additional_instructions = std::string(extra->get_string());
    }
  }
  for (const auto& [key, v] : *obj) {
    if (key != "agent_name" && key != "additional_instructions") {
      errors.push_back({detail::append_pointer("", key),
                        "property not allowed (allowed: agent_name, additional_instructions)",
                        errc::schema_violation});
    }
  }
  if (errors.empty()) result.request = std::move(request);
  return result;
}

}  // namespace switchboard::protocol
