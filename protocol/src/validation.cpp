// compiled_schema over valijson (draft-07, Boost.JSON adapter, regular
// expressions by RE2: validator/reference_schema.hpp), the fast path in
// front of it (validator/fast_schema.hpp), and the translation of valijson's
// errors into path-addressed validation_errors.
#include <switchboard/protocol/validation.hpp>

#include "detail/json_pointer.hpp"
#include "validator/ecma_regex.hpp"
#include "validator/fast_schema.hpp"
#include "validator/reference_schema.hpp"
#include "validator/schema_graph.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/serialize.hpp>

#include <valijson/validation_results.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <exception>
#include <set>
#include <sstream>

namespace switchboard::protocol {

namespace json = boost::json;

std::string validation_error::to_string() const {
  return (path.empty() ? std::string("(root)") : path) + ": " + message;
}

std::string to_string(const std::vector<validation_error>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += '\n';
    out += e.to_string();
  }
  return out;
}

struct compiled_schema::impl {
  std::string id;
  json_document document;
  // valijson, with every regex run by RE2; the reference for errors.
  std::unique_ptr<const detail::reference_schema> reference;
  // The same schema as a fast pre-check; null when it uses keywords the
  // fast path does not cover (valijson alone then).
  std::unique_ptr<const detail::fast_schema> fast;
  // Strict forms, by strict_provider, computed on first use.
  mutable std::array<std::once_flag, 2> strict_once;
  mutable std::array<std::optional<protocol::strict_form>, 2> strict;
};

namespace {

// ---------------------------------------------------------------------------
// Paths: valijson reports "<root>", "[data]", "[0]"; we report "/data/0".

std::vector<std::string> context_tokens(const std::vector<std::string>& context) {
  std::vector<std::string> tokens;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    if (part.size() >= 2 && part.front() == '[' && part.back() == ']') {
      tokens.push_back(part.substr(1, part.size() - 2));
    } else {
      tokens.push_back(part);
    }
  }
  return tokens;
}

std::string to_pointer(const std::vector<std::string>& tokens) {
  std::string out;
  for (const auto& t : tokens) out = detail::append_pointer(out, t);
  return out;
}

const json::value* instance_at(const json::value& root, const std::vector<std::string>& tokens) {
  const json::value* current = &root;
  for (const auto& token : tokens) {
    if (const auto* obj = current->if_object()) {
      const auto it = obj->find(token);
      if (it == obj->end()) return nullptr;
      current = &it->value();
    } else if (const auto* arr = current->if_array()) {
      std::size_t index = 0;
      for (const char c : token) {
        if (c < '0' || c > '9') return nullptr;
        index = index * 10 + static_cast<std::size_t>(c - '0');
        if (index > arr->size()) return nullptr;
      }
      if (token.empty() || index >= arr->size()) return nullptr;
      current = &(*arr)[index];
    } else {
      return nullptr;
    }
  }
  return current;
}

// ---------------------------------------------------------------------------
// Best-effort lookup of the subschema that governs a path, so messages can say
// what was expected ("expected number", "one of [...]"). Follows properties,
// patternProperties, items, additionalProperties and local $refs; gives up
// (nullptr) on anything else, and the message then falls back to valijson's
// wording.

const json::value* resolve_local_ref(const json::value& root, const json::value* node) {
  for (int hops = 0; node && hops < 16; ++hops) {
    const auto* obj = node->if_object();
    if (!obj) return node;
    const auto it = obj->find("$ref");
    if (it == obj->end() || !it->value().is_string()) return node;
    const std::string_view ref = it->value().get_string();
    if (ref.empty() || ref.front() != '#') return nullptr;
    std::string pointer(ref.substr(1));
    boost::system::error_code ec;
    node = root.find_pointer(pointer, ec);
  }
  return node;
}

const json::value* member(const json::value* schema, std::string_view key) {
  if (!schema || !schema->is_object()) return nullptr;
  const auto& obj = schema->get_object();
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &it->value();
}

// Patterns compiled for the lookup, once per translation (errors only).
using regex_cache = std::map<std::string, std::shared_ptr<const detail::ecma_regex>, std::less<>>;

