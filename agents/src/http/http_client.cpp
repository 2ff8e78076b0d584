#include "http_client.hpp"

#include "connection.hpp"
#include "connection_pool.hpp"

#include <switchboard/agents/model/model_error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/parse.hpp>
#include <boost/url/parse.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <random>

namespace switchboard::agents::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// ---------------------------------------------------------------- helpers

struct endpoint_url {
  bool tls = false;
  std::string host;       // without brackets
  std::string port;
  std::string host_header;
  std::string base_path;  // no trailing slash
  std::string display;    // scheme://host:port/path — no user info, safe to log
  bool host_is_ip = false;
};

endpoint_url parse_base_url(const std::string& url, const std::string& provider) {
  const auto parsed = boost::urls::parse_uri(url);
  const auto fail = [&](std::string_view why) {
    return model_error(model_errc::not_configured,
                       provider + ": base URL '" + url + "' " + std::string(why));
  };
  if (!parsed) throw fail("is not a valid URL (expected http://host[:port][/path] or https://...)");
  endpoint_url out;
  const auto scheme = parsed->scheme();
  if (scheme == "https") {
    out.tls = true;
  } else if (scheme != "http") {
    throw fail("must use http or https");
  }
  out.host = parsed->host_address();
  if (out.host.empty()) throw fail("has no host");
  out.port = parsed->has_port() ? std::string(parsed->port()) : (out.tls ? "443" : "80");
  boost::system::error_code ec;
  asio::ip::make_address(out.host, ec);
  out.host_is_ip = !ec;
  const std::string host_part(parsed->encoded_host_and_port());
  out.host_header = host_part;
  out.base_path = std::string(parsed->encoded_path());
  while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
  out.display = std::string(scheme) + "://" + host_part + out.base_path;
  return out;
}

// Replaces every secret (header values such as API keys) found in `text`.
void redact_all(std::string& text, std::string_view secret) {
  if (secret.size() < 4) return;
  for (auto pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos)) {
    text.replace(pos, secret.size(), "[redacted]");
  }
}

std::string redact(std::string text, std::span<const http_header> headers) {
  for (const auto& h : headers) {
    if (!h.secret) continue;
    redact_all(text, h.value);
    if (const auto space = h.value.rfind(' '); space != std::string_view::npos) {
      redact_all(text, h.value.substr(space + 1));
    }
  }
  return text;
}

