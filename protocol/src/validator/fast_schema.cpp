// fast_schema: the schema compiled into a flat vector of nodes, evaluated
// recursively with three outcomes (pass, fail, unsure). Every rule below
// mirrors a visit() of valijson's ValidationVisitor (Debian 12
// libvalijson-dev) with strict types, the mode compiled_schema uses.
#include "fast_schema.hpp"

#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <regex>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace switchboard::protocol::detail {

namespace json = boost::json;

namespace {

std::atomic<bool> reference_only{false};

enum class verdict : std::uint8_t { pass, fail, unsure };

// valijson reads strings through c_str(): a string ends at its first NUL.
std::string_view c_view(const json::string& s) noexcept {
  const auto* nul = static_cast<const char*>(std::memchr(s.data(), '\0', s.size()));
  return {s.data(), nul ? static_cast<std::size_t>(nul - s.data()) : s.size()};
}

enum type_bit : std::uint8_t {
  t_null = 1,
  t_boolean = 2,
  t_object = 4,
  t_array = 8,
  t_number = 16,
  t_integer = 32,
  t_string = 64,
};

enum class extra_kind : std::uint8_t { any, none, schema };  // additionalItems/-Properties

struct bound {
  double value = 0;
  bool exclusive = false;
};

}  // namespace

struct fast_schema::program {
  struct node {
    bool always_false = false;
    int ref = -1;  // a $ref node: only the target counts (draft-07)
    std::uint8_t types = 0;  // 0: no "type"
    const json::value* const_value = nullptr;
    const json::array* enum_values = nullptr;
    bool format = false;  // an annotation that valijson still reads as a string

    std::vector<bound> maxima, minima;
    bool multiple_int = false, multiple_double = false;
    std::int64_t multiple_of_int = 1;
    double multiple_of_double = 1;

    std::optional<std::uint64_t> min_length, max_length;
    std::vector<int> patterns;  // indices into regexes

    std::optional<std::uint64_t> min_items, max_items;
    bool unique_items = false;
    int items = -1;                 // single "items" schema
    bool tuple = false;             // "items" is an array
    std::vector<int> tuple_items;
    extra_kind additional_items = extra_kind::any;
    int additional_items_schema = -1;

    std::optional<std::uint64_t> min_properties, max_properties;
    std::vector<std::string> required;
    bool has_properties = false;  // properties/patternProperties/additionalProperties
    std::vector<std::pair<std::string, int>> properties;
    std::vector<std::pair<int, int>> pattern_properties;  // regex index, schema
    extra_kind additional_properties = extra_kind::any;
    int additional_properties_schema = -1;

    std::vector<int> all_of, any_of, one_of;
    int not_ = -1;
  };

  std::vector<node> nodes;
  std::vector<std::regex> regexes;
  // The document the nodes point into (const/enum values); owned by the caller's copy.
  json::value document;

  verdict eval(int index, const json::value& v, int depth) const noexcept;

 private:
  verdict eval_number(const node& n, const json::value& v) const noexcept;
  verdict eval_string(const node& n, const json::value& v) const noexcept;
  verdict eval_array(const node& n, const json::array& a, int depth) const noexcept;
  verdict eval_object(const node& n, const json::object& o, int depth) const noexcept;
  verdict eval_combinators(const node& n, const json::value& v, int depth) const noexcept;
};