// The subschema of the first patternProperties entry whose pattern matches `name`.
const json::value* first_matching_pattern(const json::value* patterns, const std::string& name,
                                          regex_cache& cache) {
  if (!patterns || !patterns->is_object()) return nullptr;
  for (const auto& [pattern, schema] : patterns->get_object()) {
    auto known = cache.find(std::string_view(pattern));
    if (known == cache.end()) {
      std::string why_not;
      known = cache.emplace(std::string(pattern), detail::ecma_regex::compile(pattern, why_not)).first;
    }
    if (known->second && known->second->search(name)) return &schema;
  }
  return nullptr;
}

const json::value* schema_at(const json::value& root, const json::value& instance,
                             const std::vector<std::string>& tokens, regex_cache& patterns) {
  const json::value* schema = resolve_local_ref(root, &root);
  const json::value* value = &instance;
  for (const auto& token : tokens) {
    if (!schema || !value) return nullptr;
    if (value->is_object()) {
      const json::value* next = member(member(schema, "properties"), token);
      if (!next) next = first_matching_pattern(member(schema, "patternProperties"), token, patterns);
      if (!next) next = member(schema, "additionalProperties");
      schema = next;
      value = instance_at(*value, {token});
    } else if (value->is_array()) {
      const json::value* items = member(schema, "items");
      if (items && items->is_array()) {
        const auto index = static_cast<std::size_t>(std::strtoull(token.c_str(), nullptr, 10));
        schema = index < items->get_array().size() ? &items->get_array()[index]
                                                   : member(schema, "additionalItems");
      } else {
        schema = items;
      }
      value = instance_at(*value, {token});
    } else {
      return nullptr;
    }
    schema = resolve_local_ref(root, schema);
  }
  return schema && schema->is_object() ? schema : nullptr;
}

std::string expected_types(const json::value* schema) {
  const json::value* type = member(schema, "type");
  if (!type) return {};
  if (type->is_string()) return std::string(type->get_string());
  std::string out;
  if (const auto* list = type->if_array()) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (!(*list)[i].is_string()) continue;
      if (!out.empty()) out += (i + 1 == list->size()) ? " or " : ", ";
      out += std::string((*list)[i].get_string());
    }
  }
  return out;
}

std::string short_json(const json::value& v) { return detail::readable_json(v); }

std::string number_text(const json::value& v) { return detail::readable_json(v); }

// ---------------------------------------------------------------------------
// Translation of one valijson error.

bool starts_with(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }

// The text between the first quote and the last quote of a valijson message
// ("Missing required property 'start'." → "start").
std::string quoted_name(std::string_view description) {
  const auto first = description.find('\'');
  const auto last = description.rfind('\'');
  if (first == std::string_view::npos || last <= first) return {};
  return std::string(description.substr(first + 1, last - first - 1));
}

// Errors valijson adds on a parent after a child failed; they only repeat
// what the child error already says.
bool is_wrapper(std::string_view d) {
  return starts_with(d, "Failed to validate against schema associated with property name") ||
         starts_with(d, "Failed to validate item #") ||
         starts_with(d, "Failed to validate against additional properties schema") ||
         starts_with(d, "Failed to validate against schema associated with pattern") ||
         starts_with(d, "Failed to validate against child schema #") ||
         starts_with(d, "Failed to validate against dependent schema") ||
         starts_with(d, "Failed to validate against additional items schema");
}