bool is_retryable_status(int status) {
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

std::optional<milliseconds> parse_retry_after(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  long long seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || seconds < 0) {
    return std::nullopt;  // HTTP dates are not honoured: the backoff applies
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

bool is_connection_loss(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::connection_aborted || ec == asio::error::broken_pipe ||
         ec == asio::ssl::error::stream_truncated;
}

// The outcome of one attempt: a response, or an error that may be retried.
struct attempt_result {
  std::optional<http_response> response;
  std::string retry_after;
  model_errc code = model_errc::connection_lost;
  std::string message;
  bool retryable = false;
};

attempt_result failure(model_errc code, std::string message, bool retryable) {
  attempt_result r;
  r.code = code;
  r.message = std::move(message);
  r.retryable = retryable;
  return r;
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

bool same_header_name(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

// A line break in a name or value would end the header and let the rest be
// read as another header or a body: refuse it.
bool has_line_break(std::string_view text) {
  return std::ranges::any_of(text, [](char c) { return c == '\r' || c == '\n'; });
}

void append_header(std::string& head, std::string_view name, std::string_view value) {
  if (has_line_break(name) || name.find(':') != std::string_view::npos || has_line_break(value)) {
    throw model_error(model_errc::not_configured,
                      "HTTP header '" + std::string(name.substr(0, name.find_first_of("\r\n"))) +
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

}  // namespace

std::string provider_error_message(std::string_view body) {
  boost::system::error_code ec;
  const auto value = json::parse(body, ec);
  if (!ec && value.is_object()) {
    const auto& obj = value.as_object();
    if (const auto* error = obj.if_contains("error")) {
      if (error->is_string()) return std::string(error->as_string());
      if (error->is_object()) {
        if (const auto* m = error->as_object().if_contains("message"); m && m->is_string()) {
          return std::string(m->as_string());
        }
      }
    }
    for (const char* key : {"message", "detail"}) {
      if (const auto* m = obj.if_contains(key); m && m->is_string()) return std::string(m->as_string());
    }
  }
  // Not the usual JSON error: the start of the body, printable characters only.
  std::string text;
  for (char c : body.substr(0, 200)) text += (c >= 32 && c < 127) ? c : ' ';
  return text;
}

// ---------------------------------------------------------------- impl

class http_client::impl {
 public:
  impl(http_options options, std::string provider)
      : options_(std::move(options)),
        provider_(std::move(provider)),
        url_(parse_base_url(options_.base_url, provider_)),
        pool_(options_.max_connections_per_host, options_.idle_timeout) {
    if (url_.tls) setup_tls();
  }

  // The whole request, retries included. Static and owning the client: a
  // request in flight keeps it alive, and no wrapper coroutine (one more
  // frame while the response is awaited) is needed for that.
  static asio::awaitable<http_response> post_json(std::shared_ptr<impl> self, std::string_view path,
                                                  std::string_view body, std::span<const http_header> headers) {
    try {
      const std::string target = self->url_.base_path + std::string(path);
      const int max_attempts = std::max(1, self->options_.retry.max_attempts);
      for (int attempt = 1;; ++attempt) {
        attempt_result result;
        co_await self->run_attempt(target, body, headers, result);
        if (result.response && result.response->status / 100 == 2) {
          if (spdlog::should_log(spdlog::level::debug)) {
            spdlog::debug("{} -> HTTP {}", self->describe(target), result.response->status);
          }
          co_return std::move(*result.response);
        }
        const milliseconds delay = self->delay_before_retry(result, target, headers, attempt, max_attempts);
        co_await self->sleep(delay);
      }
    } catch (const boost::system::system_error& e) {
      // Asio refuses to start another operation once the coroutine is
      // cancelled (this_coro::throw_if_cancelled): report that as ours.
      if (e.code() != asio::error::operation_aborted) throw;
      throw model_error(model_errc::cancelled, self->provider_ + ": request cancelled");
    }
  }

  const http_options& options() const noexcept { return options_; }

 private:
  void setup_tls() {
    tls_.emplace(asio::ssl::context::tls_client);
    tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                      asio::ssl::context::no_tlsv1_1);
    tls_->set_default_verify_paths();
    if (!options_.ca_file.empty()) {
      boost::system::error_code ec;
      tls_->load_verify_file(options_.ca_file, ec);
      if (ec) {
        throw model_error(model_errc::not_configured,
                          provider_ + ": cannot load CA file '" + options_.ca_file + "': " + ec.message());
      }
    }
    tls_->set_verify_mode(options_.verify_peer ? asio::ssl::verify_peer : asio::ssl::verify_none);
  }

  // How long to wait before the next attempt after a failed one; throws the
  // attempt's error when it is not retried.
  milliseconds delay_before_retry(const attempt_result& result, const std::string& target,
                                  std::span<const http_header> headers, int attempt, int max_attempts) const {
    std::optional<milliseconds> retry_after;
    std::string message;
    model_error error = make_error(result, target, headers, attempt, message);
    if (result.response) retry_after = parse_retry_after(result.retry_after);
    if (!error.retryable() || attempt >= max_attempts) throw error;
    if (retry_after && *retry_after > options_.retry.max_retry_after) {
      throw model_error(error.errc(),
                        message + " (Retry-After " + std::to_string(retry_after->count() / 1000) +
                            "s is longer than the client waits)",
                        error.http_status(), error.provider_message(), true);
    }
    const milliseconds delay = retry_after ? *retry_after : backoff_delay(options_.retry, attempt);
    announce_retry(error, message, attempt, max_attempts, delay, retry_after.has_value());
    return delay;
  }

  std::string describe(const std::string& target) const {
    return provider_ + ": POST " + url_.display + target.substr(url_.base_path.size());
  }

  // The error for a failed attempt; `message` receives its text (what()
  // without the error code suffix, for logs).
  model_error make_error(const attempt_result& r, const std::string& target,
                         std::span<const http_header> headers, int attempt, std::string& message) const {
    const std::string attempts = attempt > 1 ? " (attempt " + std::to_string(attempt) + ")" : "";
    if (!r.response) {
      message = redact(describe(target) + ": " + r.message + attempts, headers);
      return model_error(r.code, message, 0, {}, r.retryable);
    }
    const int status = r.response->status;
    const std::string provider_message = redact(provider_error_message(r.response->body), headers);
    message = describe(target) + " returned HTTP " + std::to_string(status) +
              (provider_message.empty() ? "" : ": " + provider_message) + attempts;
    return model_error(model_errc::http_status, message, status, provider_message, is_retryable_status(status));
  }

  void announce_retry(const model_error& error, const std::string& message, int attempt, int max_attempts,
                      milliseconds delay, bool from_retry_after) const {
    spdlog::warn("{}; retrying in {} ms (attempt {} of {})", message, delay.count(), attempt + 1, max_attempts);
    if (!options_.retry.on_retry) return;
    retry_event event;
    event.attempt = attempt;
    event.http_status = error.http_status();
    event.reason = error.http_status() ? "http " + std::to_string(error.http_status())
                                       : std::string(to_string(error.errc()));
    event.delay = delay;
    event.from_retry_after = from_retry_after;
    options_.retry.on_retry(event);
  }

  asio::awaitable<void> sleep(milliseconds delay) {
    asio::steady_timer timer(co_await asio::this_coro::executor, delay);
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec) {
      throw model_error(model_errc::cancelled, provider_ + ": request cancelled while waiting to retry");
    }
  }


  // One attempt into `result`; a pooled connection that turns out to be
  // closed by the server is replaced once without counting as an attempt.
  // The frames alive while the response is awaited hold no result of their
  // own (an awaitable's frame keeps a slot for its result), and getting a
  // connection is a coroutine of its own, so its locals are gone by then.
  asio::awaitable<void> run_attempt(const std::string& target, std::string_view body,
                                    std::span<const http_header> headers, attempt_result& result) {
    const auto deadline = clock::now() + options_.request_timeout;
    for (int stale_retries = 0;; ++stale_retries) {
      lease held{pool_, nullptr, false};
      if (!co_await connect(held, deadline, result)) co_return;
      bool stale = false;
      co_await exchange(held, target, body, headers, deadline, stale, result);
      if (!stale || stale_retries > 0) co_return;
    }
  }

  // A pooled connection, or a new one opened, for `held`; false (and the
  // failure in `result`) when there is none.
  asio::awaitable<bool> connect(lease& held, clock::time_point deadline, attempt_result& result) {
    try {
      held.conn = co_await pool_.acquire(deadline);
    } catch (const boost::system::system_error& e) {
      result = e.code() == beast::error::timeout
                   ? failure(model_errc::timeout, "no free connection before the request deadline",
                             options_.retry.retry_timeouts)
                   : failure(model_errc::cancelled, "request cancelled", false);
      co_return false;
    }
    held.slot_held = true;
    if (held.conn) co_return true;
    held.conn = std::make_unique<connection>(co_await asio::this_coro::executor, tls_ ? &*tls_ : nullptr);
    const bool opened = co_await open(*held.conn, deadline, result);
    co_return opened;
  }

  // Opens `conn`: TCP connect, then the TLS handshake, before the connect
  // deadline; false, with the failure in `result`, when that fails.
  asio::awaitable<bool> open(connection& conn, clock::time_point deadline, attempt_result& result) {
    const auto connect_deadline = std::min(deadline, clock::now() + options_.connect_timeout);
    auto& socket = conn.socket();
    boost::system::error_code ec;
    if (url_.host_is_ip) {
      const tcp::endpoint endpoint(asio::ip::make_address(url_.host),
                                   static_cast<unsigned short>(std::stoi(url_.port)));
      conn.deadline.start(connect_deadline, socket, co_await asio::this_coro::executor);
      std::tie(ec) = co_await socket.async_connect(endpoint, use_tuple);
    } else {
      tcp::resolver::results_type endpoints;
      if (!co_await resolve(connect_deadline, endpoints, result)) co_return false;
      conn.deadline.start(connect_deadline, socket, co_await asio::this_coro::executor);
      // Once the deadline has closed the socket, no further address is tried.
      const auto before_deadline = [&conn](const boost::system::error_code&, const tcp::endpoint&) {
        return !conn.deadline.expired();
      };
      std::tie(ec, std::ignore) = co_await asio::async_connect(socket, endpoints, before_deadline, use_tuple);
    }
    if (ec) {
      conn.deadline.stop();
      const bool was_cancelled = (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
      result = connect_failure(ec, was_cancelled, conn.deadline.expired(), "connect to " + url_.host_header);
      co_return false;
    }
    socket.set_option(tcp::no_delay(true), ec);
    bool opened = true;
    if (conn.tls) opened = co_await handshake(conn, result);
    conn.deadline.stop();
    if (opened && conn.deadline.expired()) {  // expired as the last step finished: the socket is closed
      result = connect_failure({}, false, true, "connect to " + url_.host_header);
      opened = false;
    }
    co_return opened;
  }

  // The host's addresses, resolved before `until`; false, with the failure in
  // `result`, when that fails. A coroutine of its own: the resolver, its
  // timer and the race between them are not kept in open()'s frame.
  asio::awaitable<bool> resolve(clock::time_point until, tcp::resolver::results_type& endpoints,
                                attempt_result& result) {
    tcp::resolver resolver(co_await asio::this_coro::executor);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    timer.expires_at(until);
    using namespace asio::experimental::awaitable_operators;
    auto resolved = co_await (resolver.async_resolve(url_.host, url_.port, use_tuple) || timer.async_wait(use_tuple));
    if (resolved.index() == 1) {
      const bool was_cancelled = (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
      result = was_cancelled ? failure(model_errc::cancelled, "request cancelled", false)
                             : failure(model_errc::timeout, "resolving " + url_.host + " timed out", true);
      co_return false;
    }
    auto& [rec, found] = std::get<0>(resolved);
    if (rec) {
      result = failure(model_errc::connect_failed, "cannot resolve " + url_.host + ": " + rec.message(), true);
      co_return false;
    }
    endpoints = std::move(found);
    co_return true;
  }

  // The TLS handshake with the host's name (or address) verified; false, with
  // the failure in `result`, when it fails.
  asio::awaitable<bool> handshake(connection& conn, attempt_result& result) {
    SSL* ssl = conn.tls->native_handle();
    if (url_.host_is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url_.host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl, url_.host.c_str());  // SNI (never for IP literals)
      SSL_set1_host(ssl, url_.host.c_str());
    }
    auto [ec] = co_await conn.tls->async_handshake(asio::ssl::stream_base::client, use_tuple);
    if (!ec) co_return true;
    const long verify = SSL_get_verify_result(ssl);
    const bool verify_failed =
        verify != X509_V_OK || (ec.category() == asio::error::get_ssl_category() &&
                                ERR_GET_REASON(static_cast<unsigned long>(ec.value())) ==
                                    SSL_R_CERTIFICATE_VERIFY_FAILED);
    if (verify_failed) {
      const std::string why = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : ec.message();
      result = failure(model_errc::tls_verification_failed, "TLS verification of " + url_.host + " failed: " + why,
                       false);
      co_return false;
    }
    const bool was_cancelled = (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
    result = connect_failure(ec, was_cancelled, conn.deadline.expired(), "TLS handshake with " + url_.host_header);
    co_return false;
  }

  static attempt_result connect_failure(const boost::system::error_code& ec, bool was_cancelled, bool timed_out,
                                        const std::string& what) {
    if (was_cancelled) return failure(model_errc::cancelled, "request cancelled", false);
    if (timed_out) return failure(model_errc::timeout, what + " timed out", true);
    return failure(model_errc::connect_failed, what + " failed: " + ec.message(), true);
  }

  // The request line and headers, written by hand: one string and one
  // gathered write with the body, instead of Beast's field container and
  // serializer (a tenth of the client's CPU per request in profiles).
  std::string request_head(const std::string& target, std::size_t body_size,
                           std::span<const http_header> headers) const {
    std::string head;
    head.reserve(160 + target.size() + url_.host_header.size() + options_.user_agent.size() + 64 * headers.size());
    head.append("POST ").append(target).append(" HTTP/1.1\r\nHost: ").append(url_.host_header).append("\r\n");
    append_default_header(head, "User-Agent", options_.user_agent, headers);
    append_default_header(head, "Content-Type", "application/json", headers);
    append_default_header(head, "Accept", "application/json", headers);
    for (const auto& h : headers) append_header(head, h.name, h.value);
    char length[24];
    head.append("Content-Length: ")
        .append(length, std::to_chars(length, length + sizeof length, body_size).ptr)
        .append("\r\n\r\n");
    return head;
  }

  asio::awaitable<void> exchange(lease& held, const std::string& target, std::string_view body,
                                 std::span<const http_header> headers, clock::time_point deadline, bool& stale,
                                 attempt_result& result) {
    connection& conn = *held.conn;
    const std::string head = request_head(target, body.size(), headers);
    const std::array<asio::const_buffer, 2> request{asio::buffer(head), asio::buffer(body.data(), body.size())};

    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_response_bytes);
    conn.deadline.start(deadline, conn.socket(), co_await asio::this_coro::executor);

    boost::system::error_code ec;
    std::size_t received = 0;
    prepare_read_buffer(conn.buffer);
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
    while (!ec && feed(parser, conn.buffer, ec)) {
      auto room = conn.buffer.prepare(std::max<std::size_t>(512, conn.buffer.capacity() - conn.buffer.size()));
      auto read = conn.tls ? conn.tls->async_read_some(room, use_tuple) : conn.plain->async_read_some(room, use_tuple);
      std::size_t bytes = 0;
      std::tie(ec, bytes) = co_await std::move(read);
      conn.buffer.commit(bytes);
      received += bytes;
      if (ec == asio::error::eof) ec = end_of_input(parser);
    }
    conn.deadline.stop();
    release_read_buffer(conn.buffer, received);
    if (ec) {
      const bool was_cancelled = (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
      result = exchange_failure(ec, was_cancelled, conn, parser.got_some(), stale);
      co_return;
    }

    auto& response = parser.get();
    result.response = http_response{static_cast<int>(response.result_int()), std::move(response.body())};
    result.retry_after = std::string(response[http::field::retry_after]);
    // The parser's keep_alive() is also false for a body that ended with the
    // connection; an expiry has closed the socket.
    held.reusable = parser.keep_alive() && !conn.deadline.expired();
  }

  // Gives the parser the bytes read so far; true when it needs more.
  static bool feed(http::response_parser<http::string_body>& parser, beast::flat_buffer& buffer,
                   boost::system::error_code& ec) {
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
  static boost::system::error_code end_of_input(http::response_parser<http::string_body>& parser) {
    if (!parser.got_some()) return http::error::end_of_stream;
    boost::system::error_code ec;
    parser.put_eof(ec);
    return ec;
  }

  // A read asks for the buffer's free room (at least 512 bytes), so a
  // response larger than the buffer costs a second read (a syscall and a
  // trip through the reactor). The buffer is sized for the responses this
  // client has seen while a request is out, and freed between requests so
  // that idle pooled connections hold none.
  void prepare_read_buffer(beast::flat_buffer& buffer) const {
    const std::size_t wanted = read_size_hint_.load(std::memory_order_relaxed);
    if (buffer.capacity() < wanted) buffer.reserve(wanted);
  }

  void release_read_buffer(beast::flat_buffer& buffer, std::size_t received) {
    if (received > 0) {
      constexpr std::size_t granule = 512;
      const std::size_t wanted = std::clamp((received + granule - 1) / granule * granule, min_read_size, max_read_size);
      read_size_hint_.store(wanted, std::memory_order_relaxed);
    }
    if (buffer.size() == 0) buffer.shrink_to_fit();
  }

  attempt_result exchange_failure(const boost::system::error_code& ec, bool was_cancelled, const connection& conn,
                                  bool got_response_bytes, bool& stale) const {
    if (was_cancelled) return failure(model_errc::cancelled, "request cancelled", false);
    if (conn.deadline.expired()) {
      return failure(model_errc::timeout,
                        "no complete response within " + std::to_string(options_.request_timeout.count()) + " ms",
                        options_.retry.retry_timeouts);
    }
    if (ec == http::error::body_limit) {
      return failure(model_errc::response_too_large,
                        "response body exceeds the limit of " + std::to_string(options_.max_response_bytes) +
                            " bytes",
                        false);
    }
    if (is_connection_loss(ec)) {
      stale = conn.reused && !got_response_bytes;  // the server closed an idle connection
      return failure(model_errc::connection_lost,
                        std::string(got_response_bytes ? "connection lost mid-response: "
                                                       : "connection lost before a response: ") +
                            ec.message(),
                        true);
    }
    if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
      return failure(model_errc::invalid_response, "malformed HTTP response: " + ec.message(), false);
    }
    return failure(model_errc::connection_lost, "I/O error: " + ec.message(), true);
  }

  const http_options options_;
  const std::string provider_;
  const endpoint_url url_;
  std::optional<asio::ssl::context> tls_;
  connection_pool pool_;
  static constexpr std::size_t min_read_size = 1024;
  static constexpr std::size_t max_read_size = 16 * 1024;
  std::atomic<std::size_t> read_size_hint_{min_read_size};  // see prepare_read_buffer
};

http_client::http_client(http_options options, std::string provider)
    : impl_(std::make_shared<impl>(std::move(options), std::move(provider))) {}

http_client::~http_client() = default;

asio::awaitable<http_response> http_client::post_json(std::string_view path, std::string_view body,
                                                      std::span<const http_header> headers) {
  return impl::post_json(impl_, path, body, headers);
}

const http_options& http_client::options() const noexcept { return impl_->options(); }

}  // namespace switchboard::agents::detail