namespace {

// ---------------------------------------------------------------------------
// Equality as valijson's BasicAdapter::equalTo(other, strict = true): `a` is
// the schema side (const/enum value, or the earlier array element).

verdict equal(const json::value& a, const json::value& b) noexcept {
  if (a.is_null()) return b.is_null() ? verdict::pass : verdict::fail;
  if (a.is_bool()) return b.is_bool() && b.get_bool() == a.get_bool() ? verdict::pass : verdict::fail;
  if (a.is_int64() || a.is_double()) {
    // A number beyond int64 is no number to valijson's adapter: never equal.
    if (!b.is_int64() && !b.is_double()) return verdict::fail;
    const double x = a.is_int64() ? static_cast<double>(a.get_int64()) : a.get_double();
    const double y = b.is_int64() ? static_cast<double>(b.get_int64()) : b.get_double();
    return x == y ? verdict::pass : verdict::fail;
  }
  if (a.is_string()) {
    return b.is_string() && c_view(b.get_string()) == c_view(a.get_string()) ? verdict::pass
                                                                             : verdict::fail;
  }
  if (a.is_array()) {
    const auto& x = a.get_array();
    const auto* y = b.if_array();
    if (!y || y->size() != x.size()) return verdict::fail;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const verdict r = equal(x[i], (*y)[i]);
      if (r != verdict::pass) return r;
    }
    return verdict::pass;
  }
  if (a.is_object()) {
    const auto& x = a.get_object();
    const auto* y = b.if_object();
    if (!y || y->size() != x.size()) return verdict::fail;
    for (const auto& [key, value] : *y) {
      const auto* mine = x.if_contains(key);
      if (!mine) return verdict::fail;
      const verdict r = equal(*mine, value);
      if (r != verdict::pass) return r;
    }
    return verdict::pass;
  }
  return verdict::fail;
}

// The number of characters as valijson's utils::u8_strlen counts them: a
// lead byte and the continuation bytes after it; a sequence decoding to 0
// (an overlong NUL) ends the count. nullopt where valijson's decoder would
// read out of its table (more than five continuation bytes).
std::optional<std::uint64_t> u8_length(std::string_view s) noexcept {
  static constexpr std::uint32_t offsets[6] = {0x00000000UL, 0x00003080UL, 0x000E2080UL,
                                               0x03C82080UL, 0xFA082080UL, 0x82082080UL};
  std::uint64_t count = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    std::uint64_t ch = 0;
    int size = 0;
    do {
      ch <<= 6;
      ch += static_cast<unsigned char>(s[i++]);
      ++size;
    } while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
    if (size > 6) return std::nullopt;
    ch -= offsets[size - 1];
    if (ch == 0) break;
    ++count;
  }
  return count;
}

// valijson's maybeInteger()/asInteger() on a string: an istream read of an
// int64 that consumes the whole text.
std::optional<std::int64_t> string_as_integer(std::string_view s) {
  std::istringstream in{std::string(s)};
  std::int64_t x = 0;
  char c = 0;
  if (!(in >> x) || in.get(c)) return std::nullopt;
  return x;
}

// valijson's maybeDouble()/asDouble() on a string: strtod over the whole text.
std::optional<double> string_as_double(std::string_view s) {
  const std::string text(s);
  const char* b = text.c_str();
  char* e = nullptr;
  const double x = std::strtod(b, &e);
  if (e == b || e != b + text.size()) return std::nullopt;
  return x;
}

// static_cast<int64_t>(d) where it is defined; valijson does the cast anyway.
std::optional<std::int64_t> truncate_double(double d) noexcept {
  if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0)) return std::nullopt;
  return static_cast<std::int64_t>(d);
}

verdict worst(verdict a, verdict b) noexcept {
  if (a == verdict::unsure || b == verdict::unsure) return verdict::unsure;
  return a == verdict::fail || b == verdict::fail ? verdict::fail : verdict::pass;
}

constexpr int max_depth = 200;

}  // namespace

// ---------------------------------------------------------------------------
// Evaluation. A node's checks all run even after one failed: valijson (which
// collects every error) would run them too, and one of them might be where
// valijson throws; "unsure" then has to win over "fail" so that an enclosing
// anyOf/not does not turn the failure into a pass valijson would not give.

