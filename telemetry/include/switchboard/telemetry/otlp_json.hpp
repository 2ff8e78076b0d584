// The OTLP/JSON encoding of spans: the body of POST {endpoint}/v1/traces
// (an ExportTraceServiceRequest), as the OTLP specification maps the
// protobuf messages to JSON — hex trace and span ids, 64-bit integers
// (times, intValue) as decimal strings, enums as integers, lowerCamelCase
// keys, one resourceSpans with one scopeSpans.
//
// Thread-safety: pure functions.
#pragma once

#include <switchboard/telemetry/span_data.hpp>

#include <span>
#include <string>

namespace switchboard::telemetry {

// The instrumentation scope: the library that made the spans.
struct instrumentation_scope {
  std::string name = "switchboard";
  std::string version;
};

// The request body, serialized. Non-finite doubles go out as the proto3
// JSON strings "NaN", "Infinity" and "-Infinity".
std::string encode_otlp_traces(const resource& emitter, const instrumentation_scope& scope,
                               std::span<const span_data> spans);

}  // namespace switchboard::telemetry
