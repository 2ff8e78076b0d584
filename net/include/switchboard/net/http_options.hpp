// Settings of an HTTP client (http_client.hpp): where the server is, how
// long to wait, how to retry, how to trust TLS peers, how many connections to
// keep. The model clients take them as their transport settings.
//
// Thread-safety: plain values; copy them freely. The on_retry observer is
// called from the coroutine that retries, possibly on several threads at
// once when the client is shared — make it thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace switchboard::net {

// Why a request is about to be retried, for logs, metrics and tests.
struct retry_event {
  int attempt = 0;                       // the attempt that failed, 1-based
  int http_status = 0;                   // 0 for connection errors and timeouts
  std::string reason;                    // "http 429", "connection_lost", "timeout", ...
  std::chrono::milliseconds delay{0};    // how long the client waits before the next attempt
  bool from_retry_after = false;         // delay taken from the server's Retry-After
};

// Exponential backoff with jitter on connection errors, timeouts, 408, 409,
// 429 and 5xx; other 4xx are never retried. A Retry-After header (seconds)
// sets the delay instead, up to max_retry_after; a longer Retry-After fails
// the request at once rather than sleeping for it.
struct retry_policy {
  int max_attempts = 3;                                    // 1 = no retries
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{std::chrono::seconds(20)};
  double multiplier = 2.0;
  double jitter = 0.2;                                     // +/- this fraction of the delay
  std::chrono::milliseconds max_retry_after{std::chrono::seconds(60)};
  bool retry_timeouts = true;
  std::function<void(const retry_event&)> on_retry;        // optional observer
};

struct http_options {
  // Scheme, host, optional port and path prefix: "https://api.openai.com/v1",
  // "http://127.0.0.1:11434/v1". The provider's path is appended. Credentials
  // in the URL (user:password@host) are refused with not_configured: a URL
  // is stored and printed, so the key belongs in the provider's api_key.
  // Redirects (3xx) are reported, never followed: the key would go along to
  // the new address; the error names the base URL to set instead.
  std::string base_url;

  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};   // resolve + TCP + TLS
  std::chrono::milliseconds request_timeout{std::chrono::seconds(120)};  // one attempt, start to last byte
  retry_policy retry;
  // Streamed requests (chat_request::stream) only: a stream that sends no
  // byte for this long — before its head, or between two pieces — has
  // stalled. The attempt is cancelled and retried like a timeout (when
  // retry.retry_timeouts), within the call's deadline and attempt budget.
  // Keep-alive comments and pings count as bytes.
  std::chrono::milliseconds stream_idle_timeout{std::chrono::seconds(30)};

  // TLS: peer and host-name verification are on unless verify_peer is false
  // (never do that outside a lab). The system CA store is used, plus ca_file
  // (PEM) when given.
  bool verify_peer = true;
  std::string ca_file;

  // HTTP/1.1 keep-alive pool: at most this many connections per host; more
  // concurrent requests wait for a free connection (within their deadline).
  std::size_t max_connections_per_host = 64;
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};  // idle connections older than this are dropped

  // Larger bodies fail with response_too_large. Requests say
  // Accept-Encoding: identity; a compressed answer is reported, not decoded.
  std::size_t max_response_bytes = 8 * 1024 * 1024;
  std::string user_agent = "switchboard/0.1";
};

}  // namespace switchboard::net
