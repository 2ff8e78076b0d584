// The implementation of http_client, in two files by concern:
// http_client.cpp runs a request (attempts, retries, judging the answer,
// the errors), http_exchange.cpp runs one attempt on the wire (a pooled or
// new connection, TLS, writing the request, reading the response).
// post_json and request() share both; what only request() needs travels in
// a general_request, null for post_json, so that post_json's path stays as
// it was (no allocation, no copy more). Internal to net/.
#pragma once

#include "connection.hpp"
#include "connection_pool.hpp"
#include "endpoint_url.hpp"
#include <switchboard/net/http_client.hpp>
#include "response_diagnosis.hpp"

#include <switchboard/net/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace switchboard::net {

using http_clock = std::chrono::steady_clock;

// A result as a tuple with its error code, not an exception.
inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

// Whether the awaiting coroutine was cancelled (its cancellation state).
inline bool cancelled(boost::asio::cancellation_state state) {
  return state.cancelled() != boost::asio::cancellation_type::none;
}

// A request() in progress: what it asked for, and what the current attempt
// found beyond the status and body.
struct general_request {
  explicit general_request(const http_request& r) : request(r) {}
  const http_request& request;
  std::size_t max_body_bytes = 0;        // the 2xx limit in force
  std::vector<response_header> headers;  // the answer's headers asked for
  bool truncated = false;                // a non-2xx body cut at its limit
  // The request was (being) written: the server may have acted on it.
  bool sent = false;
};

// The outcome of one attempt: a response (judged by the client: usable, or
// a `problem`), or a transport failure that may be retried.
struct attempt_result {
  std::optional<http_response> response;
  response_head head;
  std::unique_ptr<answer_problem> problem;  // why the response cannot be used
  net_errc code = net_errc::connection_lost;
  std::string message;
  bool retryable = false;
  // A new plain-HTTP connection closed without a byte of answer: what a TLS
  // server does with a plain request, worth a probe (see run_attempt).
  bool closed_unanswered = false;
  // Streaming (post_json's body_stream): what the stream threw that ends
  // the request as is, not retried.
  std::exception_ptr stream_error;
};

attempt_result failure(net_errc code, std::string message, bool retryable);

// Where a request stands in its attempts: `number` is the attempt just made
// as the caller sees it (the call's count when a request_budget is given),
// `retries_left` whether the limit allows another.
struct attempt_count {
  int number = 0;
  int limit = 0;
  bool retries_left = false;
};

// Counts the attempt about to start, in the call's budget when there is one.
inline attempt_count count_attempt(request_budget* budget, int& own_attempts, const retry_policy& policy) {
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

// Gives the connection back to the pool when the request ends, closing it
// unless the exchange finished cleanly on a keep-alive connection.
struct lease {
  connection_pool& pool;
  std::unique_ptr<connection> conn;
  bool slot_held = true;
  bool reusable = false;
  ~lease() {
    if (slot_held) pool.release(std::move(conn), reusable && conn != nullptr);
  }
};

class http_client::impl {
 public:
  impl(http_options options, std::string provider);

  // The whole request, retries included. Static and owning the client: a
  // request in flight keeps it alive, and no wrapper coroutine (one more
  // frame while the response is awaited) is needed for that.
  static boost::asio::awaitable<http_response> post_json(std::shared_ptr<impl> self, std::string_view path,
                                                         std::string_view body, std::span<const http_header> headers,
                                                         request_budget* budget, body_stream* stream);
  // request(): the same, any method, every status an answer.
  static boost::asio::awaitable<http_result> request(std::shared_ptr<impl> self, http_request request);

  const http_options& options() const noexcept { return options_; }

 private:
  // http_client.cpp: the request, its answer and its errors.
  void setup_tls();
  bool accept_answer(attempt_result& result, const std::string& target, std::span<const http_header> headers) const;
  // Whether another attempt follows a failed one, and after how long; when
  // none does, `give_up` says why for the error's message ("" when the
  // failure was the first attempt's and not retryable: nothing to add).
  struct retry_plan {
    std::optional<std::chrono::milliseconds> delay;
    std::string give_up;
    bool from_retry_after = false;
  };
  retry_plan plan_retry(const attempt_result& result, bool retryable, const attempt_count& count,
                        const request_budget* budget) const;
  std::chrono::milliseconds delay_before_retry(const attempt_result& result, const std::string& target,
                                               std::span<const http_header> headers, const attempt_count& count,
                                               const request_budget* budget, http_method method = http_method::post,
                                               bool allowed = true) const;
  std::optional<std::chrono::milliseconds> delay_before_status_retry(attempt_result& result,
                                                                     const std::string& target,
                                                                     const http_request& request,
                                                                     const attempt_count& count) const;
  std::string describe(const std::string& target, http_method method = http_method::post) const;
  net_error make_error(const attempt_result& r, const std::string& target, std::span<const http_header> headers,
                         std::string& message, http_method method = http_method::post) const;
  void announce_retry(const net_error& error, const std::string& message, const attempt_count& count,
                      std::chrono::milliseconds delay, bool from_retry_after) const;
  boost::asio::awaitable<void> sleep(std::chrono::milliseconds delay);

  // http_exchange.cpp: one attempt on the wire.
  boost::asio::awaitable<void> run_attempt(const std::string& target, std::string_view body,
                                           std::span<const http_header> headers, http_clock::time_point deadline,
                                           body_stream* stream, general_request* general, attempt_result& result);
  boost::asio::awaitable<bool> connect(lease& held, http_clock::time_point deadline, attempt_result& result);
  boost::asio::awaitable<bool> open(connection& conn, http_clock::time_point deadline, attempt_result& result);
  boost::asio::awaitable<bool> resolve(http_clock::time_point until,
                                       boost::asio::ip::tcp::resolver::results_type& endpoints,
                                       attempt_result& result);
  boost::asio::awaitable<bool> handshake(connection& conn, attempt_result& result);
  boost::asio::awaitable<bool> peer_speaks_tls(http_clock::time_point deadline);
  std::string request_head(const std::string& target, std::size_t body_size,
                           std::span<const http_header> headers) const;
  std::string general_head(const http_request& request, const std::string& target) const;
  boost::asio::awaitable<void> exchange(lease& held, const std::string& target, std::string_view body,
                                        std::span<const http_header> headers, http_clock::time_point deadline,
                                        std::chrono::milliseconds allowed, body_stream* stream,
                                        general_request* general, bool& stale, attempt_result& result);
  void prepare_read_buffer(boost::beast::flat_buffer& buffer) const;
  void release_read_buffer(boost::beast::flat_buffer& buffer, std::size_t received);
  attempt_result exchange_failure(const boost::system::error_code& ec, bool was_cancelled, const connection& conn,
                                  bool got_response_bytes, std::span<const http_header> headers,
                                  std::chrono::milliseconds allowed, const general_request* general,
                                  bool& stale) const;

  const http_options options_;
  const std::string provider_;
  const endpoint_url url_;
  std::optional<boost::asio::ssl::context> tls_;
  connection_pool pool_;
  static constexpr std::size_t min_read_size = 1024;
  static constexpr std::size_t max_read_size = 16 * 1024;
  std::atomic<std::size_t> read_size_hint_{min_read_size};  // see prepare_read_buffer
};

}  // namespace switchboard::net
