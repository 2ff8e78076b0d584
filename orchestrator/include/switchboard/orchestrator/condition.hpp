// A route condition: a predicate on the envelope a node produced.
//
//   condition::confidence(comparison::ge, 0.9)      confidence >= 0.9
//   condition::equals("/intent", "schedule")       data/intent == "schedule"
//   condition::in("/priority", {"high", "urgent"})
//   condition::exists("/slot"), condition::non_empty("/candidates")
//   condition::compare("/duration_min", comparison::gt, 60)
//   condition::all({...}), condition::any({...}), condition::negate(c)
//   condition::otherwise()                         always true; last route only
//
// JSON Pointers address the envelope's `data` object: "/intent" is
// data["intent"]. A pointer to a missing value makes every comparison false
// (and `exists` false); a numeric comparison on a non-number is false.
//
// Plain value type, immutable after construction; evaluate() is const and
// safe to call from many threads at once.
#pragma once

#include <switchboard/protocol/envelope.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::orchestrator {

enum class comparison { lt, le, gt, ge };
std::string_view to_string(comparison op) noexcept;  // "lt", "le", "gt", "ge"

class condition {
 public:
  enum class kind { otherwise, confidence, equals, in, exists, non_empty, compare, all, any, negate };

  // The default condition is `otherwise`.
  condition() = default;

  static condition otherwise();
  static condition confidence(comparison op, double threshold);
  static condition equals(std::string pointer, boost::json::value expected);
  static condition in(std::string pointer, boost::json::array allowed);
  static condition exists(std::string pointer);
  static condition non_empty(std::string pointer);  // non-empty string, array or object
  static condition compare(std::string pointer, comparison op, double threshold);
  static condition all(std::vector<condition> conditions);
  static condition any(std::vector<condition> conditions);
  static condition negate(condition c);

  bool evaluate(const protocol::envelope& envelope) const;

  kind type() const noexcept { return kind_; }
  const std::string& pointer() const noexcept { return pointer_; }  // "" when none
  const std::vector<condition>& children() const noexcept { return children_; }
  // Every data pointer this condition reads, depth first (for schema checks).
  void collect_pointers(std::vector<std::string>& out) const;

  // Readable form for audit logs: `confidence >= 0.9`, `/intent == "x"`,
  // `all(/a exists, not(/b in ["x"]))`, `otherwise`.
  std::string to_string() const;
  // The workflow-file form (see docs/workflow-file.md).
  boost::json::value to_json() const;

  friend bool operator==(const condition& a, const condition& b);

 private:
  kind kind_ = kind::otherwise;
  comparison op_ = comparison::ge;
  double number_ = 0;
  std::string pointer_;
  boost::json::value value_;  // equals: the value; in: the array
  std::vector<condition> children_;
};

}  // namespace switchboard::orchestrator
