// Internal: the OTLP/JSON body of otlp_json.hpp in pieces, for an exporter
// that encodes each span as it ends and sends a batch's text as it is:
//
//   otlp_traces_prefix(...) + span + "," + span + ... + otlp_traces_suffix
//
// Thread-safety: pure functions.
#pragma once

#include <switchboard/telemetry/otlp_json.hpp>

#include <string>
#include <string_view>

namespace switchboard::telemetry::detail {

// The body's text up to its first span, and after its last.
std::string otlp_traces_prefix(const resource& emitter, const instrumentation_scope& scope);
inline constexpr char otlp_traces_suffix[] = "]}]}]}";

// One span's JSON object, written into `buffer` from its start and returned
// as a view of it. `buffer` is scratch space: its size is left as large as
// it had to grow, so a buffer kept for the next span is neither allocated
// nor cleared again.
std::string_view write_otlp_span(std::string& buffer, const span_data& finished);

}  // namespace switchboard::telemetry::detail
