// JSON Schema (draft-07) validation with readable, path-addressed errors.
//
// compiled_schema is an immutable, cheaply copyable handle to a parsed
// schema plus the C++ invariants attached to it. Copies share the parsed
// schema. validate() is const and safe to call from many threads at once.
#pragma once

#include <switchboard/protocol/error.hpp>
#include <switchboard/protocol/json_document.hpp>
#include <switchboard/protocol/strict_mode.hpp>

#include <boost/json/value.hpp>

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::protocol {

// One thing wrong with a value.
struct validation_error {
  std::string path;     // JSON Pointer of the offending value, "" for the root
  std::string message;  // e.g. "expected number, got string"
  errc kind = errc::schema_violation;  // schema_missing_field, schema_type_error,
                                       // schema_violation or invariant_violation

  // "/data/candidate_times/0/score: expected number, got string"
  std::string to_string() const;
};

// Joins errors one per line, for logs, CLI output and re-ask messages.
std::string to_string(const std::vector<validation_error>& errors);

// A C++ predicate on a value that already satisfies its schema, for rules a
// schema cannot express (items_total >= items_shown). Returns nullopt when
// the value is fine, otherwise a validation_error (kind invariant_violation).
using invariant_check =
    std::function<std::optional<validation_error>(const boost::json::value&)>;

// Fetches a document a schema refers to by absolute URI (without the
// fragment), e.g. "http://example.com/defs.json". nullopt when unknown; the
// compile then fails naming the URI. Never called for local "#/..." refs.
using schema_resolver =
    std::function<std::optional<boost::json::value>(const std::string& uri)>;

class compiled_schema {
 public:
  // Parses a draft-07 schema. `id` names it in every error ("scheduling.output@1").
  // Throws protocol_error(unparsable_schema) naming `id` when the schema is
  // not a valid JSON Schema, or cannot be applied safely to untrusted values,
  // naming the JSON Pointer of what is wrong:
  //  * a `pattern` or `patternProperties` regex that RE2 cannot run
  //    (backreferences, lookahead/lookbehind, a repetition above 1000; see
  //    docs/structured-outputs.md). Every regex runs in linear time.
  //  * a cycle of subschemas applied to the same value ({"$ref": "#"},
  //    definitions referring to each other), named with its pointers;
  //  * past a limit: nesting deeper than 128 levels, such a chain of $refs
  //    or allOf/anyOf/... deeper than 128, more than 512 distinct patterns.
  static compiled_schema compile(const boost::json::value& schema, std::string id);
  // As above; remote $refs are loaded through `resolver` (called only while
  // compiling, on the calling thread).
  static compiled_schema compile(const boost::json::value& schema, std::string id,
                                 const schema_resolver& resolver);

  const std::string& id() const noexcept;
  const boost::json::value& json() const noexcept;
  // The schema with its serialized text, for prompts and requests.
  const json_document& document() const noexcept;
  // The strict form for `provider`, computed on first use and kept with the
  // compiled schema (shared by its copies). Thread-safe.
  const protocol::strict_form& strict_form(strict_provider provider) const;

  // Empty when `value` is valid: every schema error, then (only when the
  // schema passed) every invariant error.
  std::vector<validation_error> validate(const boost::json::value& value) const;
  // The same for an object (an envelope's data). It is copied into a
  // json::value only when valijson or an invariant has to see it. A
  // template so that a number, which converts to an object too, still
  // means a json::value.
  template <std::same_as<boost::json::object> Object>
  std::vector<validation_error> validate(const Object& value) const {
    return validate_object(value);
  }

  // A copy with one more invariant; `name` appears in its errors.
  compiled_schema with_invariant(std::string name, invariant_check check) const;

 private:
  std::vector<validation_error> validate_object(const boost::json::object& value) const;

  struct impl;
  struct named_invariant {
    std::string name;
    invariant_check check;
  };
  std::shared_ptr<const impl> impl_;
  std::vector<named_invariant> invariants_;
};

}  // namespace switchboard::protocol
