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
#include <cctype>

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

// Counts the attempt about to start, in the call's budget when there is one.
attempt_count count_attempt(request_budget* budget, int& own_attempts, const retry_policy& policy) {
  attempt_count count;
  ++own_attempts;
  if (budget && budget->max_attempts > 0) {
    count.number = ++budget->attempts;
    count.limit = budget->max_attempts;
    count.retries_left = count.number < count.limit;
    return count;
  }
  // No limit from the caller: the retry policy counts this request's attempts.
  count.number = budget ? ++budget->attempts : own_attempts;
  count.limit = std::max(1, policy.max_attempts) + (count.number - own_attempts);
  count.retries_left = own_attempts < std::max(1, policy.max_attempts);
  return count;
}

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

namespace {

// Whether `scope` makes another attempt after an answer with `status`.
bool retries_status(retry_scope scope, int status) {
  switch (scope) {
    case retry_scope::transient: return is_retryable_status(status);
    case retry_scope::unprocessed: return status == 429 || status == 503;
    case retry_scope::none: return false;
  }
  return false;
}

// Whether `scope` makes another attempt after a transient failure of an
// attempt that did or did not (`sent`) write its request.
bool retries_failure(retry_scope scope, bool sent) {
  return scope == retry_scope::transient || (scope == retry_scope::unprocessed && !sent);
}

// Header names the client writes itself; a caller's would make the request
// ambiguous (two lengths, a second host).
bool is_framing_header(std::string_view name) {
  for (const std::string_view own : {"host", "content-length", "transfer-encoding"}) {
    if (std::ranges::equal(name, own, [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == static_cast<unsigned char>(b);
        })) {
      return true;
    }
  }
  return false;
}

}  // namespace

// The same loop as post_json's, but every status is an answer: one the
// retry scope retries is retried while the policy and the budget allow,
// and otherwise returned; transient failures are retried only as far as
// the scope allows.
asio::awaitable<http_result> http_client::impl::request(std::shared_ptr<impl> self, http_request request) {
  try {
    for (const auto& h : request.headers) {
      if (is_framing_header(h.name)) {
        const std::string why = "the header '" + excerpt(h.name, {}, 60) + "' is the client's own to write";
        throw net_error(net_errc::invalid_options, self->provider_ + ": " + why, 0, {}, false, why);
      }
    }
    const std::string target = self->url_.base_path + std::string(request.path);
    const milliseconds timeout = request.timeout.count() > 0 ? request.timeout : self->options_.request_timeout;
    general_request general(request);
    general.max_body_bytes = request.max_body_bytes > 0 ? request.max_body_bytes : self->options_.max_response_bytes;
    int own_attempts = 0;
    for (;;) {
      const attempt_count count = count_attempt(request.budget, own_attempts, self->options_.retry);
      attempt_result result;
      general.headers.clear();
      general.truncated = false;
      general.sent = false;
      auto deadline = http_clock::now() + timeout;
      if (request.budget && request.budget->deadline) deadline = std::min(deadline, *request.budget->deadline);
      if (deadline <= http_clock::now()) {
        result = failure(net_errc::timeout, "the call's deadline passed before the request was sent", false);
      } else {
        co_await self->run_attempt(target, request.body, request.headers, deadline, request.stream, &general, result);
      }
      if (result.stream_error) std::rethrow_exception(result.stream_error);
      if (result.response) {
        std::optional<milliseconds> delay;
        if (!result.response->streamed && retries_status(request.retry, result.response->status)) {
          delay = self->delay_before_status_retry(result, target, request, count);
        }
        if (!delay) {
          if (spdlog::should_log(spdlog::level::debug)) {
            spdlog::debug("{} -> HTTP {}", self->describe(target, request.method), result.response->status);
          }
          http_result out;
          out.status = result.response->status;
          out.headers = std::move(general.headers);
          out.body = std::move(result.response->body);
          out.streamed = result.response->streamed;
          out.truncated = general.truncated;
          co_return out;
        }
        co_await self->sleep(*delay);
        continue;
      }
      const milliseconds delay =
          self->delay_before_retry(result, target, request.headers, count, request.budget, request.method,
                                   retries_failure(request.retry, general.sent));
      co_await self->sleep(delay);
    }
  } catch (const boost::system::system_error& e) {
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

// Whether another attempt follows a failed one, and after how long; when
// none does, `give_up` says why for the error's message ("" when the
// failure was the first attempt's and not retryable: nothing to add).
struct http_client::impl::retry_plan {
  std::optional<milliseconds> delay;
  std::string give_up;
  bool from_retry_after = false;
};

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

// request(): an answer whose status the retry scope retries. The delay
// before the next attempt, or nullopt when there is none: the answer is
// then the request's.
std::optional<milliseconds> http_client::impl::delay_before_status_retry(attempt_result& result,
                                                                        const std::string& target,
                                                                        const http_request& request,
                                                                        const attempt_count& count) const {
  const retry_plan plan = plan_retry(result, true, count, request.budget);
  if (!plan.delay) {
    spdlog::debug("{} -> HTTP {}, not retried ({})", describe(target, request.method), result.head.status,
                  plan.give_up);
    return std::nullopt;
  }
  result.problem = std::make_unique<answer_problem>();
  result.problem->code = net_errc::http_status;
  result.problem->http_status = result.head.status;
  result.problem->retryable = true;
  result.problem->what = "returned HTTP " + std::to_string(result.head.status);
  std::string message;
  const net_error error = make_error(result, target, request.headers, message, request.method);
  announce_retry(error, message, count, *plan.delay, plan.from_retry_after);
  return plan.delay;
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

asio::awaitable<http_result> http_client::request(http_request request) {
  return impl::request(impl_, request);
}

const http_options& http_client::options() const noexcept { return impl_->options(); }

std::string_view to_string(http_method method) noexcept {
  switch (method) {
    case http_method::get: return "GET";
    case http_method::post: return "POST";
    case http_method::put: return "PUT";
    case http_method::patch: return "PATCH";
    case http_method::delete_: return "DELETE";
  }
  return "GET";
}

std::optional<std::string_view> http_result::header(std::string_view name) const noexcept {
  for (const auto& h : headers) {
    if (std::ranges::equal(h.name, name, [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      return std::string_view(h.value);
    }
  }
  return std::nullopt;
}

}  // namespace switchboard::net
