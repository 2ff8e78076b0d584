// Tool-call vocabulary (tool_call.hpp) and the shape checks both wire
// formats apply to the calls in a model's answer (tool_wire.hpp).
#include <switchboard/models/tool_call.hpp>

#include <switchboard/net/redaction.hpp>
#include "tool_wire.hpp"
#include "wire_common.hpp"

#include <switchboard/protocol/limits.hpp>

namespace switchboard::models {

std::string_view to_string(tool_choice::kind kind) noexcept {
  switch (kind) {
    case tool_choice::kind::auto_: return "auto";
    case tool_choice::kind::none: return "none";
    case tool_choice::kind::required: return "required";
    case tool_choice::kind::named: return "named";
  }
  return "auto";
}

bool is_valid_tool_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > protocol::max_tool_name_length) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == ':' || c == '/' || c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace detail {

std::string describe_tool_call(std::size_t index, std::string_view id) {
  std::string out = "tool call " + std::to_string(index);
  // The id is the model's text: cut and escaped before it reaches a message.
  if (!id.empty()) out += " ('" + net::excerpt(id, {}, 64) + "')";
  return out;
}

void check_tool_call_count(std::string_view provider, std::size_t count, std::string_view body,
                           std::span<const net::http_header> secrets) {
  if (count <= protocol::max_tool_calls_per_turn) return;
  throw invalid_response(provider,
                         std::to_string(count) + " tool calls in one answer, more than the " +
                             std::to_string(protocol::max_tool_calls_per_turn) + " allowed",
                         body, secrets);
}

void check_tool_call(std::string_view provider, std::size_t index, const tool_call& call, std::string_view body,
                     std::span<const net::http_header> secrets) {
  const auto fail = [&](const std::string& what) {
    throw invalid_response(provider, describe_tool_call(index, call.id) + " " + what, body, secrets);
  };
  if (call.id.empty()) fail("has no id");
  if (call.id.size() > protocol::max_tool_call_id_length)
    fail("has an id of " + std::to_string(call.id.size()) + " bytes, more than the " +
         std::to_string(protocol::max_tool_call_id_length) + " allowed");
  if (call.name.empty()) fail("has no tool name");
  if (!is_valid_tool_name(call.name))
    fail("names the tool '" + net::excerpt(call.name, {}, 64) + "', not a valid tool name ([A-Za-z0-9_.:/-]{1,128})");
  if (call.arguments.size() > protocol::max_tool_arguments_bytes)
    fail("has " + std::to_string(call.arguments.size()) + " bytes of arguments, more than the " +
         std::to_string(protocol::max_tool_arguments_bytes) + " allowed");
}

}  // namespace detail

}  // namespace switchboard::models
