// The rewrite walks the copy iteratively (a frame per object in a schema
// position), rewriting an object's keywords before it pushes that object's
// children, so the children's addresses stay valid while they wait.
#include "reference_document.hpp"

#include "../detail/json_pointer.hpp"
#include "schema_documents.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <array>
#include <deque>
#include <optional>

namespace switchboard::protocol::detail {

namespace json = boost::json;

namespace {

constexpr std::string_view reserved_prefix = "$switchboard:";

// Keywords whose value is data, never a schema.
bool is_data_keyword(std::string_view key) {
  return key == "enum" || key == "const" || key == "default" || key == "examples";
}

// Keywords whose value maps names to schemas.
bool is_map_keyword(std::string_view key) {
  return key == "properties" || key == "definitions" || key == "$defs" || key == "dependencies";
}

// valijson reads keyword strings through c_str().
std::string_view up_to_nul(std::string_view s) { return s.substr(0, s.find('\0')); }

// valijson's maybeBool(): true, false, "true" and "false".
std::optional<bool> as_bool(const json::value& v) {
  if (v.is_bool()) return v.get_bool();
  if (v.is_string() && (v.get_string() == "true" || v.get_string() == "false")) return v.get_string() == "true";
  return std::nullopt;
}

// Replaces the keyword `from` with `to` holding `value`.
void replace(json::object& obj, std::string_view from, std::string_view to, std::int64_t value) {
  obj.erase(from);
  obj.emplace(to, value);
}

class preparer {
 public:
  preparer(const std::string& uri, keyword_table& table) : uri_(uri), table_(table) {}

  json::value run(const json::value& document) {
    json::value copy = document;
    std::vector<frame> stack{{&copy, ""}};
    while (!stack.empty()) {
      const frame f = std::move(stack.back());
      stack.pop_back();
      if (auto* obj = f.node->if_object()) visit(*obj, f, stack);
    }
    if (!moved_.empty()) {  // only an object schema can have patternProperties
      json::array list;
      for (auto& schema : moved_) list.push_back(std::move(schema));
      copy.as_object()[moved_keyword] = std::move(list);
    }
    return copy;
  }

 private:
  struct frame {
    json::value* node;
    std::string pointer;  // in the document as written, for messages
  };

  std::string location(const std::string& pointer) const { return schema_location(uri_, pointer); }

  void visit(json::object& obj, const frame& f, std::vector<frame>& stack) {
    for (const auto& [key, value] : obj) {
      if (std::string_view(key).starts_with(reserved_prefix)) {
        throw schema_refusal("keyword '" + std::string(key) + "' at " +
                             location(append_pointer(f.pointer, key)) + " is reserved");
      }
    }
    if (const auto* id = obj.if_contains("id"); id && id->is_string()) table_.uses_id = true;
    if (const auto* p = obj.if_contains("pattern"); p && p->is_string()) {
      const std::size_t index = table_.add_pattern(up_to_nul(p->get_string()),
                                                   location(append_pointer(f.pointer, "pattern")));
      replace(obj, "pattern", pattern_keyword, static_cast<std::int64_t>(index));
    }
    if (const auto* format = obj.if_contains("format"); format && format->is_string()) {
      const date_format kind = date_format_named(format->get_string());
      if (kind != date_format::none) replace(obj, "format", format_keyword, static_cast<std::int64_t>(kind));
    }
    if (const auto* patterns = obj.if_contains("patternProperties"); patterns && patterns->is_object()) {
      group(obj, f, stack);
    }
    push_children(obj, f, stack);
  }

  // Moves `schema` to the document's list of moved subschemas; the $ref
  // text that reaches it there.
  std::string move_aside(json::value&& schema, std::string pointer, std::vector<frame>& stack) {
    const std::string ref = uri_ + "#/" + std::string(moved_keyword) + "/" + std::to_string(moved_.size());
    moved_.push_back(std::move(schema));
    stack.push_back({&moved_.back(), std::move(pointer)});
    return ref;
  }

  void group(json::object& obj, const frame& f, std::vector<frame>& stack) {
    property_group g;
    g.location = location(f.pointer);
    if (const auto* properties = obj.if_contains("properties"); properties && properties->is_object()) {
      for (const auto& [name, schema] : properties->get_object()) g.property_names.emplace(up_to_nul(name));
    }
    json::value patterns = std::move(obj.at("patternProperties"));
    obj.erase("patternProperties");
    const std::string base = append_pointer(f.pointer, "patternProperties");
    for (auto& [text, schema] : patterns.get_object()) {
      const std::string at = append_pointer(base, text);
      const std::size_t index = table_.add_pattern(up_to_nul(text), location(at));
      g.patterns.push_back({index, move_aside(std::move(schema), at, stack)});
    }
    std::ranges::sort(g.patterns, {}, [&](const auto& child) -> const std::string& {
      return table_.patterns[child.pattern].text;
    });
    if (auto* extra = obj.if_contains("additionalProperties")) {
      const std::string at = append_pointer(f.pointer, "additionalProperties");
      if (const auto flag = as_bool(*extra)) {
        g.additional = *flag ? property_group::extra::any : property_group::extra::none;
      } else if (extra->is_object()) {
        g.additional = property_group::extra::schema;
        g.additional_ref = move_aside(std::move(*extra), at, stack);
      } else {
        g.invalid = "additionalProperties at " + location(at) + " is neither a boolean nor a schema";
      }
      obj.erase("additionalProperties");
    }
    obj.emplace(group_keyword, static_cast<std::int64_t>(table_.groups.size()));
    table_.groups.push_back(std::move(g));
  }

  void push_children(json::object& obj, const frame& f, std::vector<frame>& stack) {
    for (auto& [key, value] : obj) {
      if (is_data_keyword(key)) continue;
      const std::string pointer = append_pointer(f.pointer, key);
      if (is_map_keyword(key)) {
        if (auto* map = value.if_object()) {
          for (auto& [name, child] : *map) stack.push_back({&child, append_pointer(pointer, name)});
        }
      } else if (value.is_object()) {
        stack.push_back({&value, pointer});
      } else if (auto* list = value.if_array()) {
        for (std::size_t i = 0; i < list->size(); ++i) {
          stack.push_back({&(*list)[i], append_pointer(pointer, std::to_string(i))});
        }
      }
    }
  }

  const std::string& uri_;
  keyword_table& table_;
  std::deque<json::value> moved_;  // a deque: frames point into it while it grows
};

}  // namespace

std::size_t keyword_table::add_pattern(std::string_view text, std::string location) {
  schema_pattern entry{std::string(text), std::move(location), nullptr, {}};
  if (const auto known = pattern_by_text.find(entry.text); known != pattern_by_text.end()) {
    entry.regex = patterns[known->second].regex;
    entry.why_not = patterns[known->second].why_not;
  } else {
    if (pattern_by_text.size() >= max_schema_patterns) {
      throw schema_refusal("the schema has more than " + std::to_string(max_schema_patterns) +
                           " distinct patterns");
    }
    entry.regex = ecma_regex::compile(entry.text, entry.why_not);
    pattern_by_text.emplace(entry.text, patterns.size());
  }
  patterns.push_back(std::move(entry));
  return patterns.size() - 1;
}

json::value prepare_for_valijson(const json::value& document, const std::string& uri, keyword_table& table) {
  return preparer(uri, table).run(document);
}

}  // namespace switchboard::protocol::detail
