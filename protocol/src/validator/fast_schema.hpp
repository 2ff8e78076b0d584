// A fast, allocation-free pre-check for the draft-07 subset agent schemas
// use. Internal to compiled_schema.
//
// valijson stays the reference: fast_schema answers only "certainly valid"
// (accepts() == true, valijson is skipped) or "not certainly valid" (false,
// valijson runs as before and produces the errors). It reproduces valijson's
// own semantics, quirks included (integer means an int64, string lengths
// count UTF-8 sequences the way valijson's u8_strlen does, strings end at
// their first NUL, `format` is only an annotation except for date, time and
// date-time, a number beyond int64 is of no type and equal to nothing).
// Patterns run through RE2 and dates through date_format.hpp, exactly as
// compiled_schema has valijson run them (reference_schema.hpp).
// Where valijson would throw while applying the schema (`format` on a
// non-empty array), the answer is "not certainly valid", so the caller
// reports what valijson says.
//
// A schema outside the supported subset (remote or non-trivial $refs, "id",
// nested "$id", if/then/else, contains, dependencies, propertyNames,
// unusual keyword values) does not compile: compile()
// returns nullptr and compiled_schema uses valijson alone.
//
// Immutable after compile(); accepts() is const and safe to call from many
// threads at once (RE2 regexes are compiled once and safe to share).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <string>

namespace switchboard::protocol::detail {

class fast_schema {
 public:
  // nullptr when `schema` is not fast-path eligible; `why_not` (optional)
  // then names the first keyword or value that made it so.
  static std::unique_ptr<const fast_schema> compile(const boost::json::value& schema,
                                                    std::string* why_not = nullptr);

  // true only when `value` is valid against the schema and valijson would
  // say so too; false when it is invalid or valijson's answer is needed.
  bool accepts(const boost::json::value& value) const noexcept;
  // The same answer for an object, without making a json::value of it.
  bool accepts(const boost::json::object& value) const noexcept;

  fast_schema(const fast_schema&) = delete;
  fast_schema& operator=(const fast_schema&) = delete;
  ~fast_schema();

  struct program;  // the compiled checks

 private:
  explicit fast_schema(std::unique_ptr<program> checks);
  std::unique_ptr<program> program_;
};

// Test hook: when true, compiled_schema::validate() ignores the fast path
// and runs valijson alone, so tests can compare both. Default false.
void set_reference_validation_only(bool only) noexcept;
bool reference_validation_only() noexcept;

// Runs valijson alone for the lifetime of the guard (tests).
class reference_validation_scope {
 public:
  reference_validation_scope() noexcept { set_reference_validation_only(true); }
  ~reference_validation_scope() { set_reference_validation_only(false); }
  reference_validation_scope(const reference_validation_scope&) = delete;
  reference_validation_scope& operator=(const reference_validation_scope&) = delete;
};

}  // namespace switchboard::protocol::detail
