// The Streamable HTTP transport (MCP 2025-11-25, "Transports"): every
// message is a POST to the endpoint with Accept: application/json,
// text/event-stream; a request's answer comes back as one JSON body or as
// an SSE stream carrying notifications, server requests and finally the
// response. The Mcp-Session-Id the server gives on initialize is sent with
// every later request, with MCP-Protocol-Version. An SSE stream that breaks
// before the answer is resumed with a GET carrying Last-Event-ID (when the
// server gave event ids), at most max_resumes times; DELETE ends the
// session on close.
//
// One connection per exchange, closed after it: MCP traffic is a handful of
// requests per tool call, and an SSE response holds its connection anyway.
// Deadlines: every network step is bounded by the request timeout; the
// client abandons a request (closing its connection) when its own deadline
// passes or its caller cancels.
#include <switchboard/net/sse_parser.hpp>
#include "transport.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/url/parse.hpp>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <list>

namespace switchboard::mcp::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr int max_resumes = 3;
constexpr std::size_t max_error_body = 64 * 1024;
constexpr std::size_t max_session_id = 256;
constexpr std::chrono::milliseconds default_retry{200};
constexpr std::chrono::milliseconds max_retry{5'000};
constexpr std::chrono::milliseconds delete_timeout{5'000};

struct endpoint {
  bool tls = false;
  std::string host, port, host_header, target;
};

endpoint parse_endpoint(const server_config& c) {
  const auto u = boost::urls::parse_uri(c.url);
  if (!u || (u->scheme() != "http" && u->scheme() != "https") || u->host_address().empty())
    throw mcp_error(mcp_errc::not_configured, server_prefix(c.name) + quote(c.url) + " is not an http(s) URL");
  endpoint e;
  e.tls = u->scheme() == "https";
  e.host = u->host_address();
  e.port = u->has_port() ? std::string(u->port()) : (e.tls ? "443" : "80");
  e.host_header = std::string(u->encoded_host_and_port());
  e.target = u->encoded_path().empty() ? "/" : std::string(u->encoded_path());
  if (u->has_query()) e.target += "?" + std::string(u->encoded_query());
  return e;
}

// A visible-ASCII session id (the spec's rule), bounded.
bool valid_session_id(std::string_view id) {
  return !id.empty() && id.size() <= max_session_id &&
         std::ranges::all_of(id, [](char c) { return c >= 0x21 && c <= 0x7e; });
}

// What one exchange needs to know and reports.
struct exchange {
  http::verb method = http::verb::post;
  std::string body;
  std::optional<std::int64_t> id;  // the request it answers
  std::string last_event_id;      // GET resume
  std::chrono::milliseconds timeout{};
  // Out: a stream that ended before the answer may be resumed from here.
  std::string resume_from;
  std::optional<long> retry_ms;
};

struct http_state : std::enable_shared_from_this<http_state> {
  http_state(const server_config& c, strand_type s, std::shared_ptr<spdlog::logger> l)
      : config(c), strand(std::move(s)), logger(std::move(l)), where(parse_endpoint(c)) {
    if (where.tls) {
      tls.emplace(asio::ssl::context::tls_client);
      tls->set_default_verify_paths();
      tls->set_verify_mode(config.verify_peer ? asio::ssl::verify_peer : asio::ssl::verify_none);
    }
  }

  server_config config;
  strand_type strand;
  std::shared_ptr<spdlog::logger> logger;
  endpoint where;
  std::optional<asio::ssl::context> tls;
  std::string session_id;
  std::string protocol_version;
  transport_handlers handlers;
  bool closed = false;
  // Open exchanges: closing a socket ends its exchange. Keyed by request id
  // (-1 for the rest); several may share an id (a POST and its resume).
  std::list<std::pair<std::int64_t, std::function<void()>>> open;

  std::string prefix() const { return server_prefix(config.name); }

  void fail_request(const exchange& x, const mcp_error& e) {
    if (closed) return;
    if (x.id && handlers.on_request_failed) handlers.on_request_failed(*x.id, e);
    else logger->warn("{}", e.what());
  }

  asio::awaitable<void> run(exchange x);
  template <class Stream>
  asio::awaitable<void> talk(Stream& stream, exchange& x);
  template <class Stream>
  asio::awaitable<void> read_sse(Stream& stream, beast::flat_buffer& buffer,
                                 http::response_parser<http::string_body>& parser, exchange& x);
  http::request<http::string_body> make_request(const exchange& x) const;
  void deliver(std::string_view body) {
    if (!closed && handlers.on_message) handlers.on_message(body);
  }
};

http::request<http::string_body> http_state::make_request(const exchange& x) const {
  http::request<http::string_body> req{x.method, where.target, 11};
  req.set(http::field::host, where.host_header);
  req.set(http::field::user_agent, "switchboard-mcp");
  if (x.method == http::verb::post) {
    req.set(http::field::accept, "application/json, text/event-stream");
    req.set(http::field::content_type, "application/json");
    req.body() = x.body;
  } else if (x.method == http::verb::get) {
    req.set(http::field::accept, "text/event-stream");
  }
  if (!session_id.empty()) req.set("Mcp-Session-Id", session_id);
  if (!protocol_version.empty()) req.set("MCP-Protocol-Version", protocol_version);
  if (!x.last_event_id.empty()) req.set("Last-Event-ID", x.last_event_id);
  for (const auto& [name, value] : config.headers) req.set(name, value);
  req.prepare_payload();
  return req;
}

template <class Stream>
asio::awaitable<void> http_state::read_sse(Stream& stream, beast::flat_buffer& buffer,
                                           http::response_parser<http::string_body>& parser, exchange& x) {
  // JSON-RPC messages come as "message" events (or untyped ones) with data.
  struct message_events final : net::sse_handler {
    explicit message_events(http_state& state) : state(state) {}
    void on_event(const net::sse_event& e) override {
      if ((e.type.empty() || e.type == "message") && !e.data.empty()) state.deliver(e.data);
    }
    http_state& state;
  } handler{*this};
  net::sse_parser events({max_message_bytes, max_message_bytes});
  for (;;) {
    if (!parser.get().body().empty()) {
      const bool ok = events.feed(parser.get().body(), handler) == net::sse_status::ok;
      parser.get().body().clear();
      if (!ok) {
        fail_request(x, mcp_error(mcp_errc::message_too_large, prefix() + "sent an event over " +
                                                                   std::to_string(max_message_bytes) + " bytes"));
        co_return;
      }
    }
    x.resume_from = events.last_event_id();
    x.retry_ms = events.retry_ms();
    if (parser.is_done() || closed) co_return;
    if (x.id && handlers.is_pending && !handlers.is_pending(*x.id)) co_return;  // answered: stop listening
    beast::get_lowest_layer(stream).expires_after(x.timeout);
    auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, use_tuple);
    if (ec) co_return;  // the caller decides: resume or fail
  }
}

template <class Stream>
asio::awaitable<void> http_state::talk(Stream& stream, exchange& x) {
  auto& socket = beast::get_lowest_layer(stream);
  socket.expires_after(x.timeout);
  auto req = make_request(x);
  if (auto [ec, n] = co_await http::async_write(stream, req, use_tuple); ec) {
    fail_request(x, mcp_error(mcp_errc::connection_lost, prefix() + "sending the request failed: " + ec.message()));
    co_return;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);  // bounded below, per body kind
  if (auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, use_tuple); ec) {
    fail_request(x, mcp_error(ec == beast::error::timeout ? mcp_errc::timeout : mcp_errc::connection_lost,
                              prefix() + "reading the response failed: " + ec.message()));
    co_return;
  }
  const auto& head = parser.get();
  const int status = static_cast<int>(head.result_int());
  if (const auto sid = head["Mcp-Session-Id"]; !sid.empty() && session_id.empty()) {
    if (!valid_session_id(sid)) {
      fail_request(x, mcp_error(mcp_errc::protocol_error, prefix() + "sent an invalid Mcp-Session-Id " + quote(sid, 80)));
      co_return;
    }
    session_id = std::string(sid);
  }
  const std::string type(head[http::field::content_type]);
  if (status == 202 || x.method == http::verb::delete_) co_return;  // DELETE: any answer will do (405 too)
  if (status == 404 && !session_id.empty()) {
    fail_request(x, mcp_error(mcp_errc::session_expired, prefix() + "the session expired (HTTP 404)"));
    co_return;
  }
  if (status < 200 || status > 299) {
    parser.body_limit(max_error_body);
    co_await http::async_read(stream, buffer, parser, use_tuple);
    fail_request(x, mcp_error(mcp_errc::http_status, prefix() + "HTTP " + std::to_string(status) + ": " +
                                                         quote(parser.get().body())));
    co_return;
  }
  if (type.starts_with("text/event-stream")) {
    co_await read_sse(stream, buffer, parser, x);
    co_return;
  }
  if (!type.starts_with("application/json")) {
    fail_request(x, mcp_error(mcp_errc::protocol_error,
                              prefix() + "answered with Content-Type " + quote(type, 80) +
                                  " (expected application/json or text/event-stream)"));
    co_return;
  }
  parser.body_limit(max_message_bytes);
  socket.expires_after(x.timeout);
  if (auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple); ec) {
    const bool big = ec == http::error::body_limit;
    fail_request(x, mcp_error(big ? mcp_errc::message_too_large : mcp_errc::connection_lost,
                              prefix() + (big ? "sent a response over " + std::to_string(max_message_bytes) + " bytes"
                                              : "reading the response failed: " + ec.message())));
    co_return;
  }
  if (!parser.get().body().empty()) deliver(parser.get().body());
}

