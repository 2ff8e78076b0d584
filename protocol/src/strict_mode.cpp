// Strict-mode schemas: the rewrite for OpenAI `strict: true` and the check of
// what a provider's schema enforcement cannot express.
//
// Provider limits, from the providers' structured-output documentation:
//  * OpenAI (Structured Outputs, strict: true): every object needs
//    additionalProperties: false and every property in `required`; the root
//    must be an object, not anyOf. Not supported: patternProperties,
//    unevaluatedProperties, propertyNames, minProperties, maxProperties,
//    minLength, maxLength, unevaluatedItems, contains, minContains,
//    maxContains, uniqueItems, and the composition keywords allOf, oneOf, not,
//    if/then/else, dependencies (dependentRequired/dependentSchemas). Later
//    model snapshots accept pattern, format, minimum/maximum, multipleOf and
//    minItems/maxItems, so those are not flagged.
//  * Anthropic (structured outputs): additionalProperties other than false,
//    numeric constraints (minimum, maximum, exclusive*, multipleOf), string
//    length constraints (minLength, maxLength), array constraints other than
//    minItems 0 or 1 (maxItems, uniqueItems, contains), external $refs.
//    Optional properties are allowed.
#include <switchboard/protocol/strict_mode.hpp>

#include "detail/json_pointer.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <array>
#include <string_view>

namespace switchboard::protocol {

namespace json = boost::json;

std::string unsupported_keyword::to_string() const {
  return (path.empty() ? std::string("(root)") : path) + ": " +
         (reason.empty() ? "'" + keyword + "' is not supported in strict mode" : reason);
}

namespace {

// Keywords whose value is one subschema / an array of them / a map of them.
constexpr std::array<std::string_view, 8> single_subschema{
    "items", "additionalItems", "additionalProperties", "not", "if", "then", "else", "contains"};
constexpr std::array<std::string_view, 3> subschema_lists{"anyOf", "oneOf", "allOf"};
constexpr std::array<std::string_view, 4> subschema_maps{"properties", "definitions", "$defs",
                                                         "patternProperties"};

bool is_object_schema(const json::object& schema) {
  if (schema.contains("properties")) return true;
  const auto* type = schema.if_contains("type");
  if (!type) return false;
  if (type->is_string()) return type->get_string() == "object";
  if (const auto* list = type->if_array()) {
    return std::ranges::any_of(*list, [](const json::value& t) { return t == "object"; });
  }
  return false;
}

bool allows_null(const json::object& schema) {
  if (const auto* type = schema.if_contains("type")) {
    if (type->is_string()) return type->get_string() == "null";
    if (const auto* list = type->if_array()) {
      return std::ranges::any_of(*list, [](const json::value& t) { return t == "null"; });
    }
  }
  return false;
}

// An optional property becomes required-but-nullable, so the model can still
// "leave it out" by answering null.
json::value make_nullable(json::value schema) {
  auto* obj = schema.if_object();
  if (!obj || allows_null(*obj)) return schema;
  if (auto* type = obj->if_contains("type"); type && !obj->contains("const")) {
    if (type->is_string()) {
      *type = json::array{type->get_string(), "null"};
    } else if (auto* list = type->if_array()) {
      list->emplace_back("null");
    }
    if (auto* values = obj->if_contains("enum"); values && values->is_array()) {
      auto& list = values->get_array();
      if (std::ranges::find(list, json::value(nullptr)) == list.end()) list.emplace_back(nullptr);
    }
    return schema;
  }
  if (auto* any = obj->if_contains("anyOf"); any && any->is_array() && obj->size() == 1) {
    any->get_array().push_back(json::object{{"type", "null"}});
    return schema;
  }
  return json::object{{"anyOf", json::array{std::move(schema), json::object{{"type", "null"}}}}};
}

json::value strictify(const json::value& node);

void strictify_object(json::object& schema) {
  json::array required_before;
  if (const auto* req = schema.if_contains("required"); req && req->is_array()) {
    required_before = req->get_array();
  }
  json::array required;
  if (auto* props = schema.if_contains("properties"); props && props->is_object()) {
    for (auto& [name, prop] : props->get_object()) {
      const bool was_required =
          std::ranges::find(required_before, json::value(name)) != required_before.end();
      if (!was_required) prop = make_nullable(std::move(prop));
      required.emplace_back(name);
    }
  }
  schema["required"] = std::move(required);
  const auto* extra = schema.if_contains("additionalProperties");
  if (!extra || (extra->is_bool() && extra->get_bool())) {
    // A schema-valued additionalProperties (a map) cannot be made strict
    // without changing its meaning; strict_mode_unsupported reports it.
    schema["additionalProperties"] = false;
  }
}

json::value strictify(const json::value& node) {
  const auto* in = node.if_object();
  if (!in) return node;
  json::object out = *in;
  for (auto& [key, value] : out) {
    if (std::ranges::find(single_subschema, std::string_view(key)) != single_subschema.end()) {
      if (value.is_array() && key == "items") {
        for (auto& item : value.get_array()) item = strictify(item);
      } else {
        value = strictify(value);
      }
    } else if (std::ranges::find(subschema_lists, std::string_view(key)) != subschema_lists.end()) {
      if (auto* list = value.if_array()) {
        for (auto& item : *list) item = strictify(item);
      }
    } else if (std::ranges::find(subschema_maps, std::string_view(key)) != subschema_maps.end()) {
      if (auto* map = value.if_object()) {
        for (auto& [name, item] : *map) item = strictify(item);
      }
    }
  }
  if (is_object_schema(out)) strictify_object(out);
  return out;
}

// ---------------------------------------------------------------------------
// The check.

struct provider_rules {
  std::string_view label;
  std::vector<std::string_view> unsupported;
  bool requires_all_required;
  bool root_must_be_object;
};

const provider_rules& rules_for(strict_provider provider) {
  static const provider_rules openai{
      "OpenAI strict mode",
      {"patternProperties", "unevaluatedProperties", "propertyNames", "minProperties",
       "maxProperties", "minLength", "maxLength", "unevaluatedItems", "contains", "minContains",
       "maxContains", "uniqueItems", "allOf", "oneOf", "not", "if", "then", "else",
       "dependencies", "dependentRequired", "dependentSchemas"},
      true,
      true};
  static const provider_rules anthropic{
      "Anthropic structured outputs",
      {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
       "maxLength", "maxItems", "uniqueItems", "contains", "minContains", "maxContains"},
      false,
      false};
  return provider == strict_provider::openai ? openai : anthropic;
}

class checker {
 public:
  checker(const provider_rules& rules, std::vector<unsupported_keyword>& out)
      : rules_(rules), out_(out) {}

