// A last check of what valijson loaded, before anything is validated with
// it. Internal to reference_schema.
//
// reference_document.hpp rewrites every keyword valijson would run through
// std::regex, and schema_graph.hpp refuses cycles by walking the documents
// the way valijson reads them. This audit does not rely on either being
// right: it walks valijson's own loaded form and refuses the schema if a
// pattern, patternProperties or date/time/date-time format constraint
// reached it, or if its subschemas apply each other to the same value in a
// cycle (which would recurse without end on every validation).
#pragma once

#include <vector>

namespace valijson {
class Subschema;
}

namespace switchboard::protocol::detail {

// Throws schema_refusal. `roots`: every loaded schema's root.
void audit_loaded_schema(const std::vector<const valijson::Subschema*>& roots);

}  // namespace switchboard::protocol::detail