// One exchange on a new connection, with its resumes.
asio::awaitable<void> http_state::run(exchange x) {
  auto self = shared_from_this();
  for (int attempt = 0;; ++attempt) {
    tcp::resolver resolver(strand);
    auto [rec, endpoints] = co_await resolver.async_resolve(where.host, where.port, use_tuple);
    if (closed) co_return;
    if (rec) {
      fail_request(x, mcp_error(mcp_errc::connect_failed, prefix() + "cannot resolve " + quote(where.host) + ": " + rec.message()));
      co_return;
    }
    const std::int64_t key = x.id.value_or(-1);
    beast::tcp_stream tcp_layer(strand);
    std::optional<beast::ssl_stream<beast::tcp_stream>> tls_stream;
    beast::tcp_stream& lowest = tls ? beast::get_lowest_layer(tls_stream.emplace(strand, *tls)) : tcp_layer;
    auto entry = open.insert(open.end(), {key, [&lowest] { lowest.close(); }});
    struct forget {
      std::list<std::pair<std::int64_t, std::function<void()>>>& open;
      decltype(entry) it;
      ~forget() { open.erase(it); }
    } forget_entry{open, entry};
    lowest.expires_after(x.timeout);
    if (auto [ec, ep] = co_await lowest.async_connect(endpoints, use_tuple); ec) {
      fail_request(x, mcp_error(mcp_errc::connect_failed, prefix() + "cannot connect to " + quote(where.host_header) +
                                                              ": " + ec.message()));
      co_return;
    }
    if (tls_stream) {
      if (!SSL_set_tlsext_host_name(tls_stream->native_handle(), where.host.c_str())) {
        fail_request(x, mcp_error(mcp_errc::connect_failed, prefix() + "cannot set TLS SNI"));
        co_return;
      }
      if (config.verify_peer) tls_stream->set_verify_callback(asio::ssl::host_name_verification(where.host));
      if (auto [ec] = co_await tls_stream->async_handshake(asio::ssl::stream_base::client, use_tuple); ec) {
        fail_request(x, mcp_error(mcp_errc::connect_failed, prefix() + "TLS handshake failed: " + ec.message()));
        co_return;
      }
      co_await talk(*tls_stream, x);
    } else {
      co_await talk(tcp_layer, x);
    }
    if (closed || !x.id || !handlers.is_pending || !handlers.is_pending(*x.id)) co_return;
    // The stream ended without the answer.
    if (x.resume_from.empty() || attempt >= max_resumes) {
      fail_request(x, mcp_error(mcp_errc::connection_lost,
                                prefix() + "the response stream ended before the answer" +
                                    (x.resume_from.empty() ? " (no event id to resume from)" : " (resumed " +
                                        std::to_string(attempt) + " times)")));
      co_return;
    }
    const auto wait = std::clamp(std::chrono::milliseconds(x.retry_ms.value_or(default_retry.count())),
                                 std::chrono::milliseconds(0), max_retry);
    asio::steady_timer timer(strand, wait);
    co_await timer.async_wait(use_tuple);
    if (closed || !handlers.is_pending(*x.id)) co_return;
    logger->debug("{}resuming the response stream after event {}", prefix(), quote(x.resume_from, 80));
    x.method = http::verb::get;
    x.body.clear();
    x.last_event_id = x.resume_from;
  }
}

