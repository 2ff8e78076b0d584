// Output schemas the benchmarks share: the e2e workflow's small research
// answer, and the sample's scheduling answer (a large one).
#pragma once

#include <string_view>

namespace bench {

inline constexpr std::string_view findings_schema = R"({
  "type": "object", "additionalProperties": false,
  "required": ["topic", "findings", "sources"],
  "properties": {
    "topic": {"type": "string", "minLength": 1},
    "findings": {"type": "array", "minItems": 2, "items": {"type": "string", "minLength": 1}},
    "sources": {"type": "array", "minItems": 1, "items": {
      "type": "object", "additionalProperties": false, "required": ["title", "year"],
      "properties": {"title": {"type": "string"}, "year": {"type": "integer", "minimum": 1900}}}}
  }
})";

inline constexpr std::string_view scheduling_output_schema = R"({
  "type": "object",
  "properties": {
    "candidate_times": {"type": "array", "maxItems": 20, "items": {
      "type": "object",
      "properties": {
        "start": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}$"},
        "duration_minutes": {"type": "integer", "minimum": 5, "maximum": 480},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "attendees": {"type": "array", "items": {"type": "string"}},
        "room": {"type": ["string", "null"]},
        "conflicts": {"type": "array", "items": {"type": "string"}}
      },
      "required": ["start", "duration_minutes", "score", "attendees"],
      "additionalProperties": false}},
    "timezone": {"type": "string"},
    "notes": {"type": "string"}
  },
  "required": ["candidate_times", "timezone"]
})";

}  // namespace bench
