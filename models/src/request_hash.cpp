#include <switchboard/models/request_hash.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace switchboard::models {

namespace json = boost::json;

namespace {

constexpr std::string_view format_tag = "switchboard.chat_request/1";
constexpr std::size_t summary_excerpt_chars = 80;

// Boost.JSON objects keep insertion order; two equal schemas written in a
// different order must hash alike, so every object is rebuilt sorted.
json::value sorted_copy(const json::value& value) {
  if (const auto* object = value.if_object()) {
    std::vector<std::pair<std::string_view, const json::value*>> members;
    members.reserve(object->size());
    for (const auto& member : *object) members.emplace_back(member.key(), &member.value());
    std::sort(members.begin(), members.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    json::object sorted;
    sorted.reserve(members.size());
    for (const auto& [key, member] : members) sorted.emplace(key, sorted_copy(*member));
    return sorted;
  }
  if (const auto* array = value.if_array()) {
    json::array copy;
    copy.reserve(array->size());
    for (const auto& element : *array) copy.push_back(sorted_copy(element));
    return copy;
  }
  return value;
}

std::string_view to_string(response_format::kind kind) noexcept {
  switch (kind) {
    case response_format::kind::none: return "none";
    case response_format::kind::json_object: return "json_object";
    case response_format::kind::json_schema: return "json_schema";
  }
  return "none";
}

json::value canonical_format(const response_format& format) {
  json::object out;
  out["type"] = to_string(format.type);
  if (format.type == response_format::kind::json_schema) {
    out["name"] = format.name;
    out["strict"] = format.strict;
    out["schema"] = sorted_copy(format.schema.json());
  }
  return out;
}

template <class T>
json::value optional_value(const std::optional<T>& value) {
  if (!value) return nullptr;
  return json::value(*value);
}

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    hex.push_back(digits[bytes[i] >> 4]);
    hex.push_back(digits[bytes[i] & 0x0f]);
  }
  return hex;
}

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("request_hash: OpenSSL SHA-256 failed");
  return to_hex(digest.data(), size);
}

// Keeps a summary on one line and short.
std::string excerpt(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, summary_excerpt_chars)) out.push_back(c == '\n' || c == '\r' ? ' ' : c);
  if (text.size() > summary_excerpt_chars) out += "...";
  return out;
}

// A message is [role, content]; one that carries tool calls, a tool call id
// or an error flag gets a third element with those, so messages without
// them (every request before tools existed) keep their form and their hash.
json::value canonical_message(const chat_message& message) {
  json::array out{to_string(message.role), message.content};
  if (message.tool_calls.empty() && message.tool_call_id.empty() && !message.is_error) return out;
  json::array calls;
  for (const auto& call : message.tool_calls)
    calls.push_back(json::array{call.id, call.name, call.arguments});  // arguments as sent: the text is the identity
  json::object extra;
  extra["tool_calls"] = std::move(calls);
  extra["tool_call_id"] = message.tool_call_id;
  extra["is_error"] = message.is_error;
  out.push_back(std::move(extra));
  return out;
}

json::value canonical_tools(const std::vector<tool_definition>& tools) {
  json::array out;
  out.reserve(tools.size());
  for (const auto& tool : tools) {
    out.push_back(json::object{{"name", tool.name},
                               {"description", tool.description},
                               {"parameters", sorted_copy(tool.parameters)},
                               {"strict", tool.strict}});
  }
  return out;
}

json::value canonical_choice(const tool_choice& choice) {
  return json::object{{"type", to_string(choice.type)}, {"name", choice.name}};
}

// Tool members are added only when a request uses them, for the same reason.
void add_tool_members(json::object& out, const chat_request& request) {
  if (!request.tools.empty()) out["tools"] = canonical_tools(request.tools);
  if (request.tool_choice) out["tool_choice"] = canonical_choice(*request.tool_choice);
  if (request.parallel_tool_calls) out["parallel_tool_calls"] = *request.parallel_tool_calls;
}

}  // namespace

json::value canonical_request(const chat_request& request) {
  json::array messages;
  messages.reserve(request.messages.size());
  for (const auto& message : request.messages)
    messages.push_back(canonical_message(message));
  json::array stop;
  for (const auto& sequence : request.stop) stop.push_back(json::string(sequence));

  json::object out;
  out["format"] = format_tag;
  out["model"] = request.model;
  out["prompt_version"] = request.prompt_version;
  out["messages"] = std::move(messages);
  out["temperature"] = optional_value(request.temperature);
  out["max_tokens"] = optional_value(request.max_tokens);
  out["seed"] = optional_value(request.seed);
  out["stop"] = std::move(stop);
  out["response_format"] = canonical_format(request.format);
  add_tool_members(out, request);
  return out;
}

std::string request_hash(const chat_request& request) {
  return sha256_hex(json::serialize(canonical_request(request)));
}

std::string request_summary(const chat_request& request) {
  std::string out = "model '" + (request.model.empty() ? std::string("(default)") : request.model) + "'";
  if (!request.prompt_version.empty()) out += ", prompt " + request.prompt_version;
  out += ", " + std::to_string(request.messages.size()) + " message(s)";
  out += ", response_format " + std::string(to_string(request.format.type));
  if (request.format.type == response_format::kind::json_schema)
    out += " '" + request.format.name + "'" + (request.format.strict ? " strict" : "");
  if (!request.tools.empty()) out += ", " + std::to_string(request.tools.size()) + " tool(s)";
  auto last_user = std::find_if(request.messages.rbegin(), request.messages.rend(),
                                [](const chat_message& m) { return m.role == chat_role::user; });
  if (last_user != request.messages.rend()) out += ", last user message \"" + excerpt(last_user->content) + "\"";
  return out;
}

}  // namespace switchboard::models
