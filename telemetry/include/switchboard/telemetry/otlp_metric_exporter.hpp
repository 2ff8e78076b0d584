// The OTLP/HTTP metric exporter: every `interval` it collects a meter's
// instruments (cumulative points) and POSTs them as OTLP/JSON to the
// collector's metrics endpoint, from a thread of its own, with the trace
// exporter's transport and retries (429, 502, 503, 504, connection errors
// and timeouts; Retry-After honoured). A collection that could not be
// delivered is not queued: the next one carries the cumulative totals.
//
// shutdown() sends one last collection and stops, within the time it is
// given; a request or back-off still running then is cancelled. Nothing a
// collector does can block the code that records into the meter.
//
// Thread-safety: every member may be called from any thread at once.
#pragma once

#include <switchboard/telemetry/metrics.hpp>
#include <switchboard/telemetry/otlp_exporter.hpp>

#include <chrono>
#include <cstdint>
#include <memory>

namespace switchboard::telemetry {

struct otlp_metric_exporter_options {
  // endpoint is the metrics URL itself ("http://127.0.0.1:4318/v1/metrics");
  // headers, resource, scope, timeout, attempts, back-off, TLS and
  // shutdown_timeout as for traces; the queue and batch limits are unused.
  otlp_exporter_options otlp;
  // OTEL_METRIC_EXPORT_INTERVAL.
  std::chrono::milliseconds interval{60000};
};

struct metric_exporter_counters {
  std::uint64_t exports = 0;   // collections the collector accepted
  std::uint64_t failed = 0;    // collections given up on
  std::uint64_t rejected_points = 0;  // data points a partialSuccess rejected
  std::uint64_t requests = 0;  // retries included
  std::uint64_t retries = 0;
};

class otlp_metric_exporter {
 public:
  // Starts the exporter's thread. Throws std::invalid_argument for an
  // endpoint that is not an http(s) URL or a limit that is not positive.
  otlp_metric_exporter(std::shared_ptr<const meter> source, otlp_metric_exporter_options options);
  ~otlp_metric_exporter();  // shutdown(options.otlp.shutdown_timeout)
  otlp_metric_exporter(const otlp_metric_exporter&) = delete;
  otlp_metric_exporter& operator=(const otlp_metric_exporter&) = delete;

  // Collects and exports now. True when that export finished (delivered or
  // given up on) within `timeout`.
  bool force_flush(std::chrono::milliseconds timeout);
  // Exports one last time and stops, within `timeout`. Idempotent.
  void shutdown(std::chrono::milliseconds timeout);

  metric_exporter_counters counters() const;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace switchboard::telemetry
