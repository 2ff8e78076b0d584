#include <switchboard/orchestrator/condition.hpp>

#include <switchboard/orchestrator/error.hpp>

#include "detail/pointer.hpp"

#include <boost/json/serialize.hpp>

#include <charconv>

namespace switchboard::orchestrator {

namespace json = boost::json;

std::string_view to_string(comparison op) noexcept {
  switch (op) {
    case comparison::lt: return "lt";
    case comparison::le: return "le";
    case comparison::gt: return "gt";
    case comparison::ge: return "ge";
  }
  return "?";
}

namespace {

std::string_view symbol(comparison op) noexcept {
  switch (op) {
    case comparison::lt: return "<";
    case comparison::le: return "<=";
    case comparison::gt: return ">";
    case comparison::ge: return ">=";
  }
  return "?";
}

bool compare_numbers(double lhs, comparison op, double rhs) noexcept {
  switch (op) {
    case comparison::lt: return lhs < rhs;
    case comparison::le: return lhs <= rhs;
    case comparison::gt: return lhs > rhs;
    case comparison::ge: return lhs >= rhs;
  }
  return false;
}

std::optional<double> as_number(const json::value& v) noexcept {
  switch (v.kind()) {
    case json::kind::int64: return static_cast<double>(v.get_int64());
    case json::kind::uint64: return static_cast<double>(v.get_uint64());
    case json::kind::double_: return v.get_double();
    default: return std::nullopt;
  }
}

// JSON equality where 1 and 1.0 are the same number.
bool json_equal(const json::value& a, const json::value& b) noexcept {
  auto x = as_number(a);
  auto y = as_number(b);
  if (x && y) return *x == *y;
  return a == b;
}

std::string format_number(double value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc{} ? std::string(buffer, end) : std::string("nan");
}

std::string checked_pointer(std::string pointer) {
  if (!detail::valid_pointer(pointer)) {
    throw orchestrator_error(orchestrator_errc::invalid_workflow,
                             "condition: '" + pointer +
                                 "' is not a JSON Pointer into data (expected \"\" or \"/field/...\")");
  }
  return pointer;
}

bool non_empty_value(const json::value& v) noexcept {
  switch (v.kind()) {
    case json::kind::string: return !v.get_string().empty();
    case json::kind::array: return !v.get_array().empty();
    case json::kind::object: return !v.get_object().empty();
    case json::kind::null: return false;
    default: return true;
  }
}

}  // namespace

condition condition::otherwise() { return {}; }

condition condition::confidence(comparison op, double threshold) {
  condition c;
  c.kind_ = kind::confidence;
  c.op_ = op;
  c.number_ = threshold;
  return c;
}

condition condition::equals(std::string pointer, json::value expected) {
  condition c;
  c.kind_ = kind::equals;
  c.pointer_ = checked_pointer(std::move(pointer));
  c.value_ = std::move(expected);
  return c;
}

condition condition::in(std::string pointer, json::array allowed) {
  condition c;
  c.kind_ = kind::in;
  c.pointer_ = checked_pointer(std::move(pointer));
  c.value_ = std::move(allowed);
  return c;
}

condition condition::exists(std::string pointer) {
  condition c;
  c.kind_ = kind::exists;
  c.pointer_ = checked_pointer(std::move(pointer));
  return c;
}

condition condition::non_empty(std::string pointer) {
  condition c;
  c.kind_ = kind::non_empty;
  c.pointer_ = checked_pointer(std::move(pointer));
  return c;
}

condition condition::compare(std::string pointer, comparison op, double threshold) {
  condition c;
  c.kind_ = kind::compare;
  c.pointer_ = checked_pointer(std::move(pointer));
  c.op_ = op;
  c.number_ = threshold;
  return c;
}

condition condition::all(std::vector<condition> conditions) {
  condition c;
  c.kind_ = kind::all;
  c.children_ = std::move(conditions);
  return c;
}

condition condition::any(std::vector<condition> conditions) {
  condition c;
  c.kind_ = kind::any;
  c.children_ = std::move(conditions);
  return c;
}

condition condition::negate(condition inner) {
  condition c;
  c.kind_ = kind::negate;
  c.children_.push_back(std::move(inner));
  return c;
}

bool condition::evaluate(const protocol::envelope& envelope) const {
  // The root pointer "" addresses `data` itself.
  auto target = [&]() -> const json::value* { return detail::resolve(envelope.data, pointer_); };
  switch (kind_) {
    case kind::otherwise: return true;
    case kind::confidence: return compare_numbers(envelope.confidence, op_, number_);
    case kind::equals: {
      const auto* v = target();
      return v && json_equal(*v, value_);
    }
    case kind::in: {
      const auto* v = target();
      if (!v) return false;
      for (const auto& allowed : value_.get_array()) {
        if (json_equal(*v, allowed)) return true;
      }
      return false;
    }
    case kind::exists: return pointer_.empty() || target() != nullptr;
    case kind::non_empty: {
      if (pointer_.empty()) return !envelope.data.empty();
      const auto* v = target();
      return v && non_empty_value(*v);
    }
    case kind::compare: {
      const auto* v = target();
      if (!v) return false;
      auto number = as_number(*v);
      return number && compare_numbers(*number, op_, number_);
    }
    case kind::all:
      for (const auto& child : children_) {
        if (!child.evaluate(envelope)) return false;
      }
      return true;
    case kind::any:
      for (const auto& child : children_) {
        if (child.evaluate(envelope)) return true;
      }
      return false;
    case kind::negate: return !children_.front().evaluate(envelope);
  }
  return false;
}

void condition::collect_pointers(std::vector<std::string>& out) const {
  if (kind_ == kind::equals || kind_ == kind::in || kind_ == kind::exists ||
      kind_ == kind::non_empty || kind_ == kind::compare) {
    out.push_back(pointer_);
  }
  for (const auto& child : children_) child.collect_pointers(out);
}

std::string condition::to_string() const {
  auto pointer_text = [&] { return pointer_.empty() ? std::string("/") : pointer_; };
  switch (kind_) {
    case kind::otherwise: return "otherwise";
    case kind::confidence:
      return "confidence " + std::string(symbol(op_)) + " " + format_number(number_);
    case kind::equals: return pointer_text() + " == " + json::serialize(value_);
    case kind::in: return pointer_text() + " in " + json::serialize(value_);
    case kind::exists: return pointer_text() + " exists";
    case kind::non_empty: return pointer_text() + " non_empty";
    case kind::compare:
      return pointer_text() + " " + std::string(symbol(op_)) + " " + format_number(number_);
    case kind::all:
    case kind::any:
    case kind::negate: {
      std::string out = kind_ == kind::all ? "all(" : kind_ == kind::any ? "any(" : "not(";
      for (std::size_t i = 0; i < children_.size(); ++i) {
        if (i) out += ", ";
        out += children_[i].to_string();
      }
      out += ')';
      return out;
    }
  }
  return "?";
}

json::value condition::to_json() const {
  switch (kind_) {
    case kind::otherwise: return "otherwise";
    case kind::confidence: {
      json::object inner;
      inner[orchestrator::to_string(op_)] = number_;
      return json::object{{"confidence", std::move(inner)}};
    }
    case kind::equals: return json::object{{"path", pointer_}, {"equals", value_}};
    case kind::in: return json::object{{"path", pointer_}, {"in", value_}};
    case kind::exists: return json::object{{"path", pointer_}, {"exists", true}};
    case kind::non_empty: return json::object{{"path", pointer_}, {"non_empty", true}};
    case kind::compare: {
      json::object out{{"path", pointer_}};
      out[orchestrator::to_string(op_)] = number_;
      return out;
    }
    case kind::all:
    case kind::any: {
      json::array list;
      for (const auto& child : children_) list.push_back(child.to_json());
      return json::object{{kind_ == kind::all ? "all" : "any", std::move(list)}};
    }
    case kind::negate: return json::object{{"not", children_.front().to_json()}};
  }
  return nullptr;
}

bool operator==(const condition& a, const condition& b) {
  if (a.kind_ != b.kind_ || a.pointer_ != b.pointer_ || a.children_ != b.children_) return false;
  switch (a.kind_) {
    case condition::kind::confidence:
    case condition::kind::compare: return a.op_ == b.op_ && a.number_ == b.number_;
    case condition::kind::equals:
    case condition::kind::in: return a.value_ == b.value_;
    default: return true;
  }
}

}  // namespace switchboard::orchestrator
