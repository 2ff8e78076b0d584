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
// The HTTP is the network layer's client (net/http_client.hpp): its TLS
// with peer and host-name verification, deadlines, size limits, redaction
// of the configured headers from every message, and retries — here only
// of what the server cannot have acted on (a connection that could not be
// opened, a 429 or 503 with its Retry-After), never of a message it may
// have read. One connection per exchange (Connection: close): MCP traffic
// is a handful of requests per tool call, and an SSE response holds its
// connection anyway.
//
// Deadlines: the client abandons a request (cancelling its exchange, which
// closes the connection) when its own deadline passes or its caller
// cancels; the HTTP deadlines here end a second later, as a backstop and
// for messages nobody awaits.
#include "transport.hpp"

#include <switchboard/net/error.hpp>
#include <switchboard/net/http_client.hpp>
#include <switchboard/telemetry/trace_context.hpp>
#include <switchboard/net/redaction.hpp>
#include <switchboard/net/sse_parser.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/url/parse.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <list>
#include <vector>

namespace switchboard::mcp::detail {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr int max_resumes = 3;
constexpr std::size_t max_error_body = 64 * 1024;
constexpr std::size_t max_session_id = 256;
constexpr std::chrono::milliseconds default_retry{200};
constexpr std::chrono::milliseconds max_retry{5'000};
constexpr std::chrono::milliseconds delete_timeout{5'000};
// The HTTP deadlines come this long after the client's own (see above).
constexpr std::chrono::milliseconds backstop{1'000};

// The response headers the transport reads.
constexpr std::array<std::string_view, 2> wanted_headers{"mcp-session-id", "content-type"};

struct endpoint {
  std::string origin;       // scheme://host[:port]: the HTTP client's base URL
  std::string host_header;  // host[:port], for messages
  std::string target;       // path and query
};

endpoint parse_endpoint(const server_config& c) {
  const auto u = boost::urls::parse_uri(c.url);
  if (!u || (u->scheme() != "http" && u->scheme() != "https") || u->host_address().empty())
    throw mcp_error(mcp_errc::not_configured, server_prefix(c.name) + quote(c.url) + " is not an http(s) URL");
  if (u->has_userinfo())
    throw mcp_error(mcp_errc::not_configured, server_prefix(c.name) + "the URL must not carry credentials "
                                                                        "(user:password@); send them in headers");
  endpoint e;
  e.host_header = std::string(u->encoded_host_and_port());
  e.origin = std::string(u->scheme()) + "://" + e.host_header;
  e.target = u->encoded_path().empty() ? "/" : std::string(u->encoded_path());
  if (u->has_query()) e.target += "?" + std::string(u->encoded_query());
  return e;
}

net::http_options http_options_for(const server_config& c, const endpoint& e) {
  net::http_options o;
  o.base_url = e.origin;
  o.request_timeout = c.request_timeout + backstop;
  o.connect_timeout = std::min<std::chrono::milliseconds>(c.request_timeout, 10s);
  o.stream_idle_timeout = c.request_timeout + backstop;
  o.verify_peer = c.verify_peer;
  o.max_response_bytes = max_message_bytes;
  o.user_agent = "switchboard-mcp";
  // Only what the server cannot have acted on is retried (retry_scope::
  // unprocessed): a connection refused while the server restarts, a 429
  // or 503, whose Retry-After is waited for within the request's deadline.
  o.retry.max_attempts = 3;
  o.retry.initial_backoff = 250ms;
  o.retry.max_backoff = 2s;
  o.retry.max_retry_after = c.request_timeout;
  return o;
}

bool same_name(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

// "application/json; charset=utf-8" -> "application/json", in lower case.
std::string media_type(std::string_view content_type) {
  std::string type(content_type.substr(0, content_type.find(';')));
  std::erase_if(type, [](char c) { return c == ' ' || c == '\t'; });
  std::ranges::transform(type, type.begin(),
                         [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  return type;
}

// A visible-ASCII session id (the spec's rule), bounded.
bool valid_session_id(std::string_view id) {
  return !id.empty() && id.size() <= max_session_id &&
         std::ranges::all_of(id, [](char c) { return c >= 0x21 && c <= 0x7e; });
}

// What one exchange sends: a message (POST), a resume (GET) or the end of
// the session (DELETE).
struct exchange {
  net::http_method method = net::http_method::post;
  std::string body;
  std::optional<std::int64_t> id;  // the request it answers
  std::string last_event_id;       // GET resume
  std::chrono::milliseconds timeout{};
  std::string traceparent;         // W3C, when the request belongs to a trace
  std::string tracestate;
};

struct http_state;

// Reads an SSE answer: JSON-RPC messages come as "message" events (or
// untyped ones) with data. Lives for a whole exchange, its resumes
// included, so that the last event id and retry time carry over.
class event_reader final : public net::body_stream, private net::sse_handler {
 public:
  event_reader(http_state& state, std::optional<std::int64_t> id)
      : state_(state), id_(id), events_({max_message_bytes, max_message_bytes}) {}

  void head(int status, std::span<const net::response_header> headers) override;
  void begin() override {
    events_.reset();
    begun_ = true;
  }
  void data(std::string_view bytes) override;
  // Whether the answer came is the exchange's to judge (resume or not).
  std::optional<std::string> end() override { return std::nullopt; }
  bool wants_more() const noexcept override;

  bool begun() const noexcept { return begun_; }
  const std::string& last_event_id() const noexcept { return last_id_; }
  std::optional<long> retry_ms() const noexcept { return retry_ms_; }

 private:
  void on_event(const net::sse_event& e) override;

  http_state& state_;
  std::optional<std::int64_t> id_;
  net::sse_parser events_;
  std::string last_id_;
  std::optional<long> retry_ms_;
  bool begun_ = false;
};

struct http_state : std::enable_shared_from_this<http_state> {
  http_state(const server_config& c, strand_type s, std::shared_ptr<spdlog::logger> l)
      : config(c), strand(std::move(s)), logger(std::move(l)), where(parse_endpoint(c)), client(make_client()) {}

  server_config config;
  strand_type strand;
  std::shared_ptr<spdlog::logger> logger;
  endpoint where;
  net::http_client client;
  std::string session_id;
  std::string protocol_version;
  transport_handlers handlers;
  bool closed = false;
  // Exchanges in flight, by request id (-1 for the rest; a POST and its
  // resumes share one): cancelling one ends its HTTP request and closes its
  // connection.
  std::list<std::pair<std::int64_t, std::shared_ptr<asio::cancellation_signal>>> open;

  std::string prefix() const { return server_prefix(config.name); }

  net::http_client make_client() const {
    std::string provider = prefix();
    provider.resize(provider.size() - 2);  // "MCP server 'x'" without ": "
    try {
      return net::http_client(http_options_for(config, where), std::move(provider));
    } catch (const net::net_error& e) {
      throw mcp_error(mcp_errc::not_configured, prefix() + e.reason());
    }
  }

  void fail_request(const exchange& x, const mcp_error& e) {
    if (closed) return;
    if (x.id && handlers.on_request_failed) handlers.on_request_failed(*x.id, e);
    else logger->warn("{}", e.what());
  }

  // Whether anyone still waits for what this exchange may bring.
  bool waiting_for(std::optional<std::int64_t> id) const {
    return !closed && (!id || (handlers.is_pending && handlers.is_pending(*id)));
  }

  void deliver(std::string_view body) {
    if (!closed && handlers.on_message) handlers.on_message(body);
  }

  // The session id a response gives, taken once; throws mcp_error for one
  // the spec does not allow.
  void learn_session_id(std::optional<std::string_view> id) {
    if (!id || id->empty() || !session_id.empty()) return;
    if (!valid_session_id(*id))
      throw mcp_error(mcp_errc::protocol_error, prefix() + "sent an invalid Mcp-Session-Id " + quote(*id, 80));
    session_id = std::string(*id);
  }

  mcp_error translate(const net::net_error& e) const;
  std::vector<net::http_header> request_headers(const exchange& x) const;
  asio::awaitable<bool> talk(const exchange& x, event_reader& reader);
  asio::awaitable<void> run(exchange x);
  asio::awaitable<void> end_session();
};

void event_reader::head(int, std::span<const net::response_header> headers) {
  for (const auto& h : headers)
    if (h.name == "mcp-session-id") state_.learn_session_id(h.value);
}

void event_reader::data(std::string_view bytes) {
  const net::sse_status status = events_.feed(bytes, *this);
  if (!events_.last_event_id().empty() && events_.last_event_id() != last_id_) last_id_ = events_.last_event_id();
  if (events_.retry_ms()) retry_ms_ = events_.retry_ms();
  if (status != net::sse_status::ok) {
    throw mcp_error(mcp_errc::message_too_large,
                    state_.prefix() + "sent an event over " + std::to_string(max_message_bytes) + " bytes");
  }
}

// Once the answer came, the rest of the stream is not read.
bool event_reader::wants_more() const noexcept { return state_.waiting_for(id_); }

void event_reader::on_event(const net::sse_event& e) {
  if ((e.type.empty() || e.type == "message") && !e.data.empty()) state_.deliver(e.data);
}

// The network layer's error in the transport's words. The reason is
// redacted for the configured headers already.
mcp_error http_state::translate(const net::net_error& e) const {
  const std::string why = e.reason().empty() ? std::string(e.what()) : e.reason();
  switch (e.errc()) {
    case net::net_errc::connect_failed:
    case net::net_errc::tls_verification_failed:
      return mcp_error(mcp_errc::connect_failed,
                       prefix() + "cannot connect to " + quote(where.host_header) + ": " + why);
    case net::net_errc::timeout:
      return mcp_error(mcp_errc::timeout, prefix() + "the request timed out: " + why);
    case net::net_errc::response_too_large:
      return mcp_error(mcp_errc::message_too_large,
                       prefix() + "sent a response over " + std::to_string(max_message_bytes) + " bytes");
    case net::net_errc::invalid_response:
      return mcp_error(mcp_errc::protocol_error, prefix() + why);
    case net::net_errc::invalid_options:
      return mcp_error(mcp_errc::not_configured, prefix() + why);
    case net::net_errc::cancelled:
      return mcp_error(mcp_errc::closed, prefix() + why);
    case net::net_errc::http_status:
      return mcp_error(mcp_errc::http_status, prefix() + why);
    case net::net_errc::connection_lost:
      break;
  }
  return mcp_error(mcp_errc::connection_lost, prefix() + "reading the response failed: " + why);
}

// The transport's headers, then the configured ones (secret: redacted from
// every message), a configured header replacing the transport's of the
// same name. The views point into `x`, the state and the configuration.
std::vector<net::http_header> http_state::request_headers(const exchange& x) const {
  std::vector<net::http_header> headers;
  headers.reserve(5 + config.headers.size());
  if (x.method == net::http_method::post) {
    headers.push_back({"Accept", "application/json, text/event-stream"});
  } else if (x.method == net::http_method::get) {
    headers.push_back({"Accept", "text/event-stream"});
  }
  headers.push_back({"Connection", "close"});
  if (!session_id.empty()) headers.push_back({"Mcp-Session-Id", session_id});
  if (!protocol_version.empty()) headers.push_back({"MCP-Protocol-Version", protocol_version});
  if (!x.last_event_id.empty()) headers.push_back({"Last-Event-ID", x.last_event_id});
  if (!x.traceparent.empty()) headers.push_back({telemetry::traceparent_header, x.traceparent});
  if (!x.tracestate.empty()) headers.push_back({telemetry::tracestate_header, x.tracestate});
  for (const auto& [name, value] : config.headers) {
    const auto same = std::ranges::find_if(headers, [&](const net::http_header& h) { return same_name(h.name, name); });
    if (same != headers.end()) {
      *same = {name, value, true};
    } else {
      headers.push_back({name, value, true});
    }
  }
  return headers;
}

// One HTTP request of an exchange (a POST, or a GET that resumes its
// stream). True when it ended without a failure
// being reported — the answer may have come, or a stream ended (or broke)
// before it: the caller looks; false when a failure was reported or the
// exchange was cancelled.
asio::awaitable<bool> http_state::talk(const exchange& x, event_reader& reader) {
  const std::vector<net::http_header> headers = request_headers(x);
  net::request_budget budget;
  budget.deadline = std::chrono::steady_clock::now() + x.timeout + backstop;
  net::http_request request;
  request.method = x.method;
  request.path = where.target;
  request.body = x.body;
  request.headers = headers;
  request.response_headers = wanted_headers;
  request.budget = &budget;
  request.stream = &reader;
  request.max_body_bytes = max_message_bytes;
  request.max_error_body_bytes = max_error_body;
  request.timeout = x.timeout + backstop;
  request.retry = net::retry_scope::unprocessed;

  net::http_result result;
  std::optional<mcp_error> failure;
  try {
    result = co_await client.request(request);
    learn_session_id(result.header("mcp-session-id"));
  } catch (const mcp_error& e) {  // from the event reader, or the session id
    failure = e;
  } catch (const net::net_error& e) {
    // Cancelled: the client abandoned the request (or the transport was
    // killed); nobody waits for a word about it.
    if (e.errc() == net::net_errc::cancelled) co_return false;
    // A stream that broke or stalled: the caller resumes it, or says so.
    const bool broken = e.errc() == net::net_errc::connection_lost || e.errc() == net::net_errc::timeout;
    if (broken && reader.begun()) co_return true;
    failure = translate(e);
  }
  if (failure) {
    fail_request(x, *failure);
    co_return false;
  }
  const int status = result.status;
  if (status == 202) co_return true;
  if (status == 404 && !session_id.empty()) {
    fail_request(x, mcp_error(mcp_errc::session_expired, prefix() + "the session expired (HTTP 404)"));
    co_return false;
  }
  if (status < 200 || status > 299) {
    fail_request(x, mcp_error(mcp_errc::http_status, prefix() + "HTTP " + std::to_string(status) + ": " +
                                                         quote(net::redact(result.body, headers))));
    co_return false;
  }
  if (result.streamed) co_return true;
  const std::string type(result.header("content-type").value_or(""));
  if (media_type(type) != "application/json") {
    fail_request(x, mcp_error(mcp_errc::protocol_error,
                              prefix() + "answered with Content-Type " + quote(type, 80) +
                                  " (expected application/json or text/event-stream)"));
    co_return false;
  }
  if (!result.body.empty()) deliver(result.body);
  co_return true;
}

// One exchange, with its resumes.
asio::awaitable<void> http_state::run(exchange x) {
  auto self = shared_from_this();
  event_reader reader(*this, x.id);
  for (int attempt = 0;; ++attempt) {
    const bool ended = co_await talk(x, reader);
    if (!ended || !x.id || !waiting_for(x.id)) co_return;
    // The stream ended without the answer.
    const std::string& resume_from = reader.last_event_id();
    if (resume_from.empty() || attempt >= max_resumes) {
      fail_request(x, mcp_error(mcp_errc::connection_lost,
                                prefix() + "the response stream ended before the answer" +
                                    (resume_from.empty() ? " (no event id to resume from)"
                                                         : " (resumed " + std::to_string(attempt) + " times)")));
      co_return;
    }
    const auto wait = std::clamp(std::chrono::milliseconds(reader.retry_ms().value_or(default_retry.count())),
                                 std::chrono::milliseconds(0), max_retry);
    asio::steady_timer timer(strand, wait);
    co_await timer.async_wait(use_tuple);
    if (!waiting_for(x.id)) co_return;
    logger->debug("{}resuming the response stream after event {}", prefix(), quote(resume_from, 80));
    x.method = net::http_method::get;
    x.body.clear();
    x.last_event_id = resume_from;
  }
}

// DELETE: tells the server the session is over. A server that does not
// allow it answers 405, which is fine; a failure is only logged.
asio::awaitable<void> http_state::end_session() {
  exchange x;
  x.method = net::http_method::delete_;
  x.timeout = std::min(config.request_timeout, delete_timeout);
  const std::vector<net::http_header> headers = request_headers(x);
  net::http_request request;
  request.method = x.method;
  request.path = where.target;
  request.headers = headers;
  request.max_error_body_bytes = max_error_body;
  request.timeout = x.timeout;
  request.retry = net::retry_scope::none;
  try {
    co_await client.request(request);
  } catch (const net::net_error& e) {
    logger->debug("{}ending the session failed: {}", prefix(), e.reason());
  } catch (const boost::system::system_error&) {
    // The close was cancelled before the request started.
  }
}

class http_transport final : public transport {
 public:
  http_transport(const server_config& config, strand_type strand, std::shared_ptr<spdlog::logger> logger)
      : s_(std::make_shared<http_state>(config, std::move(strand), std::move(logger))) {}
  ~http_transport() override { kill(); }

  void start(transport_handlers handlers) override { s_->handlers = std::move(handlers); }

  void send(std::string text, std::optional<std::int64_t> request_id,
            const telemetry::span_context& trace) override {
    if (s_->closed) return;
    exchange x;
    x.body = std::move(text);
    x.id = request_id;
    if (trace.valid()) {
      x.traceparent = telemetry::format_traceparent(trace);
      x.tracestate = trace.trace_state;
    }
    x.timeout = s_->config.request_timeout;
    auto signal = std::make_shared<asio::cancellation_signal>();
    auto slot = signal->slot();
    open_entry entry(s_, s_->open.insert(s_->open.end(), {request_id.value_or(-1), std::move(signal)}));
    auto op = s_->run(std::move(x));
    asio::co_spawn(s_->strand, std::move(op),
                   asio::bind_cancellation_slot(slot, [entry = std::move(entry)](std::exception_ptr e) {
                     if (e) entry.report(e);
                   }));
  }

  void abandon(std::int64_t id) override {
    for (auto& [key, signal] : s_->open)
      if (key == id) signal->emit(asio::cancellation_type::terminal);
  }

  void set_protocol_version(const std::string& version) override { s_->protocol_version = version; }

  asio::awaitable<void> close() override {
    auto s = s_;
    if (s->closed) co_return;
    kill();
    if (s->session_id.empty()) co_return;
    co_await s->end_session();
  }

  // Cancelling completes nothing inline (the exchanges end on the strand
  // later), so the list is not changed under the loop.
  void kill() noexcept override {
    s_->closed = true;
    for (auto& [key, signal] : s_->open) signal->emit(asio::cancellation_type::terminal);
  }

 private:
  // An exchange's place in the open list, held by its completion handler:
  // removed (with the signal its cancellation slot points to) when the
  // handler is done with — after the exchange completed, or unrun when its
  // io_context is destroyed first, so that no later kill() reaches it.
  class open_entry {
   public:
    using iterator = decltype(http_state::open)::iterator;
    open_entry(std::shared_ptr<http_state> s, iterator it) : s_(std::move(s)), it_(it) {}
    open_entry(open_entry&& other) noexcept : s_(std::move(other.s_)), it_(other.it_) {}
    open_entry& operator=(open_entry&&) = delete;
    ~open_entry() {
      if (s_) s_->open.erase(it_);
    }

    void report(std::exception_ptr e) const {
      try {
        std::rethrow_exception(e);
      } catch (const boost::system::system_error& error) {
        // Cancelled between two steps (asio refuses to start another): no news.
        if (error.code() != asio::error::operation_aborted) s_->logger->warn("{}{}", s_->prefix(), error.what());
      } catch (const std::exception& error) {
        s_->logger->warn("{}{}", s_->prefix(), error.what());
      }
    }

   private:
    std::shared_ptr<http_state> s_;
    iterator it_;
  };

  std::shared_ptr<http_state> s_;
};

}  // namespace

std::unique_ptr<transport> make_http_transport(const server_config& config, strand_type strand,
                                               std::shared_ptr<spdlog::logger> logger) {
  return std::make_unique<http_transport>(config, std::move(strand), std::move(logger));
}

}  // namespace switchboard::mcp::detail
