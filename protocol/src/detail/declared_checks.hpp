// Checks a schema file declares beside its JSON Schema, so the response
// contract's invariants need no C++. Internal to schema_registry.
//
//   "x-invariants": [
//     {"name": "shown_within_total", "left": "/items_total", "op": ">=", "right": "/items_shown"},
//     {"name": "ends_after_start", "left": "/slot/end", "op": ">", "right": "/slot/start"},
//     {"name": "shown_matches_list", "left": "/items_shown", "op": "==", "right": {"length": "/items"}},
//     {"name": "at_most_ten", "left": {"length": "/items"}, "op": "<=", "right": 10}
//   ]
//   "x-schema-versions": {"1": {"required": ["items"]}, "2": {"required": ["items", "items_total"]}}
//
// An operand is a JSON Pointer into the value (a string starting with "/"),
// {"length": pointer} (elements of an array, characters of a string, members
// of an object), or a constant number, string, boolean or null. op is one of
// == != < <= > >=; numbers compare as numbers, strings lexicographically
// (ISO 8601 dates and times compare correctly), anything else only by ==
// and !=. An invariant whose pointer names nothing is skipped: presence is
// the schema's `required`, not the invariant's business.
//
// x-schema-versions: the value's "schema_version" ("2", "2.1" or 2) must
// name a declared major version, and the fields that version requires must
// be present. A value without schema_version is left to the schema.
#pragma once

#include <switchboard/protocol/validation.hpp>

#include <boost/json/value.hpp>

#include <string>
#include <utility>
#include <vector>

namespace switchboard::protocol::detail {

using named_check = std::pair<std::string, invariant_check>;

// Removes x-invariants and x-schema-versions from `schema` (they are not
// JSON Schema and are never sent to a provider) and returns their checks.
// Throws protocol_error(unparsable_schema) naming the schema, the
// declaration and what is wrong with it.
std::vector<named_check> take_declared_checks(boost::json::value& schema, const std::string& schema_id);

}  // namespace switchboard::protocol::detail