verdict fast_schema::program::eval(int index, const json::value& v, int depth) const noexcept {
  if (depth > max_depth) return verdict::unsure;
  const node& n = nodes[static_cast<std::size_t>(index)];
  if (n.always_false) return verdict::fail;
  if (n.ref >= 0) return eval(n.ref, v, depth + 1);

  verdict result = verdict::pass;
  if (n.types) {
    bool ok = false;
    switch (v.kind()) {
      case json::kind::null: ok = n.types & t_null; break;
      case json::kind::bool_: ok = n.types & t_boolean; break;
      case json::kind::object: ok = n.types & t_object; break;
      case json::kind::array: ok = n.types & t_array; break;
      case json::kind::int64: ok = n.types & (t_number | t_integer); break;
      case json::kind::double_: ok = n.types & t_number; break;
      case json::kind::uint64: ok = false; break;  // valijson: neither number nor integer
      case json::kind::string: ok = n.types & t_string; break;
    }
    if (!ok) result = verdict::fail;
  }
  if (n.const_value) result = worst(result, equal(*n.const_value, v));
  if (n.enum_values) {
    verdict matched = verdict::fail;
    for (const auto& candidate : *n.enum_values) {
      matched = equal(candidate, v);
      if (matched != verdict::fail) break;
    }
    result = worst(result, matched);
  }
  if (n.format) {
    // FormatConstraint reads the value with asString(), which throws for
    // non-empty arrays and objects and for numbers beyond int64.
    if ((v.is_array() && !v.get_array().empty()) || (v.is_object() && !v.get_object().empty()) ||
        v.is_uint64()) {
      return verdict::unsure;
    }
  }
  result = worst(result, eval_number(n, v));
  if (result == verdict::unsure) return result;
  if (v.is_string()) result = worst(result, eval_string(n, v));
  if (result == verdict::unsure) return result;
  if (const auto* a = v.if_array()) result = worst(result, eval_array(n, *a, depth));
  if (result == verdict::unsure) return result;
  if (const auto* o = v.if_object()) result = worst(result, eval_object(n, *o, depth));
  if (result == verdict::unsure) return result;
  return worst(result, eval_combinators(n, v, depth));
}

verdict fast_schema::program::eval_number(const node& n, const json::value& v) const noexcept {
  verdict result = verdict::pass;
  // Bounds apply to int64 and double only: valijson's isNumber() is false
  // for a number beyond int64, so it skips them.
  if ((v.is_int64() || v.is_double()) && (!n.maxima.empty() || !n.minima.empty())) {
    const double d = v.is_int64() ? static_cast<double>(v.get_int64()) : v.get_double();
    for (const auto& m : n.maxima) {
      if (m.exclusive ? d >= m.value : d > m.value) result = verdict::fail;
    }
    for (const auto& m : n.minima) {
      if (m.exclusive ? d <= m.value : d < m.value) result = verdict::fail;
    }
  }
  if (n.multiple_int) {
    // MultipleOfIntConstraint: maybeInteger() first, then maybeDouble();
    // both accept numeric strings, neither checks the type.
    std::optional<std::int64_t> i;
    if (v.is_int64()) {
      i = v.get_int64();
    } else if (v.is_double()) {
      i = truncate_double(v.get_double());
      if (!i) return verdict::unsure;
    } else if (v.is_uint64()) {
      return verdict::fail;  // asDouble() fails: valijson reports it
    } else if (v.is_string()) {
      try {
        const auto text = c_view(v.get_string());
        i = string_as_integer(text);
        if (!i) {
          if (const auto d = string_as_double(text)) {
            i = truncate_double(*d);
            if (!i) return verdict::unsure;
          }
        }
      } catch (...) {
        return verdict::unsure;
      }
    }
    if (i && *i != 0 && *i % n.multiple_of_int != 0) result = verdict::fail;
  }
  if (n.multiple_double) {
    std::optional<double> d;
    if (v.is_int64()) {
      d = static_cast<double>(v.get_int64());
    } else if (v.is_double()) {
      d = v.get_double();
    } else if (v.is_uint64()) {
      return verdict::fail;
    } else if (v.is_string()) {
      try {
        const auto text = c_view(v.get_string());
        d = string_as_double(text);
        if (!d) {
          if (const auto i = string_as_integer(text)) d = static_cast<double>(*i);
        }
      } catch (...) {
        return verdict::unsure;
      }
    }
    if (d && *d != 0 && std::fabs(std::remainder(*d, n.multiple_of_double)) > DBL_EPSILON) {
      result = verdict::fail;
    }
  }
  return result;
}

