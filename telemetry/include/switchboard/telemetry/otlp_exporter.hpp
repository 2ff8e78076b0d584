// The OTLP/HTTP trace exporter: finished spans are queued, batched, encoded
// as OTLP/JSON (otlp_json.hpp) and POSTed to the collector's traces
// endpoint on the project's HTTP client, from a thread of the exporter's
// own. It is a span_processor: give it to a recording_tracer.
//
// Nothing a collector does can block or grow the caller: on_end() only
// queues; a full queue drops the span and counts it. A failed request is
// retried with exponential back-off on a connection error, a timeout and
// 429, 502, 503 and 504 (a Retry-After in seconds is honoured, up to
// max_retry_after); any other answer is final. shutdown() and
// force_flush() wait at most the time they are given; what could not be
// sent by then is counted as failed.
//
// Header values (vendors' keys) are never logged; they are scrubbed from
// every error message the HTTP client makes.
//
// Thread-safety: every member may be called from any thread at once.
#pragma once

#include <switchboard/telemetry/otlp_json.hpp>
#include <switchboard/telemetry/span_data.hpp>
#include <switchboard/telemetry/tracer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace switchboard::telemetry {

struct otlp_exporter_options {
  // The traces URL itself: "http://127.0.0.1:4318/v1/traces" (the
  // configuration appends /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT).
  // https verifies the collector's certificate and host name.
  std::string endpoint;
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every request, never logged
  telemetry::resource resource;
  instrumentation_scope scope;

  std::size_t max_queue_size = 2048;  // spans waiting; one more is dropped and counted
  std::size_t max_export_batch_size = 512;
  // A batch goes out when it is full, or this long after the last export.
  std::chrono::milliseconds schedule_delay{5000};
  // One request, from connecting to the answer's last byte.
  std::chrono::milliseconds timeout{10000};
  // Attempts per batch (1: no retry), the back-off between them (doubled
  // each time, +/- 20 %, up to max_backoff) and the longest Retry-After
  // waited for (a longer one is shortened to it).
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds max_retry_after{30000};
  // TLS: verification stays on outside a lab; ca_file (PEM) is trusted too.
  bool verify_peer = true;
  std::string ca_file;
  // The destructor's bound on the final flush.
  std::chrono::milliseconds shutdown_timeout{5000};
};

// Spans by what became of them, since the exporter started.
struct exporter_counters {
  std::uint64_t exported = 0;  // accepted by the collector (a 2xx, less what its partialSuccess rejected)
  std::uint64_t dropped = 0;   // never queued: the queue was full, or the exporter was shut down
  std::uint64_t failed = 0;    // queued, then given up: a final error, attempts or time exhausted, shutdown,
                               // or rejected by the collector in a partialSuccess
  std::uint64_t retries = 0;   // requests sent again (not spans)
  std::uint64_t requests = 0;  // requests sent, retries included
};

class otlp_exporter final : public span_processor {
 public:
  // Starts the exporter's thread. Throws std::invalid_argument naming the
  // endpoint when it is not an http(s) URL (or carries user:password@),
  // and when a limit is 0.
  explicit otlp_exporter(otlp_exporter_options options);
  // shutdown(options.shutdown_timeout).
  ~otlp_exporter() override;
  otlp_exporter(const otlp_exporter&) = delete;
  otlp_exporter& operator=(const otlp_exporter&) = delete;

  // Queues the span, or drops and counts it. Never blocks on the network.
  void on_end(span_data&& finished) noexcept override;

  // Sends what was queued before the call without waiting for the
  // schedule. True when all of it was exported or given up on within
  // `timeout`; false when the time ran out first (sending goes on).
  bool force_flush(std::chrono::milliseconds timeout);

  // Sends what is queued and stops, within `timeout`: a request or a
  // back-off still running then is cancelled, and every span not exported
  // is counted as failed. Later spans are dropped. Idempotent.
  void shutdown(std::chrono::milliseconds timeout);

  exporter_counters counters() const;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace switchboard::telemetry
