// Compilation of a fast_schema: one node per subschema (memoised by
// address, so $refs and recursion share nodes), refusing (not_eligible)
// anything outside the subset the evaluator mirrors.
#include "fast_program.hpp"

#include <boost/json/string.hpp>

#include <cmath>
#include <string_view>
#include <unordered_map>

namespace switchboard::protocol::detail::fast_path {

namespace json = boost::json;

namespace {

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// Rejects numbers valijson cannot compare (beyond int64) inside const/enum.
void require_comparable(const json::value& v, std::string_view keyword) {
  if (v.is_uint64()) throw not_eligible{std::string(keyword) + " holds a number beyond int64"};
  if (const auto* a = v.if_array()) {
    for (const auto& e : *a) require_comparable(e, keyword);
  } else if (const auto* o = v.if_object()) {
    for (const auto& [k, e] : *o) {
      if (has_nul(k)) throw not_eligible{std::string(keyword) + " holds a key with NUL"};
      require_comparable(e, keyword);
    }
  }
}

std::uint64_t non_negative(const json::value& v, std::string_view keyword) {
  if (!v.is_int64() || v.get_int64() < 0) {
    throw not_eligible{std::string(keyword) + " is not a non-negative integer"};
  }
  return static_cast<std::uint64_t>(v.get_int64());
}

double number(const json::value& v, std::string_view keyword) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_double()) return v.get_double();
  throw not_eligible{std::string(keyword) + " is not an int64 or double number"};
}

std::uint8_t type_bit_of(const json::value& name) {
  if (!name.is_string()) throw not_eligible{"type names must be strings"};
  const std::string_view s = name.get_string();
  if (s == "null") return t_null;
  if (s == "boolean") return t_boolean;
  if (s == "object") return t_object;
  if (s == "array") return t_array;
  if (s == "number") return t_number;
  if (s == "integer") return t_integer;
  if (s == "string") return t_string;
  throw not_eligible{"type '" + std::string(s) + "'"};
}

// Keywords valijson's draft-07 parser applies that the fast path does not.
// Keywords valijson does not read at all (title, description, default,
// examples, $comment, $schema, definitions, $defs, unknown words) are
// annotations for both.
bool unsupported_keyword(std::string_view key) {
  return key == "id" || key == "if" || key == "contains" || key == "dependencies" ||
         key == "propertyNames" || key == "divisibleBy";
}

class compiler {
 public:
  explicit compiler(fast_schema::program& out) : out_(out) {}

  int compile(const json::value& schema, bool is_root) {
    if (const auto it = memo_.find(&schema); it != memo_.end()) return it->second;
    const int index = static_cast<int>(out_.nodes.size());
    out_.nodes.emplace_back();
    memo_.emplace(&schema, index);
    out_.nodes[static_cast<std::size_t>(index)] = build(schema, is_root);
    return index;
  }

 private:
  using node = fast_schema::program::node;

  node build(const json::value& schema, bool is_root) {
    node n;
    if (schema.is_bool()) {
      n.always_false = !schema.get_bool();
      return n;
    }
    const auto* obj = schema.if_object();
    if (!obj) throw not_eligible{"a subschema is neither an object nor a boolean"};
    if (const auto* ref = obj->if_contains("$ref")) {
      n.ref = compile(resolve(*ref), false);
      return n;  // valijson ignores a $ref's siblings
    }
    for (const auto& [key, value] : *obj) {
      if (unsupported_keyword(key)) throw not_eligible{"keyword '" + std::string(key) + "'"};
      if (key == "$id" && !is_root) throw not_eligible{"a nested $id"};
      (void)value;
    }
    if (const auto* type = obj->if_contains("type")) {
      if (const auto* list = type->if_array()) {
        if (list->empty()) throw not_eligible{"an empty type list"};
        for (const auto& t : *list) n.types |= type_bit_of(t);
      } else {
        n.types = type_bit_of(*type);
      }
    }
    if (const auto* c = obj->if_contains("const")) {
      require_comparable(*c, "const");
      n.const_value = c;
    }
    if (const auto* e = obj->if_contains("enum")) {
      if (!e->is_array()) throw not_eligible{"enum is not an array"};
      require_comparable(*e, "enum");
      n.enum_values = &e->get_array();
    }
    if (const auto* f = obj->if_contains("format")) {
      if (!f->is_string() || f->get_string().empty()) throw not_eligible{"format is not a string"};
      const std::string_view name = f->get_string();
      n.date = date_format_named(name);  // checked as valijson checks it; other names annotate
      n.format = true;
    }
    numbers(*obj, n);
    strings(*obj, n);
    arrays(*obj, n);
    objects(*obj, n);
    n.all_of = schema_list(*obj, "allOf");
    n.any_of = schema_list(*obj, "anyOf");
    n.one_of = schema_list(*obj, "oneOf");
    if (const auto* s = obj->if_contains("not")) n.not_ = compile(*s, false);
    return n;
  }

