// One connection of the HTTP server (http_server.hpp): a coroutine on its
// own strand from accept to close. It waits for a request's first byte (idle
// timeout), reads the rest under the request timeout, hands it to the
// handler, writes the answer under the write timeout, and repeats while
// keep-alive holds. Each timeout is a deadline over one operation
// (socket_deadline): between operations -- a stream waiting for its next
// event, for hours maybe -- a connection holds its socket and no timer.
#include "http_server_impl.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/url/parse.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <type_traits>

namespace switchboard::net {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr std::size_t first_read_bytes = 4096;

std::string lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The connection's socket under its stream: itself, or under TLS.
template <class Stream>
tcp::socket& socket_of(Stream& s) {
  return beast::get_lowest_layer(s);
}

// A deadline over one operation on a connection's socket (a request read,
// an answer written, a handshake). Once it passes, it cancels the socket's
// pending operation, and again every 10 ms until the operation ends: a
// cancel that lands between two steps of a composed operation (the
// parser's reads, a message's writes) finds nothing to cancel. Cancelled,
// not closed: a request read too slowly still gets its 408. Lives in the
// frame of the operation's own coroutine, so nothing of it is kept between
// operations. On the connection's strand, as the operation is.
class socket_deadline {
 public:
  socket_deadline(tcp::socket& socket, std::chrono::milliseconds timeout)
      : timer_(socket.get_executor(), timeout), state_(std::make_shared<state>()) {
    timer_.async_wait(expiry{timer_, socket, state_});
  }
  socket_deadline(const socket_deadline&) = delete;
  socket_deadline& operator=(const socket_deadline&) = delete;
  // The operation ended: an expiry already queued does nothing.
  ~socket_deadline() {
    state_->pending = false;
    timer_.cancel();
  }

  // True when the deadline passed before the operation ended.
  bool passed() const { return state_->passed; }

 private:
  struct state {
    bool pending = true;
    bool passed = false;
  };
  // Touches `timer` and `socket` only while the operation is pending (the
  // deadline, in the operation's frame, is alive then).
  struct expiry {
    asio::steady_timer& timer;
    tcp::socket& socket;
    std::shared_ptr<state> shared;

    void operator()(const boost::system::error_code& ec) const {
      if (ec || !shared->pending) return;
      shared->passed = true;
      boost::system::error_code ignored;
      socket.cancel(ignored);
      timer.expires_after(std::chrono::milliseconds(10));
      timer.async_wait(*this);
    }
  };

  asio::steady_timer timer_;
  std::shared_ptr<state> state_;
};

// Writes `buffers` within `timeout`; false when they could not all be
// written in time.
template <class Stream, class Buffers>
asio::awaitable<bool> write_within(Stream& stream, const Buffers& buffers, std::chrono::milliseconds timeout) {
  const socket_deadline deadline(socket_of(stream), timeout);
  auto [ec, n] = co_await asio::async_write(stream, buffers, use_tuple);
  co_return !ec && !deadline.passed();
}

// The chunked body writer handed to a streaming producer.
template <class Stream>
class chunk_writer final : public response_stream {
 public:
  chunk_writer(Stream& stream, std::chrono::milliseconds timeout) : stream_(stream), timeout_(timeout) {}

  asio::awaitable<bool> write(std::string_view bytes) override {
    if (broken_) co_return false;
    if (bytes.empty()) co_return true;  // an empty chunk would end the body
    const auto chunk = http::make_chunk(asio::buffer(bytes.data(), bytes.size()));
    if (!co_await write_within(stream_, chunk, timeout_)) broken_ = true;
    co_return !broken_;
  }

  asio::awaitable<void> finish() {
    if (broken_) co_return;
    const auto last = http::make_chunk_last();
    if (!co_await write_within(stream_, last, timeout_)) broken_ = true;
  }

  bool broken() const { return broken_; }

 private:
  Stream& stream_;
  std::chrono::milliseconds timeout_;
  bool broken_ = false;
};

template <class Stream>
class raw_writer final : public raw_connection {
 public:
  raw_writer(Stream& stream, std::chrono::milliseconds timeout) : stream_(stream), timeout_(timeout) {}

  asio::awaitable<bool> write(std::string_view bytes) override {
    if (broken_) co_return false;
    const auto buffer = asio::buffer(bytes.data(), bytes.size());
    if (!co_await write_within(stream_, buffer, timeout_)) broken_ = true;
    co_return !broken_;
  }

  void reset() override {
    boost::system::error_code ignored;
    auto& socket = socket_of(stream_);
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
    broken_ = true;
  }

