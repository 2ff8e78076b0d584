#include <switchboard/protocol/limits.hpp>

#include "detail/json_pointer.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <memory_resource>
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
  const json::object* object = nullptr;  // one of the two
  const json::array* array = nullptr;
  std::size_t next = 0;

  std::size_t size() const { return object ? object->size() : array->size(); }
  const json::value& child(std::size_t i) const { return object ? (object->begin() + i)->value() : (*array)[i]; }
};

frame frame_of(const json::value& v) { return {v.if_object(), v.if_array()}; }

// The chain of frames, on the caller's stack for the usual nesting: every
// agent answer is checked, and a vector grew through three allocations.
using frame_path = std::pmr::vector<frame>;
constexpr std::size_t frames_on_stack = 16;
using path_room = std::array<std::byte, frames_on_stack * sizeof(frame)>;

std::string pointer_of(const frame_path& path) {
  std::string pointer;
  for (const auto& f : path) {
    const std::size_t index = f.next - 1;  // the child being visited
    if (f.object) {
      pointer += "/" + detail::escape_pointer_token((f.object->begin() + index)->key());
    } else {
      pointer += "/" + std::to_string(index);
    }
  }
  return pointer.empty() ? "/" : pointer;
}

// Why `v`, reached through `path`, may not enter; nullopt when it may.
std::optional<std::string> check_one(const json::value& v, const frame_path& path, std::size_t max_depth) {
  if (v.is_double() && !std::isfinite(v.get_double())) {
    return "the number at " + pointer_of(path) + " is not finite (JSON has no Infinity or NaN)";
  }
  if (v.is_structured() && path.size() >= max_depth) {
    return "nesting deeper than " + std::to_string(max_depth) + " levels at " + pointer_of(path);
  }
  return std::nullopt;
}

// Every value below the containers on `path`, depth first.
std::optional<std::string> check_below(frame_path& path, std::size_t max_depth) {
  while (!path.empty()) {
    frame& top = path.back();
    if (top.next == top.size()) {
      path.pop_back();
      continue;
    }
    const json::value& child = top.child(top.next++);
    if (auto problem = check_one(child, path, max_depth)) return problem;
    if (child.is_structured()) path.push_back(frame_of(child));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_untrusted_value(const json::value& value, std::size_t max_depth) {
  alignas(frame) path_room room;
  std::pmr::monotonic_buffer_resource stack(room.data(), room.size());
  frame_path path(&stack);
  path.reserve(frames_on_stack);
  if (auto problem = check_one(value, path, max_depth)) return problem;
  if (value.is_structured()) path.push_back(frame_of(value));
  return check_below(path, max_depth);
}

std::optional<std::string> check_untrusted_value(const json::object& value, std::size_t max_depth) {
  if (max_depth == 0) return "nesting deeper than 0 levels at /";
  alignas(frame) path_room room;
  std::pmr::monotonic_buffer_resource stack(room.data(), room.size());
  frame_path path(&stack);
  path.reserve(frames_on_stack);
  path.push_back(frame{&value, nullptr});
  return check_below(path, max_depth);
}

}  // namespace switchboard::protocol