std::string lower_first(std::string text) {
  if (!text.empty() && text.front() >= 'A' && text.front() <= 'Z') text.front() += 'a' - 'A';
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

struct translator {
  const json::value& schema_root;
  const json::value& instance;
  mutable regex_cache patterns{};

  // valijson names only the first unexpected property; name them all when
  // the schema says which ones are allowed.
  std::vector<validation_error> extra_properties(const std::vector<std::string>& tokens,
                                                 const std::string& first,
                                                 const json::value* value,
                                                 const json::value* schema) const {
    const std::string base = to_pointer(tokens);
    const std::string message = "property not allowed by the schema (additionalProperties is false)";
    std::vector<validation_error> out;
    const json::value* properties = member(schema, "properties");
    // Only with the schema in hand: without it every member would look unexpected.
    if (schema && value && value->is_object() && !member(schema, "patternProperties")) {
      for (const auto& [key, v] : value->get_object()) {
        if (!properties || !properties->is_object() || !properties->get_object().contains(key)) {
          out.push_back({detail::append_pointer(base, key), message, errc::schema_violation});
        }
      }
    }
    if (out.empty()) out.push_back({detail::append_pointer(base, first), message, errc::schema_violation});
    return out;
  }

  std::vector<validation_error> operator()(const valijson::ValidationResults::Error& error) const {
    const auto tokens = context_tokens(error.context);
    const std::string& d = error.description;
    const json::value* value = instance_at(instance, tokens);
    const json::value* schema = schema_at(schema_root, instance, tokens, patterns);

    if (starts_with(d, "Missing required property '")) {
      return {{detail::append_pointer(to_pointer(tokens), quoted_name(d)),
               "required property missing", errc::schema_missing_field}};
    }
    if (starts_with(d, "Value type not permitted by 'type' constraint")) {
      std::string expected = expected_types(schema);
      std::string got = value ? std::string(detail::json_type_name(*value)) : "another type";
      return {{to_pointer(tokens),
               expected.empty() ? "value has a type the schema does not allow (got " + got + ")"
                                : "expected " + expected + ", got " + got,
               errc::schema_type_error}};
    }
    if (starts_with(d, "Object contains a property that could not be validated")) {
      const auto name_start = d.find("constraints: '");
      const std::string name =
          name_start == std::string::npos ? quoted_name(d) : d.substr(name_start + 14, d.size() - name_start - 16);
      return extra_properties(tokens, name, value, schema);
    }
    return {{to_pointer(tokens), constraint_message(d, value, schema), errc::schema_violation}};
  }

  std::string constraint_message(const std::string& d, const json::value* value,
                                 const json::value* schema) const {
    const std::string got = value ? ", got " + short_json(*value) : "";
    auto keyword = [&](std::string_view name) { return member(schema, name); };
    if (starts_with(d, "Failed to match against any enum values") && keyword("enum")) {
      return "expected one of " + short_json(*keyword("enum")) + got;
    }
    if (starts_with(d, "Failed to match expected value set by 'const'") && keyword("const")) {
      return "expected " + short_json(*keyword("const")) + got;
    }
    if (starts_with(d, "Expected number less than or equal to") && keyword("maximum")) {
      return "must be <= " + number_text(*keyword("maximum")) + got;
    }
    if (starts_with(d, "Expected number less than") && keyword("exclusiveMaximum")) {
      return "must be < " + number_text(*keyword("exclusiveMaximum")) + got;
    }
    if (starts_with(d, "Expected number greater than or equal to") && keyword("minimum")) {
      return "must be >= " + number_text(*keyword("minimum")) + got;
    }
    if (starts_with(d, "Expected number greater than") && keyword("exclusiveMinimum")) {
      return "must be > " + number_text(*keyword("exclusiveMinimum")) + got;
    }
    if (starts_with(d, "Failed to match regex specified by 'pattern'") && keyword("pattern")) {
      return "does not match pattern " + short_json(*keyword("pattern")) + got;
    }
    if (starts_with(d, "String should be no fewer than") && keyword("minLength")) {
      return "string shorter than minLength " + number_text(*keyword("minLength"));
    }
    if (starts_with(d, "String should be no more than") && keyword("maxLength")) {
      return "string longer than maxLength " + number_text(*keyword("maxLength"));
    }
    if (starts_with(d, "Array should contain no fewer than") && keyword("minItems")) {
      return "array has fewer than minItems " + number_text(*keyword("minItems")) + " items";
    }
    if (starts_with(d, "Array should contain no more than") && keyword("maxItems")) {
      return "array has more than maxItems " + number_text(*keyword("maxItems")) + " items";
    }
    return lower_first(d) + got;
  }
};

std::vector<validation_error> translate(valijson::ValidationResults& results,
                                        const json::value& schema_root,
                                        const json::value& instance) {
  std::vector<valijson::ValidationResults::Error> raw;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) raw.push_back(error);

  const bool has_specific = std::ranges::any_of(
      raw, [](const auto& e) { return !is_wrapper(e.description); });
  const translator translate_one{schema_root, instance};
  std::vector<validation_error> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& e : raw) {
    if (has_specific && is_wrapper(e.description)) continue;
    for (auto& translated : translate_one(e)) {
      if (seen.emplace(translated.path, translated.message).second) {
        out.push_back(std::move(translated));
      }
    }
  }
  return out;
}

}  // namespace

