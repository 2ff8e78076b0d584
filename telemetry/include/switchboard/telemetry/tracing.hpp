// Tracing as the configuration says: the recording tracer with its OTLP
// exporter when tracing is on, the no-op tracer when it is off. What the
// command line, the server and an embedding application call once at start.
//
//   auto tracing = telemetry::start_tracing(
//       telemetry::tracing_configuration_from(telemetry::process_environment()));
//   hub_options.tracer = tracing.tracer;   // later: the hub emits through it
//   ...
//   tracing.shutdown(std::chrono::seconds(5));  // or let the destructor do it
//
// Thread-safety: the tracer is shared by any number of threads; shutdown()
// may be called from any thread, once or more.
#pragma once

#include <switchboard/telemetry/configuration.hpp>
#include <switchboard/telemetry/otlp_exporter.hpp>
#include <switchboard/telemetry/tracer.hpp>

#include <chrono>
#include <memory>

namespace switchboard::telemetry {

struct tracing {
  std::shared_ptr<telemetry::tracer> tracer;      // never null
  std::shared_ptr<otlp_exporter> exporter;        // null when tracing is off

  // Flushes and stops the exporter within `timeout` (nothing when off).
  void shutdown(std::chrono::milliseconds timeout) const {
    if (exporter) exporter->shutdown(timeout);
  }
};

// Throws std::invalid_argument for an endpoint the HTTP client refuses.
tracing start_tracing(const tracing_configuration& configuration);

}  // namespace switchboard::telemetry
