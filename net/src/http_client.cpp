#include <switchboard/net/http_client.hpp>

#include "http_client_impl.hpp"
#include <switchboard/net/redaction.hpp>
#include "retry_timing.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace switchboard::net {

namespace asio = boost::asio;
using std::chrono::milliseconds;

attempt_result failure(net_errc code, std::string message, bool retryable) {
  attempt_result r;
  r.code = code;
  r.message = std::move(message);
  r.retryable = retryable;
  return r;
}

http_client::impl::impl(http_options options, std::string provider)
    : options_(std::move(options)),
      provider_(std::move(provider)),
      url_(parse_base_url(options_.base_url, provider_)),
      pool_(options_.max_connections_per_host, options_.idle_timeout) {
  if (url_.tls) setup_tls();
}

namespace {

std::string attempts_text(int count) { return std::to_string(count) + " attempt" + (count == 1 ? "" : "s"); }

}  // namespace

asio::awaitable<http_response> http_client::impl::post_json(std::shared_ptr<impl> self, std::string_view path,
                                                            std::string_view body,
                                                            std::span<const http_header> headers,
                                                            request_budget* budget, body_stream* stream) {
  try {
    const std::string target = self->url_.base_path + std::string(path);
    int own_attempts = 0;
    for (;;) {
      const attempt_count count = count_attempt(budget, own_attempts, self->options_.retry);
      attempt_result result;
      auto deadline = http_clock::now() + self->options_.request_timeout;
      if (budget && budget->deadline) deadline = std::min(deadline, *budget->deadline);
      if (deadline <= http_clock::now()) {
        result = failure(net_errc::timeout, "the call's deadline passed before the request was sent", false);
      } else {
        co_await self->run_attempt(target, body, headers, deadline, stream, nullptr, result);
      }
      if (result.stream_error) std::rethrow_exception(result.stream_error);
      // A stream was judged piece by piece by its reader.
      if (result.response && (result.response->streamed || self->accept_answer(result, target, headers))) {
        if (spdlog::should_log(spdlog::level::debug)) {
          spdlog::debug("{} -> HTTP {}", self->describe(target), result.response->status);
        }
        co_return std::move(*result.response);
      }
      const milliseconds delay = self->delay_before_retry(result, target, headers, count, budget);
      co_await self->sleep(delay);
    }
  } catch (const boost::system::system_error& e) {
    // Asio refuses to start another operation once the coroutine is
    // cancelled (this_coro::throw_if_cancelled): report that as ours.
    if (e.code() != asio::error::operation_aborted) throw;
    throw net_error(net_errc::cancelled, self->provider_ + ": request cancelled", 0, {}, false, "request cancelled");
  }
}

void http_client::impl::setup_tls() {
  tls_.emplace(asio::ssl::context::tls_client);
  tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  tls_->set_default_verify_paths();
  if (!options_.ca_file.empty()) {
    boost::system::error_code ec;
    tls_->load_verify_file(options_.ca_file, ec);
    if (ec) {
      throw net_error(net_errc::invalid_options,
                        provider_ + ": cannot load CA file '" + options_.ca_file + "': " + ec.message());
    }
  }
  tls_->set_verify_mode(options_.verify_peer ? asio::ssl::verify_peer : asio::ssl::verify_none);
}

// Normalises the body, then judges the answer: true when it is a 2xx the
// wire format's parser may read; otherwise the problem is kept in `result`.
bool http_client::impl::accept_answer(attempt_result& result, const std::string& target,
                                      std::span<const http_header> headers) const {
  normalize_body(result.response->body);
  const std::string_view body = result.response->body;
  if (result.head.status / 100 == 2) {
    auto problem = check_success_answer(result.head, body, headers);
    if (!problem) return true;
    result.problem = std::make_unique<answer_problem>(std::move(*problem));
  } else {
    result.problem = std::make_unique<answer_problem>(check_error_answer(result.head, body, url_, target, headers));
  }
  return false;
}

