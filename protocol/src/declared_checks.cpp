// Invariants and schema versions declared in schema files (see
// detail/declared_checks.hpp for the format).
#include "detail/declared_checks.hpp"

#include <switchboard/protocol/error.hpp>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <variant>

namespace switchboard::protocol::detail {

namespace {

namespace json = boost::json;

constexpr std::string_view invariants_key = "x-invariants";
constexpr std::string_view versions_key = "x-schema-versions";

[[noreturn]] void refuse(const std::string& schema_id, const std::string& where, const std::string& why) {
  throw protocol_error(errc::unparsable_schema, "schema '" + schema_id + "': " + where + ": " + why);
}

// One side of a comparison.
struct operand {
  enum class kind { pointer, length, constant } type = kind::constant;
  std::string pointer;
  json::value constant;

  // The value it stands for in `v`; nothing when a pointer names nothing.
  std::optional<json::value> in(const json::value& v) const {
    if (type == kind::constant) return constant;
    boost::system::error_code ec;
    const json::value* target = v.find_pointer(pointer, ec);
    if (target == nullptr) return std::nullopt;
    if (type == kind::pointer) return *target;
    if (const auto* a = target->if_array()) return json::value(static_cast<std::int64_t>(a->size()));
    if (const auto* o = target->if_object()) return json::value(static_cast<std::int64_t>(o->size()));
    if (const auto* s = target->if_string()) return json::value(utf8_length(*s));
    return std::nullopt;
  }

  std::string describe(const std::optional<json::value>& value) const {
    const std::string shown = value ? json::serialize(*value) : "nothing";
    if (type == kind::constant) return shown;
    if (type == kind::length) return "the length of " + pointer + " (" + shown + ")";
    return pointer + " (" + shown + ")";
  }