  bool broken() const { return broken_; }

 private:
  Stream& stream_;
  std::chrono::milliseconds timeout_;
  bool broken_ = false;
};

server_request to_server_request(http::request<http::string_body>&& message, std::string remote) {
  server_request r;
  r.keep_alive = message.keep_alive();
  r.method = std::string(message.method_string());
  r.target = std::string(message.target());
  if (const auto parsed = boost::urls::parse_origin_form(r.target)) {
    r.path = std::string(parsed->path());  // decoded
    r.query = std::string(parsed->encoded_query());
  } else {
    r.path = r.target;
  }
  for (const auto& field : message) r.headers.emplace_back(lower(field.name_string()), std::string(field.value()));
  r.body = std::move(message.body());
  r.remote_address = std::move(remote);
  return r;
}

// Why a request could not be read, as the answer the server gives itself;
// nullopt when the connection is simply over (closed, idle, reset).
std::optional<server_response> answer_to_read_error(const boost::system::error_code& ec, bool started,
                                                    bool answer_malformed) {
  if (ec == http::error::header_limit) return error_response(431, "request head larger than the server accepts");
  if (ec == http::error::body_limit) return error_response(413, "request body larger than the server accepts");
  if (ec == beast::error::timeout) {
    if (!started) return std::nullopt;
    return error_response(408, "request not received in time");
  }
  if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
      ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor)
    return std::nullopt;
  if (ec.category() == make_error_code(http::error::bad_method).category() && answer_malformed)
    return error_response(400, "malformed HTTP request: " + ec.message());
  return std::nullopt;
}

// Reads one request within `timeout`; beast::error::timeout when it did not
// arrive in time.
template <class Stream>
asio::awaitable<boost::system::error_code> read_request(Stream& stream, beast::flat_buffer& buffer,
                                                        http::request_parser<http::string_body>& parser,
                                                        std::chrono::milliseconds timeout) {
  const socket_deadline deadline(socket_of(stream), timeout);
  auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
  co_return deadline.passed() ? make_error_code(beast::error::timeout) : ec;
}

// The first bytes of the next request, waited for up to `timeout` (the idle
// timeout): false when none came. A frame of its own: the deadline is not
// kept in the connection's frame.
template <class Stream>
asio::awaitable<bool> read_first_bytes(Stream& stream, beast::flat_buffer& buffer, std::chrono::milliseconds timeout) {
  const socket_deadline deadline(socket_of(stream), timeout);
  auto [ec, n] = co_await stream.async_read_some(buffer.prepare(first_read_bytes), use_tuple);
  if (ec || deadline.passed()) co_return false;
  buffer.commit(n);
  co_return true;
}

template <class Stream>
asio::awaitable<bool> write_whole(Stream& stream, server_response& response, unsigned version, bool keep_alive,
                                  std::chrono::milliseconds timeout) {
  http::response<http::string_body> message{static_cast<http::status>(response.status), version};
  bool has_type = false;
  for (auto& [name, value] : response.headers) {
    has_type = has_type || lower(name) == "content-type";
    message.insert(name, value);  // not set(): a name given twice is sent twice
  }
  if (!has_type && !response.body.empty()) message.set(http::field::content_type, "application/json");
  message.body() = std::move(response.body);
  message.keep_alive(keep_alive);
  message.prepare_payload();
  const socket_deadline deadline(socket_of(stream), timeout);
  auto [ec, n] = co_await http::async_write(stream, message, use_tuple);
  co_return !ec && !deadline.passed();
}

// Writes a streamed answer's head. A frame of its own: the head's fields
// and serializer are not kept while the body streams, for hours maybe.
template <class Stream>
asio::awaitable<bool> write_stream_head(Stream& stream, const server_response& response, unsigned version,
                                        bool keep_alive, std::chrono::milliseconds timeout) {
  http::response<http::empty_body> head{static_cast<http::status>(response.status), version};
  for (auto& [name, value] : response.headers) head.insert(name, value);
  head.chunked(true);
  head.keep_alive(keep_alive);
  http::response_serializer<http::empty_body> serializer{head};
  const socket_deadline deadline(socket_of(stream), timeout);
  auto [ec, n] = co_await http::async_write_header(stream, serializer, use_tuple);
  co_return !ec && !deadline.passed();
}

// Counts a streamed body while it is written, however its stream ends.
class open_stream {
 public:
  explicit open_stream(std::atomic<std::size_t>& count) : count_(count) { ++count_; }
  open_stream(const open_stream&) = delete;
  open_stream& operator=(const open_stream&) = delete;
  ~open_stream() { --count_; }

