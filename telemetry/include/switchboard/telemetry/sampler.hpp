// Which traces are recorded: the OpenTelemetry SDK's standard samplers
// (always_on, always_off, traceidratio, and parentbased_* that follow the
// caller's sampled flag and use the root sampler for new traces).
//
// Thread-safety: a value type; should_sample() is const and pure.
#pragma once

#include <switchboard/telemetry/span_data.hpp>

#include <optional>
#include <string>

namespace switchboard::telemetry {

enum class sampler_kind { always_on, always_off, trace_id_ratio };

struct sampler {
  sampler_kind root = sampler_kind::always_on;
  double ratio = 1.0;        // trace_id_ratio only, in [0, 1]
  bool parent_based = true;  // a span with a valid parent follows the parent's sampled flag

  // Decides for a new span of trace `trace`. `parent` is the parent's
  // context when there is a valid one. traceidratio looks only at the trace
  // id (its last 8 bytes), so every process deciding on one trace agrees.
  bool should_sample(const trace_id& trace, const span_context* parent) const noexcept;

  // "parentbased_always_on", "traceidratio", ...: the OTEL_TRACES_SAMPLER name.
  std::string name() const;
};

}  // namespace switchboard::telemetry