verdict fast_schema::program::eval_string(const node& n, const json::value& v) const noexcept {
  const std::string_view s = c_view(v.get_string());
  verdict result = verdict::pass;
  if (n.min_length || n.max_length) {
    const auto length = u8_length(s);
    if (!length) return verdict::unsure;
    if (n.min_length && *length < *n.min_length) result = verdict::fail;
    if (n.max_length && *length > *n.max_length) result = verdict::fail;
  }
  for (const int pattern : n.patterns) {
    try {
      if (!std::regex_search(s.begin(), s.end(), regexes[static_cast<std::size_t>(pattern)])) {
        result = verdict::fail;
      }
    } catch (...) {
      return verdict::unsure;  // regex_error (complexity) or bad_alloc: valijson throws too
    }
  }
  return result;
}

verdict fast_schema::program::eval_array(const node& n, const json::array& a,
                                         int depth) const noexcept {
  verdict result = verdict::pass;
  if (n.min_items && a.size() < *n.min_items) result = verdict::fail;
  if (n.max_items && a.size() > *n.max_items) result = verdict::fail;
  if (n.unique_items && a.size() > 1) {
    for (std::size_t i = 0; i + 1 < a.size(); ++i) {
      for (std::size_t j = i + 1; j < a.size(); ++j) {
        if (equal(a[i], a[j]) == verdict::pass) result = verdict::fail;
      }
    }
  }
  if (n.items >= 0) {
    for (const auto& item : a) {
      result = worst(result, eval(n.items, item, depth + 1));
      if (result == verdict::unsure) return result;
    }
  }
  if (n.tuple) {
    bool tuple_failed = false;
    const std::size_t count = std::min(a.size(), n.tuple_items.size());
    for (std::size_t i = 0; i < count; ++i) {
      const verdict r = eval(n.tuple_items[i], a[i], depth + 1);
      if (r == verdict::unsure) return r;
      if (r == verdict::fail) tuple_failed = true;
    }
    if (tuple_failed) result = verdict::fail;
    if (n.additional_items == extra_kind::none && a.size() > n.tuple_items.size()) {
      result = verdict::fail;
    }
    if (n.additional_items == extra_kind::schema) {
      // valijson starts the additionalItems pass at the number of tuple items
      // that passed, so after a failure it may run it on tuple items too;
      // run it on every item then, only to learn whether valijson would throw.
      const std::size_t first = tuple_failed ? 0 : count;
      for (std::size_t i = first; i < a.size(); ++i) {
        const verdict r = eval(n.additional_items_schema, a[i], depth + 1);
        if (r == verdict::unsure) return r;
        if (r == verdict::fail && i >= count) result = verdict::fail;
      }
    }
  }
  return result;
}

