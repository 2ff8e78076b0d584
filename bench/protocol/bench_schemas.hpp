// Output schemas the benchmarks share: the e2e workflow's small research
// answer, and the sample's scheduling answer (a large one), with a typical
// scheduling answer (six candidate slots).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string>
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

// A scheduling answer with six candidate slots, valid for scheduling_output_schema.
inline boost::json::object scheduling_data() {
  namespace json = boost::json;
  json::array candidates;
  for (int i = 0; i < 6; ++i) {
    candidates.push_back(json::object{
        {"start", "2026-11-2" + std::to_string(i % 9) + "T1" + std::to_string(i) + ":30"},
        {"duration_minutes", 30 + 15 * i},
        {"score", 0.9 - 0.1 * i},
        {"attendees", json::array{"ana@example.com", "kwame@example.com", "li@example.com"}},
        {"room", i % 2 ? json::value("B2") : json::value(nullptr)},
        {"conflicts", json::array{"weekly 1:1 with the design team overlaps by 15 minutes"}},
    });
  }
  return json::object{{"candidate_times", std::move(candidates)},
                      {"timezone", "Europe/Berlin"},
                      {"notes", "Thursday mornings are preferred by two of three attendees; "
                                "Friday afternoons conflict with the release review."}};
}

}  // namespace bench
