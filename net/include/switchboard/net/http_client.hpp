// The HTTP/1.1 client of the project: one base URL, a keep-alive connection
// pool with a cap, TLS with verification, deadlines, cancellation, retries,
// size limits and streamed (SSE) bodies. post_json() is the model clients'
// JSON POST; request() is any GET, POST, PUT, PATCH or DELETE (the MCP
// transport's). Beast and OpenSSL stay in the .cpp files.
//
// Thread-safety: post_json() and request() may be called concurrently from
// any number of coroutines on any threads.
#pragma once

#include <switchboard/net/http_header.hpp>

#include <switchboard/net/request_budget.hpp>
#include <switchboard/net/http_options.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::net {

struct http_response {
  int status = 0;
  std::string body;       // empty when streamed: the body went to the body_stream
  bool streamed = false;  // the body was a text/event-stream handed to the body_stream
};

// One header of a response, as request() returns it.
struct response_header {
  std::string name;   // in lower case
  std::string value;  // as sent
};

// Receives the body of a 2xx text/event-stream answer as it arrives
// (post_json's and request()'s `stream`). Called on the coroutine running
// the request, one call at a time; never after the request completed.
class body_stream {
 public:
  // request() only: the answer's status and the response headers the
  // request asked for (http_request::response_headers), just before
  // begin(), so that the reader knows them before the first byte.
  virtual void head(int /*status*/, std::span<const response_header> /*headers*/) {}
  // A streamed body starts: once per attempt that answered with a stream
  // (again after a retry).
  virtual void begin() = 0;
  // The next bytes of the body (cut anywhere). May throw: a net_error that
  // is retryable() fails the attempt like a transient failure (the request
  // is retried as the policy allows); any other exception ends the request
  // with that exception.
  virtual void data(std::string_view bytes) = 0;
  // The body ended as HTTP framed it. Returns why the stream is incomplete
  // (it lacks its end marker: a truncated answer, retried like a lost
  // connection), or nullopt when it is whole.
  virtual std::optional<std::string> end() = 0;
  // Asked after each data(): false when the reader has what it waited for
  // (an answer that came before the stream's end). The request then
  // completes as streamed at once: the rest is not read, end() is not
  // called, and the connection is closed rather than pooled.
  virtual bool wants_more() const noexcept { return true; }

 protected:
  ~body_stream() = default;
};

enum class http_method { get, post, put, patch, delete_ };

// "GET", "POST", ...
std::string_view to_string(http_method method) noexcept;

// Which failures request() makes another attempt after (within the retry
// policy's max_attempts and backoff, and the request_budget).
enum class retry_scope {
  // Every transient failure, as post_json: connection errors, timeouts (when
  // retry_policy::retry_timeouts), 408, 409, 429 and 5xx; a pooled
  // connection the server had closed is replaced once. For requests that
  // may be sent twice.
  transient,
  // Only what the server cannot have acted on: a failure before the request
  // was written (resolving, connecting, the TLS handshake, waiting for a
  // pooled connection), and a 429 or 503 answer (a Retry-After honoured).
  // For requests that must not run twice, like a POST that starts work.
  unprocessed,
  // None: the first attempt's outcome is the request's.
  none,
  // With unprocessed and none, a pooled connection the server had closed
  // is replaced (without counting an attempt) only for GET, PUT and DELETE:
  // the server may have read a POST or PATCH before closing.
};

