// The hybrid envelope every agent returns to the hub:
//
//   { "data": {...}, "explanation": "...", "confidence": 0.9, "reasoning": "..." }
//
// plus, for an agent that failed, an "error" record so the hub can route on
// the failure instead of mistaking it for an answer.
//
// Plain value types; no shared state. Conversions to and from Boost.JSON via
// boost::json::value_from / try_value_to.
#pragma once

#include <switchboard/protocol/validation.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>
#include <boost/json/value_to.hpp>
#include <boost/system/result.hpp>

#include <optional>
#include <string>
#include <vector>

namespace switchboard::protocol {

struct error_record {
  std::string type;     // "structured_output_failed", "timeout", "http_status", ...
  std::string message;  // readable, names the agent/schema/field
  bool retryable = false;
  std::string agent;    // filled by the hub when it records the error
};

struct envelope {
  boost::json::object data;
  std::string explanation;
  double confidence = 0.0;
  std::string reasoning;
  std::optional<error_record> error;

  bool failed() const noexcept { return error.has_value(); }
};

// An envelope that reports a failure: confidence 0, the reason in
// `reasoning`, and the error record.
envelope make_error_envelope(error_record error, std::string explanation);

// Checks the envelope fields (confidence finite and in [0, 1]; explanation and
// reasoning non-empty strings; data an object) and `data` against the
// agent's data schema. Paths are absolute within the envelope:
// "/data/candidate_times/0/score: expected number, got string".
std::vector<validation_error> validate_envelope(const boost::json::value& envelope_json,
                                                const compiled_schema& data_schema);
std::vector<validation_error> validate_envelope(const envelope& value,
                                                const compiled_schema& data_schema);

void tag_invoke(boost::json::value_from_tag, boost::json::value& out, const error_record& in);
boost::system::result<error_record> tag_invoke(boost::json::try_value_to_tag<error_record>,
                                               const boost::json::value& in);

void tag_invoke(boost::json::value_from_tag, boost::json::value& out, const envelope& in);
// Structural conversion only (fields present with the right types, confidence
// finite in [0, 1]); schema validation of `data` is validate_envelope's job.
boost::system::result<envelope> tag_invoke(boost::json::try_value_to_tag<envelope>,
                                           const boost::json::value& in);
// The same conversion for a value that is no longer needed: `data` is moved
// out of `in` instead of copied (on success and on failure `in` is left
// valid but unspecified).
boost::system::result<envelope> take_envelope(boost::json::value&& in);

}  // namespace switchboard::protocol
