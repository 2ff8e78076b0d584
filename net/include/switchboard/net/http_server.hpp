// The HTTP/1.1 server of the network layer: keep-alive connections on
// coroutines, optional TLS, limits on everything a client controls, and
// streamed (chunked) responses for server-sent events.
//
//   net::http_server server{io.get_executor(), {.port = 0},
//       [](net::server_request& request) -> asio::awaitable<net::server_response> {
//         co_return net::server_response{.status = 200, .body = R"({"ok":true})"};
//       }};
//   server.start();  // server.port() is the port it listens on
//
// What a client controls is bounded (server_options): the size of the
// head and of the body, how long a request may take to arrive once its
// first byte came (a client that trickles bytes cannot hold a connection),
// how long an idle keep-alive connection stays open, how long one write to
// a client that stops reading may wait (a stalled stream consumer is cut off
// instead of growing the server's memory), and how many connections are
// open at once. The server answers a request over a limit itself, with a
// 4xx and a body {"detail": "..."} naming the limit, and closes that
// connection; every other connection goes on. A handler that throws gets a
// 500 with a generic detail (the exception is logged, not sent).
//
// Thread-safety: the handler is called concurrently for different
// connections (each connection runs on its own strand of the executor, so
// a pool of threads serves connections in parallel); requests of one
// connection are handled one after another. start() and stop() may be
// called from any thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchboard::net {

struct server_options {
  std::string address = "127.0.0.1";      // an IPv4 or IPv6 address to listen on
  std::uint16_t port = 0;                  // 0: a free port the system picks (http_server::port())
  std::size_t max_connections = 1024;      // a connection beyond it is answered 503 and closed
  std::size_t max_header_bytes = 16 * 1024;   // request line and headers; over it: 431
  std::size_t max_body_bytes = 1024 * 1024;   // over it: 413
  // From a request's first byte to its last: a slow client gets 408.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
  // A keep-alive connection with no request for this long is closed.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  // One write (a whole response, or one piece of a stream) that the client
  // does not take within this time closes the connection.
  std::chrono::milliseconds write_timeout{std::chrono::seconds(30)};
  // Both set: HTTPS with this certificate chain and key (PEM files).
  std::string tls_certificate_file;
  std::string tls_private_key_file;
  // false: a request that is not HTTP at all (a TLS ClientHello on a plain
  // port, garbage) gets no 400; the connection is closed unanswered, as a
  // server that hangs up does. For test servers imitating one.
  bool answer_malformed_requests = true;
};

struct server_request {
  std::string method;                  // as sent: "GET", "POST", ...
  std::string target;                  // as sent: "/threads/1/runs?limit=3"
  std::string path;                    // the target's path, percent-decoded: "/threads/1/runs"
  std::string query;                   // the target's query, encoded, without '?': "limit=3"
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;
  std::string remote_address;          // the peer's IP address
  std::uint64_t connection = 0;        // the connection's number: 1 for the first the server accepted, ...
  bool keep_alive = true;              // the client would keep the connection (HTTP/1.1 without "close", ...)

  // The first header named `lowercase_name`, or nullopt.
  std::optional<std::string_view> header(std::string_view lowercase_name) const;
  // The first query parameter named `name`, percent-decoded, or nullopt.
  std::optional<std::string> query_parameter(std::string_view name) const;
};

// The body of a streamed response, as the handler's producer writes it.
class response_stream {
 public:
  // Sends `bytes` as the next piece of the body. Completes true once the
  // client took them; false when the client is gone or did not take them
  // within server_options::write_timeout (the connection is then closed):
  // stop producing.
  virtual boost::asio::awaitable<bool> write(std::string_view bytes) = 0;

 protected:
  ~response_stream() = default;
};

// The connection itself, for a server that misbehaves on purpose (a test
// server injecting faults): bytes go out exactly as given.
class raw_connection {
 public:
  // Writes `bytes` as they are; false when the client is gone or did not
  // take them within server_options::write_timeout.
  virtual boost::asio::awaitable<bool> write(std::string_view bytes) = 0;
  // Aborts the connection (TCP reset): the client sees it cut.
  virtual void reset() = 0;

 protected:
  ~raw_connection() = default;
};

struct server_response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type defaults to application/json
  std::string body;
  // Set: the body is streamed (chunked transfer encoding): after the head
  // is sent, this writes the body piece by piece and completes when it is
  // done (`body` is ignored). A stream that went out whole leaves the
  // connection open for the next request (HTTP/1.1 keep-alive); one that
  // did not closes it. The request is gone by then (a stream may last for
  // hours): capture what the stream needs of it by value.
  std::function<boost::asio::awaitable<void>(response_stream&)> stream;
  bool close = false;  // close the connection after this response
  // Set: the server writes nothing of its own; this writes the whole answer
  // (or half of one, or nothing) and completes true to keep the connection
  // for the next request, false to close it. For fault-injecting servers.
  std::function<boost::asio::awaitable<bool>(raw_connection&)> raw;
};

// A JSON response {"detail": detail} with `status`: how the server and its
// handlers answer a caller's error.
server_response error_response(int status, std::string_view detail);

using request_handler = std::function<boost::asio::awaitable<server_response>(server_request&)>;

class http_server {
 public:
  // Binds and listens. Throws net_error(invalid_options) naming the address
  // for one that is not an IP address or cannot be bound (in use, not
  // ours), or naming the file for TLS files that cannot be loaded.
  http_server(boost::asio::any_io_executor executor, server_options options, request_handler handler);
  ~http_server();  // stop()
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  // The port it listens on (the one the system picked for port 0).
  std::uint16_t port() const noexcept;
  const server_options& options() const noexcept;
  // Starts accepting connections.
  void start();
  // Stops accepting and closes every connection: a response being written
  // or streamed is cut. Idempotent.
  void stop();
  // Connections open now.
  std::size_t open_connections() const noexcept;
  // Streamed responses whose body is being written now (from the first
  // call of their `stream` until it returns or throws).
  std::size_t open_streams() const noexcept;
  // Connections accepted since start(), those answered 503 over
  // max_connections and those whose TLS handshake failed included.
  std::uint64_t accepted_connections() const noexcept;

  struct impl;  // internal

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace switchboard::net
