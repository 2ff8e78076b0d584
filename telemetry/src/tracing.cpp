#include <switchboard/telemetry/tracing.hpp>

namespace switchboard::telemetry {

tracing start_tracing(const tracing_configuration& configuration) {
  tracing out;
  if (!configuration.enabled) {
    out.tracer = std::make_shared<noop_tracer>();
    return out;
  }
  out.exporter = std::make_shared<otlp_exporter>(configuration.exporter);
  out.tracer = std::make_shared<recording_tracer>(configuration.sampler, out.exporter);
  return out;
}

}  // namespace switchboard::telemetry
