// The meter's instruments in the Prometheus text exposition format (0.0.4),
// named as OpenTelemetry's Prometheus compatibility specification maps them:
// dots and other characters Prometheus does not allow become underscores,
// the unit becomes a suffix ("s" -> _seconds; an annotation such as
// "{token}" adds none), counters end in _total, histograms give
// _bucket{le=...} (cumulative, ending with le="+Inf"), _sum and _count.
// Label names are mapped the same way; label values are escaped.
//
// Thread-safety: pure functions.
#pragma once

#include <switchboard/telemetry/metrics.hpp>

#include <span>
#include <string>
#include <string_view>

namespace switchboard::telemetry {

// "gen_ai.client.operation.duration" with unit "s" ->
// "gen_ai_client_operation_duration_seconds"; a counter adds "_total".
std::string prometheus_name(const instrument_description& description, instrument_kind kind);

// # HELP, # TYPE and the samples of every metric, in order.
std::string render_prometheus(std::span<const metric_data> metrics);

}  // namespace switchboard::telemetry