  void check_root(const json::value& schema) {
    if (rules_.root_must_be_object) {
      const auto* obj = schema.if_object();
      if (!obj || !is_object_schema(*obj) || obj->contains("anyOf")) {
        report("", "type", "the root schema must be an object schema (not anyOf)");
      }
    }
    check(schema, "");
  }

 private:
  void report(std::string path, std::string keyword, std::string why) {
    out_.push_back({std::move(path), keyword, std::string(rules_.label) + ": " + why});
  }

  void check(const json::value& node, const std::string& path) {
    const auto* obj = node.if_object();
    if (!obj) return;
    for (const auto& [key, value] : *obj) {
      const std::string_view k = key;
      if (std::ranges::find(rules_.unsupported, k) != rules_.unsupported.end()) {
        report(path, std::string(k), "'" + std::string(k) + "' is not supported");
      }
      if (k == "$ref" && value.is_string() && !value.get_string().starts_with("#")) {
        report(path, "$ref", "external reference '" + std::string(value.get_string()) +
                                 "' is not supported (only local #/... references)");
      }
      if (k == "minItems" && value.is_number() && value.to_number<double>() > 1 &&
          &rules_ == &rules_for(strict_provider::anthropic)) {
        report(path, "minItems", "minItems other than 0 or 1 is not supported");
      }
    }
    if (is_object_schema(*obj)) check_object(*obj, path);
    recurse(*obj, path);
  }

  void check_object(const json::object& obj, const std::string& path) {
    const auto* extra = obj.if_contains("additionalProperties");
    if (!extra || !(extra->is_bool() && !extra->get_bool())) {
      report(path, "additionalProperties", "every object needs additionalProperties: false");
    }
    if (!rules_.requires_all_required) return;
    const auto* props = obj.if_contains("properties");
    if (!props || !props->is_object()) return;
    const auto* req = obj.if_contains("required");
    for (const auto& [name, prop] : props->get_object()) {
      const bool listed = req && req->is_array() &&
                          std::ranges::find(req->get_array(), json::value(name)) !=
                              req->get_array().end();
      if (!listed) {
        report(detail::append_pointer(detail::append_pointer(path, "properties"), name),
               "required", "property '" + std::string(name) +
                               "' must be listed in 'required' (make it nullable instead of optional)");
      }
    }
  }

