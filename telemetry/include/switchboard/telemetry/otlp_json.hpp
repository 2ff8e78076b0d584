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

#include <switchboard/telemetry/metrics.hpp>

namespace switchboard::telemetry {

// The body of POST {endpoint}/v1/metrics (an ExportMetricsServiceRequest):
// counters as monotonic sums, up-down counters as non-monotonic sums,
// histograms with explicit bounds; all cumulative (aggregationTemporality
// 2); counts as decimal strings.
std::string encode_otlp_metrics(const resource& emitter, const instrumentation_scope& scope,
                                std::span<const metric_data> metrics);

}  // namespace switchboard::telemetry
