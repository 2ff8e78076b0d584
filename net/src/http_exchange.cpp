// One attempt of http_client on the wire: a connection (http_connect.cpp),
// the request written by hand, the response read and parsed, and what went
// wrong said plainly — a server that closed without answering is asked
// whether it speaks TLS (https:// was meant).
#include "http_client_impl.hpp"

#include <switchboard/net/redaction.hpp>
#include "stall_watch.hpp"

#include <boost/asio/ssl/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <cctype>
#include <charconv>

namespace switchboard::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using clock = http_clock;

namespace {

// A TLS server answers a ClientHello within a round trip; a plain server
// may sit on it until it sees a line end. The probe waits this long at most.
constexpr std::chrono::seconds max_probe_time{3};

using response_parser = http::response_parser<http::string_body>;

bool is_connection_loss(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::connection_aborted || ec == asio::error::broken_pipe ||
         ec == asio::ssl::error::stream_truncated;
}

bool same_header_name(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

// A line break in a name or value would end the header and let the rest be
// read as another header or a body: refuse it.
bool has_line_break(std::string_view text) {
  // memchr looks at many bytes at a time: every header of every request is checked.
  return std::memchr(text.data(), '\r', text.size()) != nullptr ||
         std::memchr(text.data(), '\n', text.size()) != nullptr;
}

void append_header(std::string& head, std::string_view name, std::string_view value) {
  if (has_line_break(name) || name.find(':') != std::string_view::npos || has_line_break(value)) {
    throw net_error(net_errc::invalid_options,
                      "HTTP header '" + excerpt(name.substr(0, name.find_first_of("\r\n")), {}, 100) +
                          "' has a line break or colon in its name or a line break in its value");
  }
  head.append(name).append(": ").append(value).append("\r\n");
}

// A default header, unless the caller sends its own of that name.
void append_default_header(std::string& head, std::string_view name, std::string_view value,
                           std::span<const http_header> headers) {
  for (const auto& h : headers)
    if (same_header_name(h.name, name)) return;
  append_header(head, name, value);
}

// Gives the parser the bytes read so far; true when it needs more.
bool feed(response_parser& parser, beast::flat_buffer& buffer, boost::system::error_code& ec) {
  while (buffer.size() > 0 && !parser.is_done()) {
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more) {
      ec = {};
      return true;
    }
    if (ec) return false;
    if (used == 0) return true;
  }
  return !parser.is_done();
}

// The peer closed the connection: the end of a body that runs to the end
// of the connection, or a response cut short (or never begun).
boost::system::error_code end_of_input(response_parser& parser) {
  if (!parser.got_some()) return http::error::end_of_stream;
  boost::system::error_code ec;
  parser.put_eof(ec);
  return ec;
}

std::string_view unread_bytes(const beast::flat_buffer& buffer) {
  const auto data = buffer.data();
  return {static_cast<const char*>(data.data()), data.size()};
}

response_head head_of(const http::response<http::string_body>& response) {
  response_head head;
  head.status = static_cast<int>(response.result_int());
  head.content_type = std::string(response[http::field::content_type]);
  head.content_encoding = std::string(response[http::field::content_encoding]);
  head.location = std::string(response[http::field::location]);
  head.retry_after = std::string(response[http::field::retry_after]);
  return head;
}

// --- request(): the headers and limits only it has ---------------------------

bool is_wanted(std::string_view name, const http_request& request) {
  if (request.all_response_headers) return true;
  for (const std::string_view wanted : request.response_headers)
    if (same_header_name(name, wanted)) return true;
  return false;
}

// The response headers `request` asks for, in the order received, names in
// lower case. Kept out of line, like the other request()-only helpers, so
// that post_json's exchange compiles as before.
[[gnu::noinline]] void collect_headers(const http::response<http::string_body>& response,
                                       const http_request& request, std::vector<response_header>& out) {
  out.clear();
  if (request.response_headers.empty() && !request.all_response_headers) return;
  for (const auto& field : response) {
    const std::string_view name = field.name_string();
    if (!is_wanted(name, request)) continue;
    response_header& h = out.emplace_back();
    h.name.resize(name.size());
    std::ranges::transform(name, h.name.begin(),
                           [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
    h.value = std::string(field.value());
  }
}

// What the size limits of a request() say about the body read so far of an
// answer whose head is in: read on, fail (a 2xx over its limit), or stop
// here (a non-2xx body cut at its limit, `general.truncated` set).
enum class body_verdict { read_on, too_large, cut };

[[gnu::noinline]] body_verdict check_body(response_parser& parser, general_request& general) {
  auto& body = parser.get().body();
  if (parser.get().result_int() / 100 == 2) {
    const auto length = parser.content_length();
    const bool over = (length && *length > general.max_body_bytes) || body.size() > general.max_body_bytes;
    return over ? body_verdict::too_large : body_verdict::read_on;
  }
  const std::size_t cap = general.request.max_error_body_bytes;
  if (body.size() > cap) {
    body.resize(cap);
    general.truncated = true;
  }
  if (body.size() >= cap && !parser.is_done()) {
    general.truncated = true;
    return body_verdict::cut;
  }
  return body_verdict::read_on;
}

// --- streamed answers (post_json's and request()'s body_stream) --------------

// A 2xx text/event-stream answer: what a body_stream reads.
bool is_stream_head(const response_parser& parser) {
  const auto& response = parser.get();
  if (response.result_int() / 100 != 2) return false;
  const std::string_view type = response[http::field::content_type];
  constexpr std::string_view event_stream = "text/event-stream";
  return type.size() >= event_stream.size() && same_header_name(type.substr(0, event_stream.size()), event_stream);
}

// request(): the head of a stream, before its first byte.
[[gnu::noinline]] void announce_head(const response_parser& parser, body_stream& stream, general_request& general) {
  collect_headers(parser.get(), general.request, general.headers);
  stream.head(static_cast<int>(parser.get().result_int()), general.headers);
}

enum class stream_step {
  read_on,
  refused,   // the stream threw: the failure is in the attempt's result
  answered,  // the stream has what it waited for (body_stream::wants_more)
};

// Hands what the parser holds of a streamed body to `stream`, once the head
// says it is one (`streaming`); for a request(), the head goes first.
stream_step pass_on(response_parser& parser, body_stream& stream, bool& streaming, general_request* general,
                    attempt_result& result) {
  try {
    if (!streaming) {
      if (!parser.is_header_done() || !is_stream_head(parser)) return stream_step::read_on;
      streaming = true;
      if (general) announce_head(parser, stream, *general);
      stream.begin();
    }
    auto& body = parser.get().body();
    if (!body.empty()) {
      stream.data(body);
      body.clear();
      if (!stream.wants_more()) return stream_step::answered;
    }
    return stream_step::read_on;
  } catch (const net_error& e) {
    if (!e.retryable()) {
      result.stream_error = std::current_exception();
      return stream_step::refused;
    }
    result = failure(e.errc(), e.what(), true);  // a mid-stream error the provider says is transient
  } catch (...) {
    result.stream_error = std::current_exception();
  }
  return stream_step::refused;
}

// The stream's reader has its answer before the body's end.
[[gnu::noinline]] void stream_answered(const response_parser& parser, attempt_result& result) {
  result.head = head_of(parser.get());
  result.response.emplace(result.head.status, std::string(), true);
}

// The streamed body ended as HTTP framed it: the answer, or a truncated one.
void end_stream(body_stream& stream, int status, attempt_result& result) {
  try {
    if (auto problem = stream.end()) {
      result = failure(net_errc::connection_lost, "the event stream ended before its end: " + *problem, true);
      return;
    }
  } catch (...) {
    result.stream_error = std::current_exception();
    return;
  }
  result.response = http_response{status, {}, true};
}

}  // namespace

// One attempt into `result`; a pooled connection that turns out to be
// closed by the server is replaced once without counting as an attempt.
// The frames alive while the response is awaited hold no result of their
// own (an awaitable's frame keeps a slot for its result), and getting a
// connection is a coroutine of its own, so its locals are gone by then.
// `deadline` is the attempt's: request_timeout from now, or sooner when the
// call's deadline comes first.
//
// A request() whose retry scope is not `transient` replaces a stale
// connection only for a method that may be repeated (GET, PUT, DELETE):
// the server may have received the request before it closed.
asio::awaitable<void> http_client::impl::run_attempt(const std::string& target, std::string_view body,
                                                     std::span<const http_header> headers, clock::time_point deadline,
                                                     body_stream* stream, general_request* general,
                                                     attempt_result& result) {
  const auto allowed = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
  for (int stale_retries = 0;; ++stale_retries) {
    lease held{pool_, nullptr, false};
    if (!co_await connect(held, deadline, result)) co_return;
    bool stale = false;
    co_await exchange(held, target, body, headers, deadline, allowed, stream, general, stale, result);
    if (!stale || stale_retries > 0) break;
    if (general && general->request.retry != retry_scope::transient &&
        (general->request.method == http_method::post || general->request.method == http_method::patch)) {
      break;
    }
  }
  // OpenSSL-based servers close a plain-HTTP connection without a word.
  // Retrying cannot help then; a TLS handshake (which sends no request and
  // no key) tells whether that is what happened.
  if (result.closed_unanswered && co_await peer_speaks_tls(std::min(deadline, clock::now() + max_probe_time))) {
    result = failure(net_errc::connect_failed,
                     "the server closed the connection without answering, and it completes a TLS handshake: it "
                     "speaks HTTPS on this port, use https:// in the base URL",
                     false);
  }
}

// The request line and headers, written by hand: one string and one
// gathered write with the body, instead of Beast's field container and
// serializer (a tenth of the client's CPU per request in profiles).
// Accept-Encoding: identity, because the client decodes no compression.
std::string http_client::impl::request_head(const std::string& target, std::size_t body_size,
                                            std::span<const http_header> headers) const {
  std::string head;
  head.reserve(200 + target.size() + url_.host_header.size() + options_.user_agent.size() + 64 * headers.size());
  head.append("POST ").append(target).append(" HTTP/1.1\r\nHost: ").append(url_.host_header).append("\r\n");
  append_default_header(head, "User-Agent", options_.user_agent, headers);
  append_default_header(head, "Content-Type", "application/json", headers);
  append_default_header(head, "Accept", "application/json", headers);
  append_default_header(head, "Accept-Encoding", "identity", headers);
  for (const auto& h : headers) append_header(head, h.name, h.value);
  char length[24];
  head.append("Content-Length: ")
      .append(length, std::to_chars(length, length + sizeof length, body_size).ptr)
      .append("\r\n\r\n");
  return head;
}

// A request()'s head: its method, the same defaults, and Content-Type and
// Content-Length only with a body (POST, PUT and PATCH always have one).
[[gnu::noinline]] std::string http_client::impl::general_head(const http_request& request,
                                                               const std::string& target) const {
  const auto method = request.method;
  const bool with_body = !request.body.empty() || method == http_method::post || method == http_method::put ||
                         method == http_method::patch;
  const auto headers = request.headers;
  std::string head;
  head.reserve(200 + target.size() + url_.host_header.size() + options_.user_agent.size() + 64 * headers.size());
  head.append(to_string(method)).append(" ").append(target).append(" HTTP/1.1\r\nHost: ");
  head.append(url_.host_header).append("\r\n");
  append_default_header(head, "User-Agent", options_.user_agent, headers);
  if (with_body) append_default_header(head, "Content-Type", "application/json", headers);
  append_default_header(head, "Accept", "application/json", headers);
  append_default_header(head, "Accept-Encoding", "identity", headers);
  for (const auto& h : headers) append_header(head, h.name, h.value);
  if (with_body) {
    char length[24];
    head.append("Content-Length: ")
        .append(length, std::to_chars(length, length + sizeof length, request.body.size()).ptr)
        .append("\r\n");
  }
  head.append("\r\n");
  return head;
}

// One exchange on `held`'s connection. post_json's (general null): its
// JSON head, its body limit. A request()'s: its method and head, the
// headers it asks for, its limits (a 2xx body over max_body_bytes fails, a
// non-2xx body is cut at max_error_body_bytes).
asio::awaitable<void> http_client::impl::exchange(lease& held, const std::string& target, std::string_view body,
                                                  std::span<const http_header> headers, clock::time_point deadline,
                                                  std::chrono::milliseconds allowed, body_stream* stream,
                                                  general_request* general, bool& stale, attempt_result& result) {
  connection& conn = *held.conn;
  const std::string head =
      general ? general_head(general->request, target) : request_head(target, body.size(), headers);
  const std::array<asio::const_buffer, 2> request{asio::buffer(head), asio::buffer(body.data(), body.size())};

  response_parser parser;
  // A request()'s limits depend on the status: checked as the body comes.
  if (general) {
    parser.body_limit(boost::none);
  } else {
    parser.body_limit(options_.max_response_bytes);
  }
  conn.deadline.start(deadline, conn.socket(), co_await asio::this_coro::executor);
  // A streamed request: silence longer than the idle timeout is a stall.
  std::optional<stall_watch> watch;
  if (stream) {
    watch.emplace(co_await asio::this_coro::executor, options_.stream_idle_timeout);
    watch->start(conn.socket());
  }
  bool streaming = false;

  boost::system::error_code ec;
  std::size_t received = 0;
  prepare_read_buffer(conn.buffer);
  if (general) general->sent = true;
  // Both streams' operations are the same awaitable type: one co_await
  // each (a frame keeps a slot for every co_await's temporaries).
  auto write = conn.tls ? asio::async_write(*conn.tls, request, use_tuple)
                        : asio::async_write(*conn.plain, request, use_tuple);
  std::tie(ec, std::ignore) = co_await std::move(write);
  // The response is read with the socket's own read_some and fed to the
  // parser here: Beast's composed read (read_op over read_some_op) keeps
  // ~900 bytes of operation state next to the pending read for as long as
  // the answer takes, and adds handler layers to every completion.
  parser.eager(true);
  // Why reading stopped before the body's end: the body_stream refused
  // what it was given or has its answer, or a request()'s error body was cut.
  stream_step stopped = stream_step::read_on;
  bool cut = false;
  for (;;) {
    const bool more = !ec && feed(parser, conn.buffer, ec);
    if (stream && !ec) {
      stopped = pass_on(parser, *stream, streaming, general, result);
      if (stopped != stream_step::read_on) break;
    }
    if (general && !ec && !streaming && parser.is_header_done()) {
      const body_verdict verdict = check_body(parser, *general);
      if (verdict == body_verdict::too_large) ec = http::error::body_limit;
      cut = verdict == body_verdict::cut;
      if (verdict != body_verdict::read_on) break;
    }
    if (!more) break;
    auto room = conn.buffer.prepare(std::max<std::size_t>(512, conn.buffer.capacity() - conn.buffer.size()));
    auto read = conn.tls ? conn.tls->async_read_some(room, use_tuple) : conn.plain->async_read_some(room, use_tuple);
    std::size_t bytes = 0;
    std::tie(ec, bytes) = co_await std::move(read);
    if (watch) watch->touch();
    conn.buffer.commit(bytes);
    received += bytes;
    if (ec == asio::error::eof) ec = end_of_input(parser);
  }
  conn.deadline.stop();
  if (watch) watch->stop();
  // A stream's size says nothing about the next answer's: it sizes no read buffer.
  release_read_buffer(conn.buffer, streaming ? 0 : received);
  // The connection is closed with the lease when the rest is left unread.
  if (stopped == stream_step::refused) co_return;
  if (stopped == stream_step::answered) {
    stream_answered(parser, result);
    co_return;
  }
  if (ec) {
    const bool was_cancelled = cancelled(co_await asio::this_coro::cancellation_state);
    if (watch && watch->stalled() && !was_cancelled && !conn.deadline.expired()) {
      result = failure(net_errc::timeout,
                       "the stream stalled: nothing arrived for " + std::to_string(watch->idle().count()) +
                           " ms (stream_idle_timeout)",
                       options_.retry.retry_timeouts);
      co_return;
    }
    result = exchange_failure(ec, was_cancelled, conn, parser.got_some(), headers, allowed, general, stale);
    result.closed_unanswered = !conn.tls && !conn.reused && received == 0 && is_connection_loss(ec) && !was_cancelled;
    co_return;
  }

  auto& response = parser.get();
  result.head = head_of(response);
  if (streaming) {
    end_stream(*stream, result.head.status, result);
  } else {
    if (general) collect_headers(response, general->request, general->headers);
    result.response = http_response{result.head.status, std::move(response.body())};
  }
  // The parser's keep_alive() is also false for a body that ended with the
  // connection; an expiry has closed the socket.
  held.reusable = !cut && parser.keep_alive() && !conn.deadline.expired();
}

// A read asks for the buffer's free room (at least 512 bytes), so a
// response larger than the buffer costs a second read (a syscall and a
// trip through the reactor). The buffer is sized for the responses this
// client has seen while a request is out, and freed between requests so
// that idle pooled connections hold none.
void http_client::impl::prepare_read_buffer(beast::flat_buffer& buffer) const {
  const std::size_t wanted = read_size_hint_.load(std::memory_order_relaxed);
  if (buffer.capacity() < wanted) buffer.reserve(wanted);
}

void http_client::impl::release_read_buffer(beast::flat_buffer& buffer, std::size_t received) {
  if (received > 0) {
    constexpr std::size_t granule = 512;
    const std::size_t wanted = std::clamp((received + granule - 1) / granule * granule, min_read_size, max_read_size);
    read_size_hint_.store(wanted, std::memory_order_relaxed);
  }
  if (buffer.size() == 0) buffer.shrink_to_fit();
}

attempt_result http_client::impl::exchange_failure(const boost::system::error_code& ec, bool was_cancelled,
                                                   const connection& conn, bool got_response_bytes,
                                                   std::span<const http_header> headers,
                                                   std::chrono::milliseconds allowed, const general_request* general,
                                                   bool& stale) const {
  if (was_cancelled) return failure(net_errc::cancelled, "request cancelled", false);
  if (conn.deadline.expired()) {
    // The time this attempt had: request_timeout, or what was left of the call's deadline.
    return failure(net_errc::timeout, "no complete response within " + std::to_string(allowed.count()) + " ms",
                   options_.retry.retry_timeouts);
  }
  if (ec == http::error::body_limit) {
    return failure(net_errc::response_too_large,
                   "response body exceeds the limit of " +
                       std::to_string(general ? general->max_body_bytes : options_.max_response_bytes) + " bytes",
                   false);
  }
  // The parser takes nothing of bytes that cannot start a status line, so a
  // TLS record (an alert, a handshake) is still there to be recognised.
  if (!conn.tls && looks_like_tls_record(unread_bytes(conn.buffer))) {
    return failure(net_errc::connect_failed,
                   "the server answered the plain-HTTP request in TLS: it speaks HTTPS on this port, use https:// "
                   "in the base URL",
                   false);
  }
  if (is_connection_loss(ec)) {
    stale = conn.reused && !got_response_bytes;  // the server closed an idle connection
    return failure(net_errc::connection_lost,
                   std::string(got_response_bytes ? "connection lost mid-response: "
                                                  : "connection lost before a response: ") +
                       ec.message(),
                   true);
  }
  if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
    return failure(net_errc::invalid_response,
                   "malformed HTTP response: " + ec.message() + " (it starts '" +
                       excerpt(unread_bytes(conn.buffer), headers, 60) + "')",
                   false);
  }
  return failure(net_errc::connection_lost, "I/O error: " + ec.message(), true);
}

}  // namespace switchboard::net
