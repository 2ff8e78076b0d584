// When the HTTP transport retries and how long it waits (retry_policy in
// http_options.hpp). Internal.
//
// Thread-safety: pure functions (backoff_delay draws from a thread-local
// generator).
#pragma once

#include <switchboard/net/http_options.hpp>

#include <chrono>
#include <optional>
#include <string_view>

namespace switchboard::net {

// 408, 409, 429 and 5xx: statuses a later attempt may get past.
bool is_retryable_status(int status);

// A Retry-After value in seconds; nullopt for anything else (HTTP dates are
// not honoured: the backoff applies).
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value);

// The backoff before the attempt after `failed_attempt` (1-based): grows by
// the multiplier from the initial backoff, capped, with jitter.
std::chrono::milliseconds backoff_delay(const retry_policy& policy, int failed_attempt);

}  // namespace switchboard::net
