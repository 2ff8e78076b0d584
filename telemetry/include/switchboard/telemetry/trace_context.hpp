// W3C Trace Context (https://www.w3.org/TR/trace-context/): the
// `traceparent` and `tracestate` headers that carry a trace from one process
// to the next. Parsing is strict, since the headers come from outside: a
// malformed value is rejected (nullopt), never half-read, and never throws.
//
// Thread-safety: pure functions.
#pragma once

#include <switchboard/telemetry/span_data.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace switchboard::telemetry {

inline constexpr std::string_view traceparent_header = "traceparent";
inline constexpr std::string_view tracestate_header = "tracestate";

// "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", lower-case hex.
// Rejected: another length, upper-case or non-hex digits, version ff, an
// all-zero trace or parent id, version 00 with anything after the flags. A
// later version is read by its first four fields (as the spec asks) when
// what follows them starts with '-'. The result is remote (is_remote).
// `tracestate` is kept when it is valid (parse_tracestate) and dropped when
// not: a bad tracestate does not invalidate the traceparent.
std::optional<span_context> parse_traceparent(std::string_view traceparent, std::string_view tracestate = {});

// The traceparent of `context` (version 00). `context` must be valid().
std::string format_traceparent(const span_context& context);

// A tracestate list checked against the spec's grammar: at most 32
// members, each key=value with a valid key (lower-case, digits, _-*/ and an
// optional tenant@system) and value (printable ASCII without ',' or '=',
// at most 256 characters), empty members allowed. Returns the list with
// the spaces around members removed, or nullopt when any member is invalid
// or the list is longer than 8 KiB.
std::optional<std::string> parse_tracestate(std::string_view tracestate);

}  // namespace switchboard::telemetry
