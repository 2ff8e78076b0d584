#include <switchboard/telemetry/sampler.hpp>

#include <cmath>

namespace switchboard::telemetry {
namespace {

// As the OpenTelemetry SDKs do: the trace id's lower 8 bytes, read as an
// unsigned number without its top bit, compared to ratio * 2^63.
bool trace_id_below_ratio(const trace_id& trace, double ratio) noexcept {
  if (ratio >= 1.0) return true;
  if (!(ratio > 0.0)) return false;
  std::uint64_t low = 0;
  for (std::size_t i = 8; i < 16; ++i) low = (low << 8) | trace.bytes[i];
  // ratio < 1 here, so the bound fits; compared as integers, since a
  // double cannot tell ids near the bound apart.
  const auto bound = static_cast<std::uint64_t>(std::ldexp(ratio, 63));
  return (low >> 1) < bound;
}

}  // namespace

bool sampler::should_sample(const trace_id& trace, const span_context* parent) const noexcept {
  if (parent_based && parent != nullptr && parent->valid()) return parent->sampled();
  switch (root) {
    case sampler_kind::always_on:
      return true;
    case sampler_kind::always_off:
      return false;
    case sampler_kind::trace_id_ratio:
      return trace_id_below_ratio(trace, ratio);
  }
  return false;
}

std::string sampler::name() const {
  std::string base = root == sampler_kind::always_on    ? "always_on"
                     : root == sampler_kind::always_off ? "always_off"
                                                        : "traceidratio";
  return parent_based ? "parentbased_" + base : base;
}

}  // namespace switchboard::telemetry
