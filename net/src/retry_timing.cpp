#include "retry_timing.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>

namespace switchboard::net {

using std::chrono::milliseconds;

bool is_retryable_status(int status) {
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

std::optional<milliseconds> parse_retry_after(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  long long seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || seconds < 0) {
    return std::nullopt;
  }
  return milliseconds(seconds * 1000);
}

milliseconds backoff_delay(const retry_policy& policy, int failed_attempt) {
  thread_local std::mt19937 rng{std::random_device{}()};
  const double base = static_cast<double>(policy.initial_backoff.count()) *
                      std::pow(policy.multiplier, failed_attempt - 1);
  const double capped = std::min(base, static_cast<double>(policy.max_backoff.count()));
  const double jitter = std::clamp(policy.jitter, 0.0, 1.0);
  std::uniform_real_distribution<double> spread(1.0 - jitter, 1.0 + jitter);
  return milliseconds(static_cast<long long>(std::max(0.0, capped * spread(rng))));
}

}  // namespace switchboard::net