// No attempt follows one that is not `retryable`, none past the limit, none
// for a Retry-After longer than the client waits, and none that would start
// after the call's deadline. The note says how many attempts the call made
// whenever that is more than one or the limit is why it ended, so "(after
// 1 attempt)" is the truth about a call whose retries were ruled out.
http_client::impl::retry_plan http_client::impl::plan_retry(const attempt_result& result, bool retryable,
                                                            const attempt_count& count,
                                                            const request_budget* budget) const {
  retry_plan plan;
  if (!retryable) {
    if (count.number > 1) plan.give_up = "after " + attempts_text(count.number);
    return plan;
  }
  if (!count.retries_left) {
    plan.give_up = "after " + attempts_text(count.number) + ", the most allowed";
    return plan;
  }
  std::optional<milliseconds> retry_after;
  if (result.response) retry_after = parse_retry_after(result.head.retry_after);
  if (retry_after && *retry_after > options_.retry.max_retry_after) {
    plan.give_up = "after " + attempts_text(count.number) + "; Retry-After " +
                   std::to_string(retry_after->count() / 1000) + "s is longer than the client waits";
    return plan;
  }
  const milliseconds delay = retry_after ? *retry_after : backoff_delay(options_.retry, count.number);
  if (budget && budget->deadline && http_clock::now() + delay >= *budget->deadline) {
    plan.give_up = "after " + attempts_text(count.number) + "; no time left for another before the call's deadline";
    return plan;
  }
  plan.delay = delay;
  plan.from_retry_after = retry_after.has_value();
  return plan;
}

// How long to wait before the next attempt after a failed one; throws the
// attempt's error when it is not retried: not retryable (or not `allowed`
// by the request's retry scope), no attempt left, or no time left before
// the call's deadline.
milliseconds http_client::impl::delay_before_retry(const attempt_result& result, const std::string& target,
                                                   std::span<const http_header> headers, const attempt_count& count,
                                                   const request_budget* budget, http_method method,
                                                   bool allowed) const {
  std::string message;
  const net_error error = make_error(result, target, headers, message, method);
  const retry_plan plan = plan_retry(result, error.retryable() && allowed, count, budget);
  if (!plan.delay) {
    if (plan.give_up.empty()) throw error;
    const std::string note = " (" + plan.give_up + ")";
    throw net_error(error.errc(), message + note, error.http_status(), error.server_message(), error.retryable(),
                    error.reason() + note);
  }
  announce_retry(error, message, count, *plan.delay, plan.from_retry_after);
  return *plan.delay;
}

std::string http_client::impl::describe(const std::string& target, http_method method) const {
  std::string out = provider_;
  out.append(": ").append(to_string(method)).append(" ").append(url_.display);
  out.append(target, url_.base_path.size());
  return out;
}

// The error for a failed attempt; `message` receives its text (what()
// without the error code suffix, for logs). The whole text is redacted once
// more: it holds the URL and whatever the server said.
net_error http_client::impl::make_error(const attempt_result& r, const std::string& target,
                                        std::span<const http_header> headers, std::string& message,
                                        http_method method) const {
  if (!r.problem) {
    message = redact(describe(target, method) + ": " + r.message, headers);
    return net_error(r.code, message, 0, {}, r.retryable, redact(r.message, headers));
  }
  const answer_problem& p = *r.problem;
  message = redact(describe(target, method) + " " + p.what, headers);
  return net_error(p.code, message, p.http_status, p.server_message, p.retryable, redact(p.what, headers));
}

void http_client::impl::announce_retry(const net_error& error, const std::string& message,
                                       const attempt_count& count, milliseconds delay, bool from_retry_after) const {
  spdlog::warn("{} (attempt {}); retrying in {} ms (attempt {} of at most {})", message, count.number, delay.count(),
               count.number + 1, count.limit);
  if (!options_.retry.on_retry) return;
  retry_event event;
  event.attempt = count.number;
  event.http_status = error.http_status();
  event.reason = error.http_status() ? "http " + std::to_string(error.http_status())
                                     : std::string(to_string(error.errc()));
  event.delay = delay;
  event.from_retry_after = from_retry_after;
  options_.retry.on_retry(event);
}

asio::awaitable<void> http_client::impl::sleep(milliseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  if (ec) {
    throw net_error(net_errc::cancelled, provider_ + ": request cancelled while waiting to retry", 0, {}, false,
                    "request cancelled while waiting to retry");
  }
}

http_client::http_client(http_options options, std::string provider)
    : impl_(std::make_shared<impl>(std::move(options), std::move(provider))) {}

http_client::~http_client() = default;

asio::awaitable<http_response> http_client::post_json(std::string_view path, std::string_view body,
                                                      std::span<const http_header> headers, request_budget* budget,
                                                      body_stream* stream) {
  return impl::post_json(impl_, path, body, headers, budget, stream);
}

const http_options& http_client::options() const noexcept { return impl_->options(); }

}  // namespace switchboard::net