  void numbers(const json::object& obj, node& n) {
    if (const auto* v = obj.if_contains("maximum")) n.maxima.push_back({number(*v, "maximum"), false});
    if (const auto* v = obj.if_contains("exclusiveMaximum")) {
      n.maxima.push_back({number(*v, "exclusiveMaximum"), true});
    }
    if (const auto* v = obj.if_contains("minimum")) n.minima.push_back({number(*v, "minimum"), false});
    if (const auto* v = obj.if_contains("exclusiveMinimum")) {
      n.minima.push_back({number(*v, "exclusiveMinimum"), true});
    }
    if (const auto* v = obj.if_contains("multipleOf")) {
      if (v->is_int64() && v->get_int64() > 0) {
        n.multiple_int = true;
        n.multiple_of_int = v->get_int64();
      } else if (v->is_double() && v->get_double() > 0 && std::isfinite(v->get_double())) {
        n.multiple_double = true;
        n.multiple_of_double = v->get_double();
      } else {
        throw not_eligible{"multipleOf is not a positive int64 or double"};
      }
    }
  }

  void strings(const json::object& obj, node& n) {
    if (const auto* v = obj.if_contains("minLength")) n.min_length = non_negative(*v, "minLength");
    if (const auto* v = obj.if_contains("maxLength")) n.max_length = non_negative(*v, "maxLength");
    if (const auto* v = obj.if_contains("pattern")) {
      if (!v->is_string()) throw not_eligible{"pattern is not a string"};
      n.patterns.push_back(regex(v->get_string()));
    }
  }

  void arrays(const json::object& obj, node& n) {
    if (const auto* v = obj.if_contains("minItems")) n.min_items = non_negative(*v, "minItems");
    if (const auto* v = obj.if_contains("maxItems")) n.max_items = non_negative(*v, "maxItems");
    if (const auto* v = obj.if_contains("uniqueItems")) {
      if (!v->is_bool()) throw not_eligible{"uniqueItems is not a boolean"};
      n.unique_items = v->get_bool();
    }
    const auto* items = obj.if_contains("items");
    if (!items) return;  // additionalItems alone means nothing to valijson
    if (const auto* list = items->if_array()) {
      n.tuple = true;
      for (const auto& s : *list) n.tuple_items.push_back(compile(s, false));
      if (const auto* extra = obj.if_contains("additionalItems")) {
        extra_schema(*extra, "additionalItems", n.additional_items, n.additional_items_schema);
      }
    } else {
      n.items = compile(*items, false);
    }
  }

