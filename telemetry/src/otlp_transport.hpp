// Internal: one OTLP/HTTP request body delivered to the collector, with the
// retries the OTLP specification asks for — 429, 502, 503, 504, a refused
// or reset connection and a timeout are retried with exponential back-off
// and jitter, a Retry-After in seconds honoured up to a cap; anything else
// is final. Shared by the trace and the metric exporters, which differ only
// in what they batch and count.
//
// Thread-safety: deliver() runs on the owner's io_context; the hooks are
// called there.
#pragma once

#include <switchboard/telemetry/otlp_exporter.hpp>

#include <switchboard/net/http_client.hpp>
#include <switchboard/net/http_header.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::telemetry::detail {

struct delivery {
  bool delivered = false;
  std::uint64_t rejected = 0;  // items a 2xx's partialSuccess rejected
  int attempts = 0;
  std::string what;  // the last failure, for the log: a status or the client's redacted message
};

struct delivery_hooks {
  // Each attempt's timeout (the exporter shortens it near its shutdown's deadline).
  std::function<std::chrono::milliseconds()> attempt_timeout;
  // Whether a retry may wait `pause` first (false: give up, the deadline is near).
  std::function<bool(std::chrono::milliseconds pause)> may_wait;
  std::function<void()> on_request;
  std::function<void()> on_retry;
};

class otlp_transport {
 public:
  // `rejected_field`: the partialSuccess count ("rejectedSpans",
  // "rejectedDataPoints"). Throws std::invalid_argument for a bad endpoint
  // or a limit that is not positive.
  otlp_transport(const otlp_exporter_options& options, std::string rejected_field);

  // Sends `body` until it is delivered, refused for good, the attempts run
  // out, or a hook says to stop. A cancelled wait ends it undelivered.
  boost::asio::awaitable<delivery> deliver(boost::asio::io_context& io, std::string_view body,
                                           const delivery_hooks& hooks);

 private:
  struct attempt_outcome;
  boost::asio::awaitable<attempt_outcome> send(std::string_view body, std::chrono::milliseconds timeout);
  std::optional<std::chrono::milliseconds> retry_delay(const attempt_outcome& outcome, int attempt);
  std::chrono::milliseconds backoff(int attempt);

  const otlp_exporter_options options_;
  const std::string rejected_field_;
  std::vector<net::http_header> headers_;  // views of options_.headers
  net::http_client client_;
  std::mt19937_64 random_{std::random_device{}()};
};

}  // namespace switchboard::telemetry::detail