  void recurse(const json::object& obj, const std::string& path) {
    for (const auto& [key, value] : obj) {
      const std::string child = detail::append_pointer(path, key);
      const std::string_view k = key;
      if (std::ranges::find(single_subschema, k) != single_subschema.end()) {
        if (const auto* list = value.if_array()) {
          for (std::size_t i = 0; i < list->size(); ++i) {
            check((*list)[i], detail::append_pointer(child, std::to_string(i)));
          }
        } else {
          check(value, child);
        }
      } else if (std::ranges::find(subschema_lists, k) != subschema_lists.end()) {
        if (const auto* list = value.if_array()) {
          for (std::size_t i = 0; i < list->size(); ++i) {
            check((*list)[i], detail::append_pointer(child, std::to_string(i)));
          }
        }
      } else if (std::ranges::find(subschema_maps, k) != subschema_maps.end()) {
        if (const auto* map = value.if_object()) {
          for (const auto& [name, item] : *map) check(item, detail::append_pointer(child, name));
        }
      }
    }
  }

  const provider_rules& rules_;
  std::vector<unsupported_keyword>& out_;
};

// Leaves out of the schema sent to a provider the keywords its strict mode
// cannot take but that only narrow what is valid (minLength, not, if, ...):
// the model may then answer more loosely, and the local validation against
// the original schema still enforces them. oneOf becomes anyOf for the same
// reason. allOf and patternProperties stay: leaving them out would forbid
// answers the original allows (their properties would become "additional").
class relaxer {
 public:
  relaxer(const provider_rules& rules, std::vector<unsupported_keyword>& out) : rules_(rules), out_(out) {}

  void relax(json::value& node, const std::string& path) {
    auto* obj = node.if_object();
    if (!obj) return;
    drop_narrowing_keywords(*obj, path);
    for (auto& [key, value] : *obj) {
      const std::string child = detail::append_pointer(path, key);
      const std::string_view k = key;
      if (std::ranges::find(single_subschema, k) != single_subschema.end()) {
        each_schema(value, child);
      } else if (std::ranges::find(subschema_lists, k) != subschema_lists.end()) {
        each_schema(value, child);
      } else if (std::ranges::find(subschema_maps, k) != subschema_maps.end()) {
        if (auto* map = value.if_object()) {
          for (auto& [name, item] : *map) relax(item, detail::append_pointer(child, name));
        }
      }
    }
  }

 private:
  static bool keeps(std::string_view keyword) { return keyword == "allOf" || keyword == "patternProperties"; }

  void each_schema(json::value& value, const std::string& path) {
    if (auto* list = value.if_array()) {
      for (std::size_t i = 0; i < list->size(); ++i) relax((*list)[i], detail::append_pointer(path, std::to_string(i)));
    } else {
      relax(value, path);
    }
  }

  void drop_narrowing_keywords(json::object& obj, const std::string& path) {
    for (const std::string_view keyword : rules_.unsupported) {
      if (keeps(keyword) || !obj.contains(keyword)) continue;
      if (keyword == "oneOf" && !obj.contains("anyOf")) {
        obj["anyOf"] = std::move(obj["oneOf"]);
        out_.push_back({path, "oneOf", std::string(rules_.label) + ": 'oneOf' sent as 'anyOf'; checked locally"});
      } else {
        out_.push_back({path, std::string(keyword),
                        std::string(rules_.label) + ": '" + std::string(keyword) + "' left out; checked locally"});
      }
      obj.erase(keyword);
    }
  }

  const provider_rules& rules_;
  std::vector<unsupported_keyword>& out_;
};

}  // namespace

json::value make_strict(const json::value& schema) { return strictify(schema); }

std::vector<unsupported_keyword> strict_mode_unsupported(const json::value& schema,
                                                         strict_provider provider) {
  std::vector<unsupported_keyword> out;
  checker(rules_for(provider), out).check_root(schema);
  return out;
}

strict_form make_strict_form(const json::value& schema, strict_provider provider) {
  std::vector<unsupported_keyword> relaxed;
  json::value sent = schema;
  relaxer(rules_for(provider), relaxed).relax(sent, "");
  strict_form form{make_strict(sent), {}, std::move(relaxed)};
  // Checked on the converted schema: the conversion supplies what strict mode
  // requires (additionalProperties, required); keywords it cannot express remain.
  form.unsupported = strict_mode_unsupported(form.schema.json(), provider);
  return form;
}

}  // namespace switchboard::protocol
