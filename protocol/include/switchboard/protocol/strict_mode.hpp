// Strict-mode schemas for providers that enforce schemas during generation
// (OpenAI `strict: true`): every object has additionalProperties: false and
// lists every property in `required`; properties that were optional become
// nullable so the model can still leave them out by answering null.
//
// Pure functions; thread-safe.
#pragma once

#include <switchboard/protocol/json_document.hpp>

#include <boost/json/value.hpp>

#include <string>
#include <vector>

namespace switchboard::protocol {

// The strict form of an ordinary draft-07 schema (recursively: properties,
// items, anyOf/oneOf/allOf branches, definitions/$defs).
boost::json::value make_strict(const boost::json::value& schema);

enum class strict_provider { openai, anthropic };

struct unsupported_keyword {
  std::string path;     // JSON Pointer inside the schema
  std::string keyword;  // "patternProperties", "if", ...
  std::string reason;   // "OpenAI strict mode does not support 'if'"
  std::string to_string() const;  // "/properties/x: 'if' is not supported ..."
};

// The keywords `provider`'s strict mode does not support; empty when the
// schema can be sent as is.
std::vector<unsupported_keyword> strict_mode_unsupported(const boost::json::value& schema,
                                                         strict_provider provider);

// A schema's strict form for one provider: make_strict of the schema less
// the keywords that provider's strict mode cannot take but that only narrow
// the answer (minLength, maxLength, uniqueItems, not, if/then/else, ...; oneOf
// is sent as anyOf) — those are listed in `checked_locally` and enforced by
// validating against the original schema. `unsupported` is what cannot be
// left out without forbidding valid answers (allOf, patternProperties, a
// schema-valued additionalProperties, a root that is not an object); empty:
// the form can be sent with strict: true. compiled_schema::strict_form
// computes it once.
struct strict_form {
  json_document schema;
  std::vector<unsupported_keyword> unsupported;
  std::vector<unsupported_keyword> checked_locally;
};

strict_form make_strict_form(const boost::json::value& schema, strict_provider provider);

}  // namespace switchboard::protocol
