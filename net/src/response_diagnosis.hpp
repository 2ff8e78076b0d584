// Saying what a server really answered when it is not the provider's JSON.
// Bodies are normalised before anything parses them; answers that cannot be
// the provider's (a proxy's HTML page, a stream, a compressed body, an error
// inside a 200, a redirect, a plain-HTTP/TLS mix-up, a base URL missing /v1)
// become messages that name what happened and what to change. Every piece of
// the response quoted goes through excerpt() (redaction.hpp). Internal.
//
// Thread-safety: pure functions.
#pragma once

#include "endpoint_url.hpp"
#include <switchboard/net/http_header.hpp>

#include <switchboard/net/error.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace switchboard::net {

// The parts of a response head the diagnosis (and the retry policy) reads.
struct response_head {
  int status = 0;
  std::string content_type;      // as sent; "" when absent
  std::string content_encoding;  // as sent; "" when absent
  std::string location;          // of a redirect
  std::string retry_after;
};

// Drops a UTF-8 byte order mark before the body and replaces invalid UTF-8
// with U+FFFD, so that one bad byte (even in a field nobody reads) does not
// make a whole answer unreadable.
void normalize_body(std::string& body);

// An answer that is not what the client can use, as the part of an error
// message that follows "<provider>: POST <url>".
struct answer_problem {
  net_errc code = net_errc::invalid_response;
  std::string what;
  int http_status = 0;
  std::string server_message;
  bool retryable = false;
};

// Why the 2xx answer (head, body already normalised) cannot be the
// provider's: a compressed body, a stream (SSE), an empty body, an HTML
// page, a body that is not JSON, a body that holds the request's API key
// (an echo of the request), or an error object carried by the 2xx ({"error":
// {...}}, which some proxies send). nullopt when it may be the answer: a JSON
// object or array for the wire format's parser.
std::optional<answer_problem> check_success_answer(const response_head& head, std::string_view body,
                                                   std::span<const http_header> secrets);

// The problem of a non-2xx answer: "returned HTTP <status>: <provider
// message>" plus a hint where the status has a likely cause here (a base URL
// missing /v1, a plain-HTTP request to an HTTPS port), or for a redirect
// "was redirected to <Location> ...; set the base URL to ...". Redirects are
// never followed (the API key would go along to the new address), so they
// are not retryable; other statuses are as retry_timing says.
answer_problem check_error_answer(const response_head& head, std::string_view body, const endpoint_url& url,
                                  std::string_view target, std::span<const http_header> secrets);

// The provider's own message in an error body: error.message (OpenAI,
// Anthropic, vLLM), a plain "error" string (Ollama), "message" or "detail";
// for anything else a description of the body (an HTML page's title, the
// start of the text as an excerpt()). Redacted; the provider's own message
// is otherwise exact (net_error::server_message() is data: whoever
// shows it escapes it, as the error's what() does).
std::string provider_error_message(std::string_view body, std::string_view content_type,
                                   std::string_view content_encoding, std::span<const http_header> secrets);

// The first bytes of a TLS record (a handshake or an alert) where a plain
// HTTP response was expected.
bool looks_like_tls_record(std::string_view bytes);

// The bytes a server sent after the first five of its answer to a TLS
// ClientHello, when they are plain text (an HTTP response such as "1.1 400
// Bad Request..." after "HTTP/"): that text's first line, e.g. "HTTP/1.1 400
// Bad Request"; nullopt when they are not text.
std::optional<std::string> plain_text_reply(std::string_view rest);

}  // namespace switchboard::net
