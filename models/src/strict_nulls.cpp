// Strict mode's nulls: a provider's strict schema makes every property
// required and lets optional ones be null, so an answer to it carries
// nulls the original schema does not allow; they are dropped before the
// answer is validated against the original.
#include "strict_nulls.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::models::detail {

namespace json = boost::json;

namespace {

const json::value* resolve_local_ref(const json::value& root, const json::value& schema) {
  const json::value* node = &schema;
  for (int hops = 0; hops < 16; ++hops) {
    const auto* object = node->if_object();
    const auto* ref = object ? object->if_contains("$ref") : nullptr;
    if (!ref || !ref->is_string()) return node;
    const std::string_view target = ref->get_string();
    if (!target.starts_with('#')) return nullptr;
    boost::system::error_code ec;
    node = root.find_pointer(target.substr(1), ec);
    if (!node) return nullptr;
  }
  return nullptr;
}

bool is_required(const json::object& schema, std::string_view key) {
  const auto* required = schema.if_contains("required");
  if (!required || !required->is_array()) return false;
  const auto& list = required->get_array();
  return std::any_of(list.begin(), list.end(),
                     [&](const json::value& name) { return name.is_string() && name.get_string() == key; });
}

}  // namespace

// Removes null members at optional properties, following properties, items
// and local $refs of the original schema. Returns whether anything changed.
bool drop_optional_nulls(json::value& value, const json::value& schema_node, const json::value& root) {
  const json::value* resolved = resolve_local_ref(root, schema_node);
  const auto* schema = resolved ? resolved->if_object() : nullptr;
  if (!schema) return false;
  bool changed = false;
  if (auto* object = value.if_object()) {
    const auto* properties = schema->if_contains("properties");
    if (!properties || !properties->is_object()) return false;
    std::vector<std::string> nulls;
    for (auto& member : *object) {
      const auto* property = properties->get_object().if_contains(member.key());
      if (!property) continue;
      if (member.value().is_null() && !is_required(*schema, member.key()))
        nulls.emplace_back(member.key());
      else
        changed |= drop_optional_nulls(member.value(), *property, root);
    }
    for (const auto& key : nulls) object->erase(key);
    return changed || !nulls.empty();
  }
  if (auto* array = value.if_array()) {
    const auto* items = schema->if_contains("items");
    if (!items) return false;
    for (std::size_t i = 0; i < array->size(); ++i) {
      if (items->is_array()) {
        if (i < items->get_array().size())
          changed |= drop_optional_nulls((*array)[i], items->get_array()[i], root);
      } else {
        changed |= drop_optional_nulls((*array)[i], *items, root);
      }
    }
  }
  return changed;
}

}  // namespace switchboard::models::detail
