#include "pointer.hpp"

#include <charconv>

namespace switchboard::orchestrator::detail {

namespace {

// Compares an escaped token ("a~1b") with a plain key ("a/b") without
// allocating.
bool token_equals(std::string_view escaped, std::string_view key) noexcept {
  std::size_t k = 0;
  for (std::size_t i = 0; i < escaped.size(); ++i, ++k) {
    char c = escaped[i];
    if (c == '~') {
      c = escaped[++i] == '0' ? '~' : '/';
    }
    if (k >= key.size() || key[k] != c) return false;
  }
  return k == key.size();
}

std::string unescape(std::string_view escaped) {
  std::string out;
  out.reserve(escaped.size());
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '~') {
      out.push_back(escaped[++i] == '0' ? '~' : '/');
    } else {
      out.push_back(escaped[i]);
    }
  }
  return out;
}

const boost::json::value* find_key(const boost::json::object& object, std::string_view token) noexcept {
  if (token.find('~') == std::string_view::npos) {
    return object.if_contains(token);
  }
  for (const auto& member : object) {
    if (token_equals(token, member.key())) return &member.value();
  }
  return nullptr;
}

const boost::json::value* find_index(const boost::json::array& array, std::string_view token) noexcept {
  if (token.empty() || (token.size() > 1 && token[0] == '0')) return nullptr;
  std::size_t index = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
  if (ec != std::errc{} || end != token.data() + token.size()) return nullptr;
  return index < array.size() ? &array[index] : nullptr;
}

}  // namespace

bool valid_pointer(std::string_view pointer) noexcept {
  if (pointer.empty()) return true;
  if (pointer.front() != '/') return false;
  for (std::size_t i = 0; i < pointer.size(); ++i) {
    if (pointer[i] == '~' && (i + 1 == pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1'))) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> tokens;
  while (!pointer.empty()) {
    pointer.remove_prefix(1);  // the '/'
    auto next = pointer.find('/');
    tokens.push_back(unescape(pointer.substr(0, next)));
    pointer = next == std::string_view::npos ? std::string_view{} : pointer.substr(next);
  }
  return tokens;
}

const boost::json::value* resolve(const boost::json::object& data, std::string_view pointer) noexcept {
  if (pointer.empty()) return nullptr;
  const boost::json::object* object = &data;
  const boost::json::value* current = nullptr;
  while (!pointer.empty()) {
    pointer.remove_prefix(1);
    auto next = pointer.find('/');
    auto token = pointer.substr(0, next);
    pointer = next == std::string_view::npos ? std::string_view{} : pointer.substr(next);
    if (object) {
      current = find_key(*object, token);
    } else if (current && current->is_array()) {
      current = find_index(current->get_array(), token);
    } else {
      return nullptr;
    }
    if (!current) return nullptr;
    object = current->if_object();
  }
  return current;
}

}  // namespace switchboard::orchestrator::detail
