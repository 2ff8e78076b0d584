// JSON-RPC 2.0 over HTTP to one A2A interface, and the agent card that
// names it. Every request carries A2A-Version: 1.0 and the configured
// headers (secret: redacted from every message); answers are bounded
// (max_response_bytes), parsed with the untrusted limits, and must answer
// the request's id. Internal.
#pragma once

#include <switchboard/a2a/remote_agent_config.hpp>
#include <switchboard/net/http_client.hpp>
#include <switchboard/telemetry/span_data.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace switchboard::a2a {

class rpc_client {
 public:
  // `url`: the JSON-RPC endpoint. Throws remote_failure(not_configured).
  rpc_client(std::string url, const remote_agent_config& config);

  // The `result` of `method`. Throws remote_failure: remote_agent_unreachable
  // (no answer; retryable when the network layer says so), remote_error (a
  // JSON-RPC error: its code and message), invalid_remote_response.
  // net_error(cancelled) passes through when the caller is cancelled.
  // `retry`: how the HTTP layer may repeat it (never for what starts work).
  // `trace` (when valid) goes along as traceparent and tracestate: the
  // remote agent's spans join the run's trace under the step's span.
  boost::asio::awaitable<boost::json::value> call(std::string_view method, boost::json::object params,
                                                  std::chrono::milliseconds timeout, net::retry_scope retry,
                                                  const telemetry::span_context& trace);

  const std::string& url() const noexcept { return url_; }

 private:
  std::string url_;
  remote_agent_config config_;  // a copy: a cancel sent after the step may outlive the agent
  net::http_client client_;
  std::atomic<std::int64_t> next_id_{1};
};

// Fetches the card at config.card_url and returns the URL of its first
// JSON-RPC interface of protocol 1.0, on the card's own origin. Throws
// remote_failure naming the card and what it lacks.
boost::asio::awaitable<std::string> interface_from_card(const remote_agent_config& config);

// The HTTP settings for a remote agent at `url` (its timeouts, TLS).
net::http_options http_options_for(const remote_agent_config& config, std::string url);

}  // namespace switchboard::a2a