// What request() sends, and what of the answer it keeps. The views and
// spans must stay valid until the request completes.
struct http_request {
  http_method method = http_method::get;
  // Appended to the base URL's path; may carry a query ("/items?limit=3").
  std::string_view path;
  // Sent with a Content-Length for POST, PUT and PATCH, and for other
  // methods when not empty.
  std::string_view body;
  // Besides the client's own: User-Agent, Accept: application/json,
  // Accept-Encoding: identity, and with a body Content-Type:
  // application/json; a header given here replaces the client's of the same
  // name. Host, Content-Length and Transfer-Encoding are the client's to
  // write: giving one fails with invalid_options. Secret ones are redacted
  // from every message, as for post_json.
  std::span<const http_header> headers;
  // The response headers to return, by name (any case); with
  // all_response_headers every one (bounded by the 8 KiB a response head
  // may have).
  std::span<const std::string_view> response_headers;
  bool all_response_headers = false;
  // As for post_json: the call this request belongs to (may be null), and
  // the reader of a 2xx text/event-stream body (may be null).
  request_budget* budget = nullptr;
  body_stream* stream = nullptr;
  // A 2xx body read whole larger than this fails with response_too_large;
  // 0: http_options::max_response_bytes. A streamed body has no total
  // bound here: its reader bounds what it keeps, the deadline and
  // stream_idle_timeout bound its time.
  std::size_t max_body_bytes = 0;
  // A non-2xx body is read up to this many bytes and cut there
  // (http_result::truncated): an error answer is quoted, not parsed.
  std::size_t max_error_body_bytes = 64 * 1024;
  // Each attempt's deadline; 0: http_options::request_timeout.
  std::chrono::milliseconds timeout{0};
  retry_scope retry = retry_scope::transient;
};

// What request() returns: the final answer, whatever its status.
struct http_result {
  int status = 0;
  std::vector<response_header> headers;  // those asked for, in the order received
  std::string body;                      // as received; empty when streamed
  bool streamed = false;                 // the body went to the body_stream
  bool truncated = false;                // a non-2xx body cut at max_error_body_bytes

  // The value of the first returned header named `name` (any case).
  std::optional<std::string_view> header(std::string_view name) const noexcept;
};

class http_client {
 public:
  // Throws net_error(not_configured) naming `provider` when base_url is not
  // an http(s) URL, carries credentials (user:password@), or when ca_file
  // cannot be loaded.
  http_client(http_options options, std::string provider);
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  // POSTs `body` as JSON to base path + `path`, retrying as the policy says.
  // Completion: the 2xx response whose body starts as JSON (an object or an
  // array; a byte order mark dropped, invalid UTF-8 replaced with U+FFFD, no
  // secret header value in it), or net_error (status, provider message,
  // connection/TLS/timeout/cancel/too-large codes, invalid_response for a
  // 2xx that cannot be the provider's answer: response_diagnosis.hpp). Every
  // message is redacted for the secret headers (redaction.hpp). Cancellation: cancelling the
  // awaiting coroutine stops the attempt, the wait for a pooled connection
  // and the retry wait promptly (net_errc::cancelled); the connection in use is
  // closed, never returned to the pool. `body` and `headers` must stay valid
  // until completion.
  //
  // `budget` (may be null) is the call this request belongs to: every
  // attempt is counted in it, a retry happens only while it has attempts
  // and time left, each attempt ends by its deadline, and the final error
  // says how many attempts the call made ("(after 2 attempts)"). Without
  // one, the retry policy's max_attempts and request_timeout alone apply.
  // It must stay valid until completion.
  //
  // `stream` (may be null): a 2xx answer with Content-Type
  // text/event-stream goes to it as it arrives instead of into the
  // response's body (the response then has streamed = true); every other
  // answer (an error status, a 2xx JSON body from a server that does not
  // stream) is read whole as without it. While a stream is awaited — from
  // the request on, before the head and between any two reads — a silence
  // longer than http_options::stream_idle_timeout is a stall: the attempt
  // fails with net_errc::timeout and is retried like a timeout. It must
  // stay valid until completion. Callers that stream send their own Accept
  // header (text/event-stream).
  boost::asio::awaitable<http_response> post_json(std::string_view path, std::string_view body,
                                                  std::span<const http_header> headers,
                                                  request_budget* budget = nullptr, body_stream* stream = nullptr);

  // Sends `request` to base path + request.path, retrying as
  // request.retry and the policy say. Completion: the final answer with its
  // status, the response headers asked for and the body as received — a
  // non-2xx answer is a result, not an error (one the retry scope retries
  // is retried first; the last is returned when no attempt is left, or its
  // Retry-After is longer than retry_policy::max_retry_after). net_error
  // for what is no answer: connection, TLS, timeout, cancellation, a 2xx
  // body over max_body_bytes (response_too_large), a malformed response
  // (invalid_response). Deadlines, cancellation, the budget, streaming and
  // redaction as for post_json; the body is not judged (no JSON check).
  boost::asio::awaitable<http_result> request(http_request request);

  const http_options& options() const noexcept;

 private:
  class impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace switchboard::net
