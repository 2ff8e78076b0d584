// valijson, the reference validator, with every regular expression run by
// RE2 and the date/time/date-time formats by hand-written parsers. Internal
// to compiled_schema.
//
// valijson (Debian 12 libvalijson-dev) hard-codes std::regex for pattern,
// patternProperties and those formats, and std::regex recurses once per
// character: a 30 KB string overflows the stack, ^(a+)+$ backtracks for
// minutes. Its engine is not pluggable, but its SchemaParser takes custom
// keywords. So valijson is given documents rewritten by
// reference_document.hpp, whose renamed keywords become our constraints:
//  * pattern: RE2, same message as valijson ("Failed to match regex
//    specified by 'pattern' constraint.");
//  * date/time/date-time: date_format.hpp, on the value as valijson reads it
//    (asString(), which throws for non-empty arrays and objects);
//  * patternProperties: one constraint per object schema applies the
//    patterns and additionalProperties the way valijson's
//    PropertiesConstraint does (valijson still applies "properties"), with
//    each subschema loaded by valijson itself through a $ref.
// The verdict and the errors are valijson's, with only the regex engine
// swapped. What valijson loaded is then audited (valijson_audit.hpp).
//
// Immutable after compile(); validate() is const and safe to call from many
// threads at once.
#pragma once

#include "schema_documents.hpp"

#include <boost/json/value.hpp>

#include <memory>

namespace valijson {
class ValidationResults;
}

namespace switchboard::protocol::detail {

class reference_schema {
 public:
  // Throws schema_refusal when the schema cannot be used safely (a pattern
  // RE2 cannot run, ...), or what valijson throws for an invalid schema.
  // Remote documents come through `documents`; `remote_refs` says whether a
  // resolver exists (without one valijson refuses remote $refs itself).
  static std::unique_ptr<const reference_schema> compile(schema_documents& documents, bool remote_refs);

  // valijson's verdict; its errors go to `results` when not null. Throws
  // where valijson throws while applying a schema.
  bool validate(const boost::json::value& value, valijson::ValidationResults* results) const;

  ~reference_schema();
  reference_schema(const reference_schema&) = delete;
  reference_schema& operator=(const reference_schema&) = delete;

  struct state;  // the loaded schemas and what our constraints refer to

 private:
  explicit reference_schema(std::unique_ptr<state> loaded);
  std::unique_ptr<state> state_;
};

}  // namespace switchboard::protocol::detail