class http_transport final : public transport {
 public:
  http_transport(const server_config& config, strand_type strand, std::shared_ptr<spdlog::logger> logger)
      : s_(std::make_shared<http_state>(config, std::move(strand), std::move(logger))) {}
  ~http_transport() override { kill(); }

  void start(transport_handlers handlers) override { s_->handlers = std::move(handlers); }

  void send(std::string text, std::optional<std::int64_t> request_id) override {
    if (s_->closed) return;
    exchange x;
    x.body = std::move(text);
    x.id = request_id;
    x.timeout = s_->config.request_timeout;
    asio::co_spawn(s_->strand, s_->run(std::move(x)), asio::detached);
  }

  void abandon(std::int64_t id) override {
    for (auto& [key, close] : s_->open)
      if (key == id) close();
  }

  void set_protocol_version(const std::string& version) override { s_->protocol_version = version; }

  asio::awaitable<void> close() override {
    auto s = s_;
    if (s->closed) co_return;
    kill();
    if (s->session_id.empty()) co_return;
    // Tell the server the session is over; a server that does not allow
    // it answers 405, which is fine.
    s->closed = false;
    exchange x;
    x.method = http::verb::delete_;
    x.timeout = std::min(s->config.request_timeout, delete_timeout);
    co_await s->run(std::move(x));
    s->closed = true;
  }

  void kill() noexcept override {
    s_->closed = true;
    for (auto& [key, close] : s_->open) close();
  }

 private:
  std::shared_ptr<http_state> s_;
};

}  // namespace

std::unique_ptr<transport> make_http_transport(const server_config& config, strand_type strand,
                                               std::shared_ptr<spdlog::logger> logger) {
  return std::make_unique<http_transport>(config, std::move(strand), std::move(logger));
}

}  // namespace switchboard::mcp::detail