compiled_schema compiled_schema::compile(const json::value& schema, std::string id) {
  return compile(schema, std::move(id), schema_resolver{});
}

compiled_schema compiled_schema::compile(const json::value& schema, std::string id,
                                         const schema_resolver& resolver) {
  if (!schema.is_object() && !schema.is_bool()) {
    throw protocol_error(errc::unparsable_schema,
                         "schema '" + id + "': a JSON Schema must be an object or a boolean, got " +
                             std::string(detail::json_type_name(schema)));
  }
  auto compiled = std::make_shared<impl>();
  compiled->id = std::move(id);
  compiled->document = schema;
  try {
    detail::check_schema_limits(compiled->document.json(), "the schema");
    detail::schema_documents documents(compiled->document.json(), resolver);
    // The $ref structure first: valijson would overflow the stack on a cycle.
    detail::check_schema_graph(documents);
    compiled->reference = detail::reference_schema::compile(documents, static_cast<bool>(resolver));
  } catch (const detail::schema_refusal& e) {
    throw protocol_error(errc::unparsable_schema, "schema '" + compiled->id + "': " + e.what());
  } catch (const std::exception& e) {
    throw protocol_error(errc::unparsable_schema,
                         "schema '" + compiled->id + "' is not a valid draft-07 JSON Schema: " +
                             e.what());
  }
  compiled->fast = detail::fast_schema::compile(compiled->document.json());
  compiled_schema result;
  result.impl_ = std::move(compiled);
  return result;
}

const std::string& compiled_schema::id() const noexcept { return impl_->id; }

const json::value& compiled_schema::json() const noexcept { return impl_->document.json(); }

const json_document& compiled_schema::document() const noexcept { return impl_->document; }

const strict_form& compiled_schema::strict_form(strict_provider provider) const {
  const auto index = static_cast<std::size_t>(provider);
  std::call_once(impl_->strict_once.at(index),
                 [&] { impl_->strict[index] = make_strict_form(json(), provider); });
  return *impl_->strict[index];
}

std::vector<validation_error> compiled_schema::validate(const json::value& value) const {
  std::vector<validation_error> errors;
  // The fast path only answers "valid"; anything else goes to valijson, whose
  // errors stay the ones users see.
  const bool fast_valid =
      impl_->fast && !detail::reference_validation_only() && impl_->fast->accepts(value);
  if (!fast_valid) {
    valijson::ValidationResults results;
    bool valid = true;
    try {
      valid = impl_->reference->validate(value, &results);
    } catch (const std::exception& e) {
      errors.push_back({"", "schema '" + impl_->id + "' could not be applied: " + e.what(),
                        errc::schema_violation});
      return errors;
    }
    if (!valid) {
      errors = translate(results, json(), value);
      if (errors.empty()) {
        // A `false` schema rejects without a message of its own.
        errors.push_back({"", "value rejected by schema '" + impl_->id + "'", errc::schema_violation});
      }
      return errors;
    }
  }
  for (const auto& invariant : invariants_) {
    std::optional<validation_error> failed;
    try {
      failed = invariant.check(value);
    } catch (const std::exception& e) {
      failed = validation_error{"", std::string("threw: ") + e.what(), errc::invariant_violation};
    }
    if (failed) {
      failed->kind = errc::invariant_violation;
      failed->message = "invariant '" + invariant.name + "' failed: " + failed->message;
      errors.push_back(std::move(*failed));
    }
  }
  return errors;
}

std::vector<validation_error> compiled_schema::validate_object(const json::object& value) const {
  if (invariants_.empty() && impl_->fast && !detail::reference_validation_only() && impl_->fast->accepts(value)) {
    return {};
  }
  // Copied into a stack buffer: no heap allocation for a typical answer.
  unsigned char buffer[4096];
  json::monotonic_resource resource(buffer, sizeof buffer);
  return validate(json::value(value, &resource));
}

compiled_schema compiled_schema::with_invariant(std::string name, invariant_check check) const {
  compiled_schema copy = *this;
  copy.invariants_.push_back({std::move(name), std::move(check)});
  return copy;
}

}  // namespace switchboard::protocol
