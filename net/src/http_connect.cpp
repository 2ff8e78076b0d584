// A connection for one attempt of http_client: a pooled one, or a new one
// opened (the name resolved, TCP, then TLS with the host verified) before
// the connect deadline; and what went wrong said plainly — including a
// plain-HTTP server reached with https:// and (peer_speaks_tls) a TLS
// server reached with http://.
#include "http_client_impl.hpp"

#include <switchboard/net/redaction.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/core/error.hpp>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <string>

namespace switchboard::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using clock = http_clock;

namespace {

attempt_result connect_failure(const boost::system::error_code& ec, bool was_cancelled, bool timed_out,
                               const std::string& what) {
  if (was_cancelled) return failure(net_errc::cancelled, "request cancelled", false);
  if (timed_out) return failure(net_errc::timeout, what + " timed out", true);
  return failure(net_errc::connect_failed, what + " failed: " + ec.message(), true);
}

// What a server that is not speaking TLS sent back to the ClientHello, when
// the handshake failed on it: OpenSSL read five bytes as a record header and
// gave up; the rest waits, unread, in the stream's input BIO.
std::optional<std::string> plain_reply_to_handshake(SSL* ssl, const boost::system::error_code& ec) {
  if (ec.category() != asio::error::get_ssl_category()) return std::nullopt;
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
  if (reason != SSL_R_WRONG_VERSION_NUMBER && reason != SSL_R_PACKET_LENGTH_TOO_LONG &&
      reason != SSL_R_UNEXPECTED_RECORD) {
    return std::nullopt;
  }
  std::array<char, 256> rest{};
  const int n = BIO_read(SSL_get_rbio(ssl), rest.data(), static_cast<int>(rest.size()));
  if (n <= 0) return std::nullopt;
  return plain_text_reply(std::string_view(rest.data(), static_cast<std::size_t>(n)));
}

}  // namespace

// A pooled connection, or a new one opened, for `held`; false (and the
// failure in `result`) when there is none.
asio::awaitable<bool> http_client::impl::connect(lease& held, clock::time_point deadline, attempt_result& result) {
  try {
    held.conn = co_await pool_.acquire(deadline);
  } catch (const boost::system::system_error& e) {
    result = e.code() == beast::error::timeout
                 ? failure(net_errc::timeout, "no free connection before the request deadline",
                           options_.retry.retry_timeouts)
                 : failure(net_errc::cancelled, "request cancelled", false);
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
asio::awaitable<bool> http_client::impl::open(connection& conn, clock::time_point deadline, attempt_result& result) {
  const auto connect_deadline = std::min(deadline, clock::now() + options_.connect_timeout);
  auto& socket = conn.socket();
  boost::system::error_code ec;
  if (url_.host_is_ip) {
    const tcp::endpoint endpoint(asio::ip::make_address(url_.host), static_cast<unsigned short>(std::stoi(url_.port)));
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
    const bool was_cancelled = cancelled(co_await asio::this_coro::cancellation_state);
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
asio::awaitable<bool> http_client::impl::resolve(clock::time_point until, tcp::resolver::results_type& endpoints,
                                                 attempt_result& result) {
  tcp::resolver resolver(co_await asio::this_coro::executor);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_at(until);
  using namespace asio::experimental::awaitable_operators;
  auto resolved = co_await (resolver.async_resolve(url_.host, url_.port, use_tuple) || timer.async_wait(use_tuple));
  if (resolved.index() == 1) {
    result = cancelled(co_await asio::this_coro::cancellation_state)
                 ? failure(net_errc::cancelled, "request cancelled", false)
                 : failure(net_errc::timeout, "resolving " + url_.host + " timed out", true);
    co_return false;
  }
  auto& [rec, found] = std::get<0>(resolved);
  if (rec) {
    result = failure(net_errc::connect_failed, "cannot resolve " + url_.host + ": " + rec.message(), true);
    co_return false;
  }
  endpoints = std::move(found);
  co_return true;
}

// The TLS handshake with the host's name (or address) verified; false, with
// the failure in `result`, when it fails.
asio::awaitable<bool> http_client::impl::handshake(connection& conn, attempt_result& result) {
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
  const bool verify_failed = verify != X509_V_OK || (ec.category() == asio::error::get_ssl_category() &&
                                                     ERR_GET_REASON(static_cast<unsigned long>(ec.value())) ==
                                                         SSL_R_CERTIFICATE_VERIFY_FAILED);
  const std::string what = "TLS handshake with " + url_.host_header;
  if (verify_failed) {
    const std::string why = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : ec.message();
    result = failure(net_errc::tls_verification_failed, "TLS verification of " + url_.host + " failed: " + why,
                     false);
  } else if (const auto reply = plain_reply_to_handshake(ssl, ec)) {
    result = failure(net_errc::connect_failed,
                     what + " failed: the server answered in plain HTTP ('" + excerpt(*reply, {}, 100) +
                         "'): it speaks plain HTTP on this port, use http:// in the base URL",
                     false);
  } else {
    const bool was_cancelled = cancelled(co_await asio::this_coro::cancellation_state);
    result = connect_failure(ec, was_cancelled, conn.deadline.expired(), what);
    // A plain-HTTP server hangs up on a ClientHello, or waits for the end of
    // a request line that never comes.
    const bool hung_up = ec == asio::ssl::error::stream_truncated || ec == asio::error::eof ||
                         ec == asio::error::connection_reset;
    if (result.code == net_errc::timeout || (result.code == net_errc::connect_failed && hung_up)) {
      result.message += " (if the server serves plain HTTP, use http:// in the base URL)";
    }
  }
  co_return false;
}

// Whether the server completes a TLS handshake (certificate not checked:
// only the protocol matters) before `deadline` or the connect timeout.
asio::awaitable<bool> http_client::impl::peer_speaks_tls(clock::time_point deadline) {
  asio::ssl::context probe_context(asio::ssl::context::tls_client);
  probe_context.set_verify_mode(asio::ssl::verify_none);
  connection probe(co_await asio::this_coro::executor, &probe_context);
  attempt_result ignored;
  const bool speaks_tls = co_await open(probe, deadline, ignored);
  co_return speaks_tls;
}

}  // namespace switchboard::net
