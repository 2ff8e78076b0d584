// http_client::request(): the general request, any method, every status an
// answer (http_client.hpp). Its own translation unit, apart from post_json's
// loop in http_client.cpp, so that the model clients' path is compiled as it
// was; the attempt on the wire (http_exchange.cpp) is shared.
#include <switchboard/net/http_client.hpp>

#include "http_client_impl.hpp"
#include <switchboard/net/redaction.hpp>
#include "retry_timing.hpp"

#include <boost/asio/this_coro.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

namespace switchboard::net {

namespace asio = boost::asio;
using std::chrono::milliseconds;

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

asio::awaitable<http_result> http_client::request(http_request request) {
  return impl::request(impl_, request);
}

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
