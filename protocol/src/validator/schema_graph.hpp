// The $ref structure of a schema, checked before valijson parses it.
// Internal to compiled_schema.
//
// valijson follows a chain of $refs recursively and without a cycle check,
// so {"$ref": "#"} overflows the stack while the schema loads; a subschema
// that applies itself to the same value again ({"allOf": [{"$ref": "#"}]})
// loads but recurses without end on every validation. Both are refused here,
// naming the cycle. The walk follows references the way valijson resolves
// them (its own pointer decoding, its "id" scopes, remote documents through
// the resolver), so it sees the graph valijson will build.
//
// Refused, with the location of what is wrong:
//  * a cycle of subschemas applied to one value ($ref, allOf, anyOf, oneOf,
//    not, if/then/else, dependencies), e.g. "$ref cycle: #/definitions/a ->
//    #/definitions/b -> #/definitions/a";
//  * such a chain longer than max_same_value_chain (acyclic, but deep enough
//    to threaten the stack);
//  * a $ref whose pointer has more than max_ref_pointer_tokens tokens, or a
//    $ref URI or an "id" longer than max_ref_uri_length (valijson runs a
//    std::regex over those);
//  * a $ref into the patternProperties or additionalProperties of a schema
//    that has patternProperties (those move when the schema is prepared for
//    valijson; see reference_schema.hpp).
// Recursion through properties, items and the like is fine: it descends
// into the value, which is finite.
#pragma once

#include "schema_documents.hpp"

namespace switchboard::protocol::detail {

// Throws schema_refusal. May fetch remote documents through `documents`.
void check_schema_graph(schema_documents& documents);

}  // namespace switchboard::protocol::detail