 private:
  static std::int64_t utf8_length(const json::string& s) {
    return std::ranges::count_if(s, [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
  }
};

operand read_operand(const json::value& v, const std::string& schema_id, const std::string& where) {
  operand out;
  if (const auto* s = v.if_string(); s && s->starts_with('/')) {
    out.type = operand::kind::pointer;
    out.pointer = std::string(*s);
  } else if (const auto* o = v.if_object()) {
    const auto* length = o->if_contains("length");
    if (o->size() != 1 || !length || !length->is_string() || !length->get_string().starts_with('/'))
      refuse(schema_id, where, "an operand object must be {\"length\": \"/pointer\"}");
    out.type = operand::kind::length;
    out.pointer = std::string(length->get_string());
  } else if (v.is_array()) {
    refuse(schema_id, where, "an operand is a JSON Pointer, {\"length\": pointer} or a constant, not an array");
  } else {
    out.constant = v;
  }
  return out;
}

constexpr std::array<std::string_view, 6> operators{"==", "!=", "<", "<=", ">", ">="};

// -1, 0, 1 for ordered values; nothing when they do not order.
std::optional<int> order(const json::value& a, const json::value& b) {
  if (a.is_number() && b.is_number()) {
    const double x = a.to_number<double>(), y = b.to_number<double>();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = std::string_view(a.get_string()).compare(std::string_view(b.get_string()));
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  return std::nullopt;
}

bool holds(std::string_view op, const json::value& a, const json::value& b) {
  const auto o = order(a, b);
  if (op == "==") return o ? *o == 0 : a == b;
  if (op == "!=") return o ? *o != 0 : a != b;
  if (!o) return false;
  if (op == "<") return *o < 0;
  if (op == "<=") return *o <= 0;
  if (op == ">") return *o > 0;
  return *o >= 0;
}

named_check read_invariant(const json::value& item, std::size_t index, const std::string& schema_id) {
  const std::string where = std::string(invariants_key) + "[" + std::to_string(index) + "]";
  const auto* o = item.if_object();
  if (!o) refuse(schema_id, where, "an invariant is an object {name, left, op, right}");
  const auto* name = o->if_contains("name");
  const auto* op = o->if_contains("op");
  if (!name || !name->is_string() || name->get_string().empty()) refuse(schema_id, where, "needs a \"name\"");
  if (!op || !op->is_string() || std::ranges::find(operators, std::string_view(op->get_string())) == operators.end())
    refuse(schema_id, where, "\"op\" must be one of == != < <= > >=");
  if (!o->contains("left") || !o->contains("right")) refuse(schema_id, where, "needs \"left\" and \"right\"");
  for (const auto& member : *o) {
    const std::string_view k = member.key();
    if (k != "name" && k != "op" && k != "left" && k != "right" && k != "description")
      refuse(schema_id, where, "unknown member \"" + std::string(k) + "\"");
  }
  operand left = read_operand(o->at("left"), schema_id, where + ".left");
  operand right = read_operand(o->at("right"), schema_id, where + ".right");
  std::string symbol(op->get_string());
  invariant_check check = [left, right, symbol](const json::value& v) -> std::optional<validation_error> {
    const auto a = left.in(v), b = right.in(v);
    if (!a || !b) return std::nullopt;
    if (holds(symbol, *a, *b)) return std::nullopt;
    return validation_error{left.type == operand::kind::constant ? right.pointer : left.pointer,
                            left.describe(a) + " must be " + symbol + " " + right.describe(b),
                            errc::invariant_violation};
  };
  return {std::string(name->get_string()), std::move(check)};
}

// "2", "2.1", 2 → 2; nothing otherwise.
std::optional<std::int64_t> major_of(const json::value& version) {
  if (version.is_int64()) return version.get_int64();
  if (version.is_uint64()) return static_cast<std::int64_t>(version.get_uint64());
  const auto* s = version.if_string();
  if (!s || s->empty()) return std::nullopt;
  std::int64_t major = 0;
  std::size_t i = 0;
  for (; i < s->size() && (*s)[i] >= '0' && (*s)[i] <= '9' && i < 9; ++i) major = major * 10 + ((*s)[i] - '0');
  if (i == 0 || (i < s->size() && (*s)[i] != '.')) return std::nullopt;
  return major;
}

named_check read_versions(const json::value& declared, const std::string& schema_id) {
  const std::string where(versions_key);
  const auto* o = declared.if_object();
  if (!o || o->empty()) refuse(schema_id, where, "must map major versions (\"1\", \"2\") to {\"required\": [...]}");
  std::vector<std::pair<std::int64_t, std::vector<std::string>>> versions;
  std::string supported;
  for (const auto& [key, spec] : *o) {
    const auto major = major_of(json::value(key));
    if (!major || std::string_view(key).find('.') != std::string_view::npos)
      refuse(schema_id, where, "\"" + std::string(key) + "\" is not a major version number");
    std::vector<std::string> required;
    const auto* spec_object = spec.if_object();
    const auto* list = spec_object ? spec_object->if_contains("required") : nullptr;
    if (!list || !list->is_array()) refuse(schema_id, where + "." + std::string(key), "needs \"required\": [names]");
    for (const auto& name : list->get_array()) {
      if (!name.is_string()) refuse(schema_id, where + "." + std::string(key), "required names must be strings");
      required.emplace_back(name.get_string());
    }
    versions.emplace_back(*major, std::move(required));
    supported += (supported.empty() ? "" : ", ") + std::string(key);
  }
  invariant_check check = [versions, supported](const json::value& v) -> std::optional<validation_error> {
    const auto* obj = v.if_object();
    const auto* version = obj ? obj->if_contains("schema_version") : nullptr;
    if (!version) return std::nullopt;
    const auto major = major_of(*version);
    const auto match = std::ranges::find_if(versions, [&](const auto& entry) { return major && entry.first == *major; });
    if (match == versions.end()) {
      return validation_error{"/schema_version", "schema_version " + json::serialize(*version) +
                                                     " is not supported (supported major versions: " + supported + ")",
                              errc::invariant_violation};
    }
    for (const auto& field : match->second) {
      if (!obj->contains(field)) {
        return validation_error{"/" + field, "required by schema_version " + std::to_string(*major) + " but missing",
                                errc::invariant_violation};
      }
    }
    return std::nullopt;
  };
  return {"schema_version", std::move(check)};
}

}  // namespace

std::vector<named_check> take_declared_checks(json::value& schema, const std::string& schema_id) {
  std::vector<named_check> checks;
  auto* root = schema.if_object();
  if (!root) return checks;
  if (const auto* declared = root->if_contains(invariants_key)) {
    const auto* list = declared->if_array();
    if (!list) refuse(schema_id, std::string(invariants_key), "must be an array of invariants");
    for (std::size_t i = 0; i < list->size(); ++i) checks.push_back(read_invariant((*list)[i], i, schema_id));
    root->erase(invariants_key);
  }
  if (const auto* declared = root->if_contains(versions_key)) {
    checks.push_back(read_versions(*declared, schema_id));
    root->erase(versions_key);
  }
  return checks;
}

}  // namespace switchboard::protocol::detail
