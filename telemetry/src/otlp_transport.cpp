#include "otlp_transport.hpp"

#include <switchboard/net/error.hpp>
#include <switchboard/net/http_options.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace switchboard::telemetry::detail {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

bool retryable_status(int status) { return status == 429 || status == 502 || status == 503 || status == 504; }

// Retry-After as delta-seconds; an HTTP date or garbage is ignored (the
// back-off applies).
std::optional<milliseconds> parse_retry_after(std::optional<std::string_view> header) {
  if (!header) return std::nullopt;
  std::string_view text = *header;
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::uint64_t seconds = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  constexpr std::uint64_t a_day = 24 * 3600;
  return std::chrono::seconds(std::min(seconds, a_day));
}

// A 2xx may carry {"partialSuccess": {"rejectedSpans": "2", "errorMessage": ...}}
// (an int64: a string in OTLP/JSON, a number from some collectors).
// Anything unreadable counts as nothing rejected.
std::uint64_t rejected_count(std::string_view body, std::string_view field) {
  boost::system::error_code ec;
  const boost::json::value answer = boost::json::parse(body, ec);
  if (ec || !answer.is_object()) return 0;
  const boost::json::value* partial = answer.as_object().if_contains("partialSuccess");
  if (partial == nullptr || !partial->is_object()) return 0;
  const boost::json::value* rejected = partial->as_object().if_contains(field);
  if (rejected == nullptr) return 0;
  if (rejected->is_int64()) return static_cast<std::uint64_t>(std::max<std::int64_t>(0, rejected->as_int64()));
  if (rejected->is_uint64()) return rejected->as_uint64();
  if (!rejected->is_string()) return 0;
  std::uint64_t count = 0;
  const boost::json::string& text = rejected->as_string();
  std::from_chars(text.data(), text.data() + text.size(), count);
  return count;
}

net::http_options client_options(const otlp_exporter_options& options) {
  net::http_options out;
  out.base_url = options.endpoint;
  out.connect_timeout = options.timeout;
  out.request_timeout = options.timeout;
  out.retry.max_attempts = 1;  // the exporter retries itself: it counts, and knows its deadline
  out.verify_peer = options.verify_peer;
  out.ca_file = options.ca_file;
  out.max_connections_per_host = 2;
  out.max_response_bytes = 64 * 1024;  // a collector answers {} or a partialSuccess
  out.user_agent = "switchboard-otlp/0.1";
  return out;
}

const otlp_exporter_options& checked(const otlp_exporter_options& options) {
  if (options.max_queue_size == 0 || options.max_export_batch_size == 0 || options.max_attempts < 1 ||
      options.timeout <= milliseconds::zero())
    throw std::invalid_argument(
        "otlp exporter: max_queue_size, max_export_batch_size, max_attempts and timeout must be positive");
  return options;
}

net::http_client make_client(const otlp_exporter_options& options) {
  try {
    return net::http_client(client_options(options), "otlp");
  } catch (const net::net_error& error) {
    throw std::invalid_argument(std::string("otlp exporter endpoint: ") + error.what());
  }
}

}  // namespace

struct otlp_transport::attempt_outcome {
  bool delivered = false;
  bool retryable = false;
  std::optional<milliseconds> retry_after;
  std::uint64_t rejected = 0;
  std::string what;
};

otlp_transport::otlp_transport(const otlp_exporter_options& options, std::string rejected_field)
    : options_(checked(options)), rejected_field_(std::move(rejected_field)), client_(make_client(options_)) {
  for (const auto& [name, value] : options_.headers) headers_.push_back(net::http_header{name, value, true});
}

asio::awaitable<delivery> otlp_transport::deliver(asio::io_context& io, std::string_view body,
                                                  const delivery_hooks& hooks) {
  delivery out;
  for (int attempt = 1;; ++attempt) {
    out.attempts = attempt;
    if (hooks.on_request) hooks.on_request();
    const milliseconds timeout = hooks.attempt_timeout ? hooks.attempt_timeout() : options_.timeout;
    const attempt_outcome outcome = co_await send(body, timeout);
    out.what = outcome.what;
    if (outcome.delivered) {
      out.delivered = true;
      out.rejected = outcome.rejected;
      co_return out;
    }
    const std::optional<milliseconds> pause = retry_delay(outcome, attempt);
    if (!pause || (hooks.may_wait && !hooks.may_wait(*pause))) co_return out;
    if (hooks.on_retry) hooks.on_retry();
    asio::steady_timer timer(io, *pause);
    const auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) {  // cancelled at shutdown
      out.what = "cancelled at shutdown";
      co_return out;
    }
  }
}

asio::awaitable<otlp_transport::attempt_outcome> otlp_transport::send(std::string_view body, milliseconds timeout) {
  static constexpr std::string_view wanted_headers[] = {"retry-after"};
  net::http_request request;
  request.method = net::http_method::post;
  request.body = body;
  request.headers = headers_;
  request.response_headers = wanted_headers;
  request.timeout = timeout;
  request.retry = net::retry_scope::none;
  attempt_outcome outcome;
  try {
    const net::http_result result = co_await client_.request(request);
    outcome.delivered = result.status >= 200 && result.status < 300;
    outcome.retryable = retryable_status(result.status);
    outcome.retry_after = parse_retry_after(result.header("retry-after"));
    if (outcome.delivered) outcome.rejected = rejected_count(result.body, rejected_field_);
    outcome.what = "HTTP " + std::to_string(result.status);
  } catch (const net::net_error& error) {
    // Refused, reset, timed out: the collector may be back soon. Not a
    // cancellation (the shutdown's), nor a certificate that is not
    // trusted: another attempt would meet the same certificate.
    outcome.retryable = error.errc() != net::net_errc::cancelled &&
                        error.errc() != net::net_errc::tls_verification_failed;
    outcome.what = error.what();
  } catch (const std::exception& error) {
    // Not the network's: out of memory, or a cancellation that surfaced
    // as Asio's own error. Another attempt would not fare better.
    outcome.what = error.what();
  }
  co_return outcome;
}

// When to try again, or nullopt to give up: a final answer or the last attempt.
std::optional<milliseconds> otlp_transport::retry_delay(const attempt_outcome& outcome, int attempt) {
  if (!outcome.retryable || attempt >= options_.max_attempts) return std::nullopt;
  return outcome.retry_after ? std::min(*outcome.retry_after, options_.max_retry_after) : backoff(attempt);
}

milliseconds otlp_transport::backoff(int attempt) {
  double delay = static_cast<double>(options_.initial_backoff.count());
  for (int i = 1; i < attempt; ++i) delay *= 2.0;
  delay = std::min(delay, static_cast<double>(options_.max_backoff.count()));
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return milliseconds(static_cast<std::int64_t>(delay * jitter(random_)));
}

}  // namespace switchboard::telemetry::detail
