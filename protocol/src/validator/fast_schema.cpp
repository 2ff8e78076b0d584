// fast_schema: the schema compiled into a flat vector of nodes, evaluated
// recursively with three outcomes (pass, fail, unsure). Every rule below
// mirrors a visit() of valijson's ValidationVisitor (Debian 12
// libvalijson-dev) with strict types, the mode compiled_schema uses; the
// regular expressions and date formats are the ones compiled_schema gives
// valijson too (RE2, date_format.hpp). The compiler is in
// fast_schema_compile.cpp.
#include "fast_program.hpp"

#include <boost/json/string.hpp>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

namespace switchboard::protocol::detail {

namespace json = boost::json;

using namespace fast_path;

namespace {

std::atomic<bool> reference_only{false};

// valijson reads strings through c_str(): a string ends at its first NUL.
std::string_view c_view(const json::string& s) noexcept {
  const auto* nul = static_cast<const char*>(std::memchr(s.data(), '\0', s.size()));
  return {s.data(), nul ? static_cast<std::size_t>(nul - s.data()) : s.size()};
}

}  // namespace

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
// read out of its table (more than five continuation bytes). `s` holds no
// NUL (c_view cut it there).
std::optional<std::uint64_t> u8_length(std::string_view s) noexcept {
  // ASCII, the common case, is one character per byte: a branch-free scan
  // the compiler vectorises, instead of decoding byte by byte.
  unsigned char high_bits = 0;
  for (const char c : s) high_bits |= static_cast<unsigned char>(c);
  if (high_bits < 0x80) return s.size();
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
    // Any other value reads as "", "true", "false" or a number's digits:
    // never a date, a time or a date-time.
    if (n.date != date_format::none && !v.is_string()) result = verdict::fail;
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

// eval() for an object, kept in step with it: an object has no number or
// string checks, and a const or enum at the root (rare) is left to valijson.
verdict fast_schema::program::eval(int index, const json::object& o, int depth) const noexcept {
  if (depth > max_depth) return verdict::unsure;
  const node& n = nodes[static_cast<std::size_t>(index)];
  if (n.always_false) return verdict::fail;
  if (n.ref >= 0) return eval(n.ref, o, depth + 1);
  if (n.const_value || n.enum_values) return verdict::unsure;
  verdict result = verdict::pass;
  if (n.types && !(n.types & t_object)) result = verdict::fail;
  if (n.format) {
    if (!o.empty()) return verdict::unsure;  // valijson would throw: see eval()
    if (n.date != date_format::none) result = verdict::fail;
  }
  result = worst(result, eval_object(n, o, depth));
  if (result == verdict::unsure) return result;
  return worst(result, eval_combinators(n, o, depth));
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
    if (!regexes[static_cast<std::size_t>(pattern)]->search(s)) result = verdict::fail;
  }
  if (n.date != date_format::none && !matches(n.date, s)) result = verdict::fail;
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
      if (regexes[static_cast<std::size_t>(pattern)]->search(key)) {
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

template <class Subject>
verdict fast_schema::program::eval_combinators(const node& n, const Subject& v, int depth) const noexcept {
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
fast_schema::fast_schema(std::unique_ptr<program> checks) : program_(std::move(checks)) {}

fast_schema::~fast_schema() = default;

std::unique_ptr<const fast_schema> fast_schema::compile(const json::value& schema,
                                                        std::string* why_not) {
  try {
    return std::unique_ptr<const fast_schema>(new fast_schema(compile_program(schema)));
  } catch (const not_eligible& e) {
    if (why_not) *why_not = e.why;
  } catch (const std::exception& e) {
    if (why_not) *why_not = e.what();
  }
  return nullptr;
}

bool fast_schema::accepts(const json::value& value) const noexcept {
  return program_->eval(0, value, 0) == verdict::pass;
}

bool fast_schema::accepts(const json::object& value) const noexcept {
  return program_->eval(0, value, 0) == verdict::pass;
}

void set_reference_validation_only(bool only) noexcept {
  reference_only.store(only, std::memory_order_relaxed);
}

bool reference_validation_only() noexcept { return reference_only.load(std::memory_order_relaxed); }

}  // namespace switchboard::protocol::detail