 private:
  std::atomic<std::size_t>& count_;
};

// The next request on a connection, with the HTTP version it came in.
struct received_request {
  server_request request;
  unsigned version = 11;
};

// Reads the next request; null when the connection ends (answered first
// when its error has an answer). A frame of its own: the parser is not
// kept while the request is answered.
template <class Stream>
asio::awaitable<std::unique_ptr<received_request>> receive_request(Stream& stream, beast::flat_buffer& buffer,
                                                                   const server_options& opts, bool started,
                                                                   const std::string& remote) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(opts.max_header_bytes, UINT32_MAX)));
  parser.body_limit(opts.max_body_bytes);
  const auto ec = co_await read_request(stream, buffer, parser, opts.request_timeout);
  if (ec) {
    if (auto answer = answer_to_read_error(ec, started, opts.answer_malformed_requests))
      co_await write_whole(stream, *answer, 11, false, opts.write_timeout);
    co_return nullptr;
  }
  auto received = std::make_unique<received_request>();
  received->version = parser.get().version();
  received->request = to_server_request(parser.release(), remote);
  co_return received;
}

// The handler's answer into `response`; a 500 when it threw (logged). Into
// the caller's variable rather than returned: g++ keeps an awaited result's
// temporary in the awaiting frame for that frame's whole life, and the
// connection's frame lives as long as a stream it writes.
asio::awaitable<void> answer_request(http_server::impl& server, server_request& request, server_response& response) {
  try {
    auto handling = server.handler(request);  // g++ 12: named before co_await
    response = co_await std::move(handling);
    co_return;
  } catch (const std::exception& e) {
    spdlog::error("http server: {} {} failed: {}", request.method, request.path, e.what());
  } catch (...) {
    spdlog::error("http server: {} {} failed with a non-standard exception", request.method, request.path);
  }
  response = error_response(500, "internal server error");
}

// A connection's place in the server while it is open: its closer
// registered (stop() closes every connection through it), and however the
// connection ends, even with its coroutine destroyed unfinished, the closer
// gone, the socket shut and closed and the count down.
class connection_slot {
 public:
  connection_slot(http_server::impl& server, tcp::socket& socket)
      : server_(server), socket_(socket), open_(std::make_shared<tcp::socket*>(&socket)) {
    id_ = server_.register_closer({socket.get_executor(), open_});
  }
  connection_slot(const connection_slot&) = delete;
  connection_slot& operator=(const connection_slot&) = delete;
  ~connection_slot() {
    server_.unregister(id_);
    *open_ = nullptr;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    --server_.connections;
  }

 private:
  http_server::impl& server_;
  tcp::socket& socket_;
  std::shared_ptr<tcp::socket*> open_;
  std::uint64_t id_ = 0;
};

// What a connection's requests are read from: the socket itself, or TLS
// over it.
template <bool Tls>
struct connection_stream {
  connection_stream(tcp::socket& socket, http_server::impl&) : stream(socket) {}
  tcp::socket& stream;
};

template <>
struct connection_stream<true> {
  connection_stream(tcp::socket& socket, http_server::impl& server) : stream(socket, *server.tls) {}
  beast::ssl_stream<tcp::socket&> stream;
};

asio::awaitable<bool> tls_handshake(beast::ssl_stream<tcp::socket&>& tls, std::chrono::milliseconds timeout) {
  const socket_deadline deadline(socket_of(tls), timeout);
  auto [ec] = co_await tls.async_handshake(asio::ssl::stream_base::server, use_tuple);
  co_return !ec && !deadline.passed();
}

template <class Socket>
std::string remote_address(const Socket& socket) {
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  return ec ? std::string() : peer.address().to_string();
}