verdict fast_schema::program::eval_object(const node& n, const json::object& o,
                                          int depth) const noexcept {
  verdict result = verdict::pass;
  if (n.min_properties && o.size() < *n.min_properties) result = verdict::fail;
  if (n.max_properties && o.size() > *n.max_properties) result = verdict::fail;
  for (const auto& name : n.required) {
    if (!o.contains(name)) result = verdict::fail;
  }
  if (!n.has_properties) return result;
  if (n.pattern_properties.empty() && n.additional_properties != extra_kind::schema) {
    // The common case: look the schema's properties up in the value; with
    // additionalProperties false, any member left unmatched fails.
    std::size_t matched = 0;
    for (const auto& [name, schema] : n.properties) {
      if (const auto* member = o.if_contains(name)) {
        ++matched;
        result = worst(result, eval(schema, *member, depth + 1));
        if (result == verdict::unsure) return result;
      }
    }
    if (n.additional_properties == extra_kind::none && matched != o.size()) result = verdict::fail;
    return result;
  }
  for (const auto& [key, member] : o) {
    bool matched = false;
    for (const auto& [name, schema] : n.properties) {
      if (name == key) {
        matched = true;
        result = worst(result, eval(schema, member, depth + 1));
        break;
      }
    }
    if (result == verdict::unsure) return result;
    for (const auto& [pattern, schema] : n.pattern_properties) {
      bool hit = false;
      try {
        hit = std::regex_search(key.begin(), key.end(), regexes[static_cast<std::size_t>(pattern)]);
      } catch (...) {
        return verdict::unsure;
      }
      if (hit) {
        matched = true;
        result = worst(result, eval(schema, member, depth + 1));
        if (result == verdict::unsure) return result;
      }
    }
    if (matched) continue;
    if (n.additional_properties == extra_kind::none) {
      result = verdict::fail;
    } else if (n.additional_properties == extra_kind::schema) {
      result = worst(result, eval(n.additional_properties_schema, member, depth + 1));
      if (result == verdict::unsure) return result;
    }
  }
  return result;
}

verdict fast_schema::program::eval_combinators(const node& n, const json::value& v,
                                               int depth) const noexcept {
  verdict result = verdict::pass;
  for (const int schema : n.all_of) {
    result = worst(result, eval(schema, v, depth + 1));
    if (result == verdict::unsure) return result;
  }
  if (!n.any_of.empty()) {
    // valijson stops at the first subschema that passes, and so do we.
    verdict any = verdict::fail;
    for (const int schema : n.any_of) {
      const verdict r = eval(schema, v, depth + 1);
      if (r == verdict::unsure) return r;
      if (r == verdict::pass) {
        any = verdict::pass;
        break;
      }
    }
    result = worst(result, any);
  }
  if (!n.one_of.empty()) {
    int passed = 0;
    for (const int schema : n.one_of) {
      const verdict r = eval(schema, v, depth + 1);
      if (r == verdict::unsure) return r;
      if (r == verdict::pass) ++passed;
    }
    if (passed != 1) result = verdict::fail;
  }
  if (n.not_ >= 0) {
    const verdict r = eval(n.not_, v, depth + 1);
    if (r == verdict::unsure) return r;
    if (r == verdict::pass) result = verdict::fail;
  }
  return result;
}

// ---------------------------------------------------------------------------
// Compilation.

namespace {

struct not_eligible {
  std::string why;
};

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
      if (name == "date" || name == "time" || name == "date-time") {
        throw not_eligible{"format '" + std::string(name) + "' (valijson checks it)"};
      }
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
    try {
      out_.regexes.emplace_back(std::string(pattern));  // ECMAScript, as valijson
    } catch (const std::regex_error&) {
      throw not_eligible{"pattern '" + std::string(pattern) + "' is not a valid std::regex"};
    }
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

fast_schema::fast_schema(std::unique_ptr<program> checks) : program_(std::move(checks)) {}

fast_schema::~fast_schema() = default;

std::unique_ptr<const fast_schema> fast_schema::compile(const json::value& schema,
                                                        std::string* why_not) {
  auto checks = std::make_unique<program>();
  checks->document = schema;  // const/enum nodes point into this copy
  try {
    compiler c(*checks);
    c.compile(checks->document, true);
  } catch (const not_eligible& e) {
    if (why_not) *why_not = e.why;
    return nullptr;
  } catch (const std::exception& e) {
    if (why_not) *why_not = e.what();
    return nullptr;
  }
  return std::unique_ptr<const fast_schema>(new fast_schema(std::move(checks)));
}

bool fast_schema::accepts(const json::value& value) const noexcept {
  return program_->eval(0, value, 0) == verdict::pass;
}

void set_reference_validation_only(bool only) noexcept {
  reference_only.store(only, std::memory_order_relaxed);
}

bool reference_validation_only() noexcept { return reference_only.load(std::memory_order_relaxed); }

}  // namespace switchboard::protocol::detail
