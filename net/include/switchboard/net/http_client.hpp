// The HTTP/1.1 transport behind the model clients: one base URL, a
// keep-alive connection pool with a cap, TLS with verification, deadlines,
// cancellation and retries. Internal: Beast and OpenSSL stay in the .cpp.
//
// Thread-safety: post_json() may be called concurrently from any number of
// coroutines on any threads.
#pragma once

#include <switchboard/net/http_header.hpp>

#include <switchboard/net/request_budget.hpp>
#include <switchboard/net/http_options.hpp>

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace switchboard::net {

struct http_response {
  int status = 0;
  std::string body;       // empty when streamed: the body went to the body_stream
  bool streamed = false;  // the body was a text/event-stream handed to the body_stream
};

// Receives the body of a 2xx text/event-stream answer as it arrives
// (post_json's `stream`). Called on the coroutine running post_json, one
// call at a time; never after post_json completed.
class body_stream {
 public:
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

 protected:
  ~body_stream() = default;
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

  const http_options& options() const noexcept;

 private:
  class impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace switchboard::net
