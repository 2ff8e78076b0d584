#include <switchboard/protocol/limits.hpp>

#include "detail/json_pointer.hpp"

#include <cmath>
#include <vector>

namespace switchboard::protocol {

namespace json = boost::json;

json::parse_options untrusted_parse_options() noexcept {
  json::parse_options options;
  options.max_depth = max_json_depth;
  return options;
}

json::parse_options checkpoint_parse_options() noexcept {
  json::parse_options options;
  options.max_depth = max_checkpoint_depth;
  return options;
}

namespace {

// A container being walked: the next child to visit. The path to any value
// is the chain of frames, so a pointer is only built when something is wrong.
struct frame {
  const json::value* container;
  std::size_t next = 0;
};

std::string pointer_of(const std::vector<frame>& path) {
  std::string pointer;
  for (const auto& f : path) {
    const std::size_t index = f.next - 1;  // the child being visited
    if (const auto* object = f.container->if_object()) {
      pointer += "/" + detail::escape_pointer_token((object->begin() + index)->key());
    } else {
      pointer += "/" + std::to_string(index);
    }
  }
  return pointer.empty() ? "/" : pointer;
}

std::size_t size_of(const json::value& v) {
  return v.is_object() ? v.get_object().size() : v.get_array().size();
}

const json::value& child_of(const json::value& v, std::size_t i) {
  return v.is_object() ? (v.get_object().begin() + i)->value() : v.get_array()[i];
}

// Why `v`, reached through `path`, may not enter; nullopt when it may.
std::optional<std::string> check_one(const json::value& v, const std::vector<frame>& path, std::size_t max_depth) {
  if (v.is_double() && !std::isfinite(v.get_double())) {
    return "the number at " + pointer_of(path) + " is not finite (JSON has no Infinity or NaN)";
  }
  if (v.is_structured() && path.size() >= max_depth) {
    return "nesting deeper than " + std::to_string(max_depth) + " levels at " + pointer_of(path);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_untrusted_value(const json::value& value, std::size_t max_depth) {
  std::vector<frame> path;
  if (auto problem = check_one(value, path, max_depth)) return problem;
  if (value.is_structured()) path.push_back({&value});
  while (!path.empty()) {
    frame& top = path.back();
    if (top.next == size_of(*top.container)) {
      path.pop_back();
      continue;
    }
    const json::value& child = child_of(*top.container, top.next++);
    if (auto problem = check_one(child, path, max_depth)) return problem;
    if (child.is_structured()) path.push_back({&child});
  }
  return std::nullopt;
}

}  // namespace switchboard::protocol