  void objects(const json::object& obj, node& n) {
    if (const auto* v = obj.if_contains("minProperties")) {
      n.min_properties = non_negative(*v, "minProperties");
    }
    if (const auto* v = obj.if_contains("maxProperties")) {
      n.max_properties = non_negative(*v, "maxProperties");
    }
    if (const auto* v = obj.if_contains("required")) {
      if (!v->is_array()) throw not_eligible{"required is not an array"};
      for (const auto& name : v->get_array()) {
        if (!name.is_string() || has_nul(name.get_string())) {
          throw not_eligible{"a required name is not a plain string"};
        }
        n.required.emplace_back(name.get_string());
      }
    }
    const auto* properties = obj.if_contains("properties");
    const auto* patterns = obj.if_contains("patternProperties");
    const auto* extra = obj.if_contains("additionalProperties");
    n.has_properties = properties || patterns || extra;
    if (properties) {
      if (!properties->is_object()) throw not_eligible{"properties is not an object"};
      for (const auto& [name, s] : properties->get_object()) {
        if (has_nul(name)) throw not_eligible{"a property name holds NUL"};
        const int child = compile(s, false);
        n.properties.emplace_back(std::string(name), child);
      }
    }
    if (patterns) {
      if (!patterns->is_object()) throw not_eligible{"patternProperties is not an object"};
      for (const auto& [pattern, s] : patterns->get_object()) {
        const int re = regex(pattern);
        const int child = compile(s, false);
        n.pattern_properties.emplace_back(re, child);
      }
    }
    if (extra) extra_schema(*extra, "additionalProperties", n.additional_properties, n.additional_properties_schema);
  }

  void extra_schema(const json::value& v, std::string_view keyword, extra_kind& kind, int& schema) {
    if (v.is_bool()) {
      kind = v.get_bool() ? extra_kind::any : extra_kind::none;
    } else if (v.is_object()) {
      kind = extra_kind::schema;
      schema = compile(v, false);
    } else {
      throw not_eligible{std::string(keyword) + " is neither a boolean nor a schema"};
    }
  }

  std::vector<int> schema_list(const json::object& obj, std::string_view keyword) {
    std::vector<int> out;
    const auto* v = obj.if_contains(keyword);
    if (!v) return out;
    if (!v->is_array() || v->get_array().empty()) {
      throw not_eligible{std::string(keyword) + " is not a non-empty array"};
    }
    for (const auto& s : v->get_array()) {
      const int child = compile(s, false);
      out.push_back(child);
    }
    return out;
  }

  int regex(std::string_view pattern) {
    if (has_nul(pattern)) throw not_eligible{"a pattern holds NUL"};
    std::string why;
    auto compiled = ecma_regex::compile(pattern, why);
    if (!compiled) throw not_eligible{"pattern '" + std::string(pattern) + "': " + why};
    out_.regexes.push_back(std::move(compiled));
    return static_cast<int>(out_.regexes.size() - 1);
  }

  // Local references only: "#" or "#/a/b" with ~0/~1 escapes; no percent
  // escapes, no trailing slash (valijson trims those), nothing remote.
  const json::value& resolve(const json::value& ref) {
    if (!ref.is_string()) throw not_eligible{"$ref is not a string"};
    const std::string_view text = ref.get_string();
    if (text.empty() || text.front() != '#') throw not_eligible{"$ref '" + std::string(text) + "' is not local"};
    const std::string_view pointer = text.substr(1);
    if (pointer.find('%') != std::string_view::npos || has_nul(pointer) ||
        (!pointer.empty() && (pointer.front() != '/' || pointer.back() == '/'))) {
      throw not_eligible{"$ref '" + std::string(text) + "' needs decoding"};
    }
    boost::system::error_code ec;
    const json::value* target = out_.document.find_pointer(pointer, ec);
    if (!target || ec) throw not_eligible{"$ref '" + std::string(text) + "' does not resolve"};
    // Array indices: plain digits without a leading zero, as valijson reads them.
    std::size_t start = 1;
    while (start < pointer.size()) {
      const std::size_t end = std::min(pointer.find('/', start), pointer.size());
      const std::string_view token = pointer.substr(start, end - start);
      if (token.empty()) throw not_eligible{"$ref '" + std::string(text) + "' has an empty token"};
      start = end + 1;
    }
    return *target;
  }

  fast_schema::program& out_;
  std::unordered_map<const json::value*, int> memo_;
};

}  // namespace

std::unique_ptr<fast_schema::program> compile_program(const json::value& schema) {
  auto checks = std::make_unique<fast_schema::program>();
  checks->document = schema;  // const/enum nodes point into this copy
  compiler c(*checks);
  c.compile(checks->document, true);
  return checks;
}

}  // namespace switchboard::protocol::detail::fast_path
