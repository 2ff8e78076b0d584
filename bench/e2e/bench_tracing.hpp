// --trace for the end-to-end benchmarks: tracing as `switchboard run` sets
// it up (host::process_tracing, its observer and trace parents on the hub),
// from a fixed configuration instead of the process environment, so that a
// measurement does not depend on what the shell exports:
//
//   OTEL_EXPORTER_OTLP_ENDPOINT  the endpoint given (bench_server answers
//                                POST /v1/traces with 200 {})
//   OTEL_TRACES_SAMPLER          always_on: every span is made and exported
//   OTEL_METRICS_EXPORTER        none: metrics are measured on their own
//                                (docs/performance.md), not with spans
//   OTEL_BSP_MAX_QUEUE_SIZE      65536: a burst never drops a span; the
//                                end-of-run line proves it (dropped 0)
//
// finish() ends what is open and flushes (bounded), then prints the
// exporter's counts to stderr: a run that dropped or failed a span is not a
// measurement of "every span exported".
#pragma once

#include <switchboard/host/workflow_tracing.hpp>

#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace bench {

inline switchboard::telemetry::environment_lookup trace_lookup(std::string endpoint) {
  std::map<std::string, std::string, std::less<>> variables{
      {"OTEL_EXPORTER_OTLP_ENDPOINT", std::move(endpoint)},
      {"OTEL_TRACES_SAMPLER", "always_on"},
      {"OTEL_METRICS_EXPORTER", "none"},
      {"OTEL_BSP_MAX_QUEUE_SIZE", "65536"},
  };
  return [variables = std::move(variables)](std::string_view name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

// Ends open spans, flushes within 30 s and prints the exporter's counts;
// `workflows` (warm-up included) gives spans per workflow. False when a
// span was dropped or failed.
inline bool finish_tracing(switchboard::host::process_tracing& tracing, long workflows) {
  tracing.shutdown(std::chrono::seconds(30));
  if (!tracing.tracing().exporter) {
    std::cerr << "  spans        none: the configuration left tracing off\n";
    return false;
  }
  const auto counts = tracing.tracing().exporter->counters();
  std::cerr << "  spans        " << counts.exported << " exported, " << counts.dropped << " dropped, "
            << counts.failed << " failed, " << counts.requests << " requests ("
            << static_cast<double>(counts.exported + counts.dropped + counts.failed) /
                   static_cast<double>(workflows > 0 ? workflows : 1)
            << " per workflow)\n";
  return counts.dropped == 0 && counts.failed == 0;
}

}  // namespace bench
