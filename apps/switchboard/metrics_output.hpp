// The `switchboard` tool's metrics in the Prometheus text exposition format
// (version 0.0.4, what node_exporter's textfile collector and a
// Pushgateway read): the parser's, the model's (requests, errors, retries,
// tokens), the response cache's and the hub's counters, each family once
// with its # HELP and # TYPE lines.
//
//   # HELP switchboard_model_requests_total Calls that reached the model's provider, by outcome.
//   # TYPE switchboard_model_requests_total counter
//   switchboard_model_requests_total{outcome="ok",provider="openai"} 2
//
// Names are made valid ([a-zA-Z_:][a-zA-Z0-9_:]*, other characters become
// '_'); label values (agent and node names come from workflow files) are
// escaped as the format asks (\\, \", \n), and a character a terminal would
// act on appears as its visible escape (<switchboard/protocol/terminal_text.hpp>),
// so the text is safe to print. Integral values print as integers, others
// in the shortest form that reads back the same; NaN and infinities as
// NaN, +Inf, -Inf.
//
// Thread-safety: free functions; the sources' collect() is called once each.
#pragma once

#include <switchboard/protocol/metrics.hpp>

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::cli {

// The samples as exposition text: families in the order they first appear,
// samples of one family together in their order.
std::string render_prometheus(std::span<const protocol::metric_sample> samples);

// Every source's samples (null entries skipped), rendered as one text.
std::string render_prometheus(std::span<const protocol::metrics_source* const> sources);

// For --metrics DEST: "-" writes `text` to standard error; a path writes it
// atomically (a temporary file beside it, renamed into place, 0644), so a
// textfile collector never reads half of it. Throws std::runtime_error
// naming the path when it cannot be written.
void write_metrics(std::string_view destination, std::string_view text);

}  // namespace switchboard::cli