// One connection: requests read and answered one after another, in one
// coroutine from accept to close. A stream may go on for hours, and every
// frame it waits in is held as long: only what an answer needs stays in
// this one while it is written (the request goes once the handler has
// answered), and reading, answering and writing a head have frames of
// their own that end with them. The socket lives in this frame (88 bytes);
// Beast's tcp_stream would have added about 520 on the heap, with three
// timers.
template <bool Tls>
asio::awaitable<void> run_connection(std::shared_ptr<http_server::impl> server, tcp::socket socket,
                                     std::string remote, std::uint64_t number) {
  const connection_slot slot(*server, socket);
  // Accepted as stop() ran, and registered after its close_all(): closed,
  // never served.
  if (server->stopped) co_return;
  try {
    connection_stream<Tls> layer(socket, *server);
    auto& stream = layer.stream;
    using Stream = std::remove_reference_t<decltype(stream)>;
    if constexpr (Tls) {
      if (!co_await tls_handshake(stream, server->options.request_timeout)) co_return;
    }
    const auto& opts = server->options;
    beast::flat_buffer buffer;
    for (;;) {
      // The first byte of the next request, under the idle timeout.
      bool started = buffer.size() > 0;
      if (!started) {
        auto reading = read_first_bytes(stream, buffer, opts.idle_timeout);
        if (!co_await std::move(reading)) co_return;
        started = true;
      }
      auto receiving = receive_request(stream, buffer, opts, started, remote);
      auto received = co_await std::move(receiving);
      if (!received) co_return;
      // An answer may take long (a run waited for, a stream followed for
      // hours): the read buffer is not kept through it unless it holds the
      // next request's bytes.
      if (buffer.size() == 0) buffer.shrink_to_fit();
      const unsigned version = received->version;
      bool keep_alive = received->request.keep_alive;
      received->request.connection = number;
      server_response response;
      auto answering = answer_request(*server, received->request, response);
      co_await std::move(answering);
      received.reset();
      if (response.raw) {
        raw_writer<Stream> writer(stream, opts.write_timeout);
        const bool keep = co_await response.raw(writer);
        if (!keep || writer.broken() || server->stopped) co_return;
        continue;
      }
      keep_alive = keep_alive && !response.close && !server->stopped;
      if (response.stream) {
        // Written here, not in a coroutine of its own: a stream may go on for
        // hours, and a second frame would be held as long. HTTP/1.1 chunking
        // frames the body, so the connection outlives it.
        const bool chunked_keep_alive = keep_alive && version >= 11;
        auto writing_head = write_stream_head(stream, response, version, chunked_keep_alive, opts.write_timeout);
        if (!co_await std::move(writing_head)) co_return;
        // Sent: nothing of the head is kept while the body streams.
        response.headers.clear();
        response.headers.shrink_to_fit();
        response.body.clear();
        response.body.shrink_to_fit();
        chunk_writer<Stream> writer(stream, opts.write_timeout);
        {
          const open_stream counted(server->streams);  // http_server::open_streams()
          co_await response.stream(writer);
        }
        co_await writer.finish();
        if (writer.broken() || !keep_alive || version < 11 || server->stopped) co_return;
        continue;
      }
      if (!co_await write_whole(stream, response, version, keep_alive, opts.write_timeout) || !keep_alive) co_return;
    }
  } catch (const std::exception& e) {
    spdlog::debug("http server: connection from {} ended: {}", remote, e.what());
  } catch (...) {
    spdlog::debug("http server: connection from {} ended by a non-standard exception", remote);
  }
}

asio::awaitable<void> refuse_connection(tcp::socket socket) {
  auto answer = error_response(503, "too many connections");
  co_await write_whole(socket, answer, 11, false, std::chrono::milliseconds(1000));
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace

namespace detail {

// A new connection's strand. On an io_context, around its own executor
// rather than the type-erased one: a strand of that (24 bytes) fits inside
// an any_io_executor, so the executors every pending operation of the
// connection keeps are not allocated on the heap (about 170 bytes each for
// a strand of an any_io_executor; a stream waits with one or two pending).
asio::any_io_executor connection_strand(const asio::any_io_executor& executor) {
  if (const auto* io = executor.target<asio::io_context::executor_type>()) return asio::make_strand(*io);
  return asio::make_strand(executor);
}

void serve_accepted(std::shared_ptr<http_server::impl> server, tcp::socket socket, std::uint64_t number) {
  const auto ex = socket.get_executor();
  auto remote = remote_address(socket);
  // Each write goes out at once: with Nagle's algorithm a write that
  // follows another (a stream's pieces, pipelined answers) waits for the
  // peer's delayed ACK, some 40 ms.
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  const bool tls = server->tls.has_value();
  if (tls)
    asio::co_spawn(ex, run_connection<true>(std::move(server), std::move(socket), std::move(remote), number),
                   asio::detached);
  else
    asio::co_spawn(ex, run_connection<false>(std::move(server), std::move(socket), std::move(remote), number),
                   asio::detached);
}

void refuse_accepted(tcp::socket socket) {
  const auto ex = socket.get_executor();
  asio::co_spawn(ex, refuse_connection(std::move(socket)), asio::detached);
}

}  // namespace detail
}  // namespace switchboard::net
