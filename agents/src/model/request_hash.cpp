#include <switchboard/agents/model/request_hash.hpp>

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

namespace switchboard::agents {

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

}  // namespace

json::value canonical_request(const chat_request& request) {
  json::array messages;
  messages.reserve(request.messages.size());
  for (const auto& message : request.messages)
    messages.push_back(json::array{to_string(message.role), message.content});
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
  auto last_user = std::find_if(request.messages.rbegin(), request.messages.rend(),
                                [](const chat_message& m) { return m.role == chat_role::user; });
  if (last_user != request.messages.rend()) out += ", last user message \"" + excerpt(last_user->content) + "\"";
  return out;
}

}  // namespace switchboard::agents
