// The HTTP server's shared state (http_server.cpp: listening, accepting,
// stopping) and what its connections need of it (http_connection.cpp).
// Internal to the net library.
#pragma once

#include <switchboard/net/http_server.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace switchboard::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

inline constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Closes connections from another thread: each open connection registers a
// closer that posts the close onto the connection's own strand.
struct http_server::impl : std::enable_shared_from_this<http_server::impl> {
  impl(asio::any_io_executor ex, server_options opts, request_handler h)
      : executor(std::move(ex)),
        acceptor_strand(asio::make_strand(executor)),
        options(std::move(opts)),
        handler(std::move(h)),
        acceptor(acceptor_strand) {}

  asio::any_io_executor executor;
  asio::strand<asio::any_io_executor> acceptor_strand;  // the acceptor's operations and its close
  server_options options;
  request_handler handler;
  tcp::acceptor acceptor;
  std::optional<asio::ssl::context> tls;
  std::uint16_t port = 0;
  std::atomic<bool> stopped{false};
  std::atomic<std::size_t> connections{0};
  std::atomic<std::size_t> streams{0};  // streamed bodies being written
  std::atomic<std::uint64_t> accepted{0};
  // How stop() closes an open connection: on its strand, while `open`
  // still points at its socket (the connection clears it on its way out).
  struct closer {
    asio::any_io_executor strand;
    std::shared_ptr<tcp::socket*> open;
    void operator()() const {
      asio::post(strand, [open = open] {
        boost::system::error_code ignored;
        if (*open) (*open)->close(ignored);
      });
    }
  };
  std::mutex closers_mutex;
  std::uint64_t next_connection = 0;
  std::map<std::uint64_t, closer> closers;

  void listen();
  void load_tls();
  asio::awaitable<void> accept_loop();
  std::uint64_t register_closer(closer c) {
    std::scoped_lock lock(closers_mutex);
    closers.emplace(++next_connection, std::move(c));
    return next_connection;
  }
  void unregister(std::uint64_t id) {
    std::scoped_lock lock(closers_mutex);
    closers.erase(id);
  }
  void close_all() {
    std::map<std::uint64_t, closer> all;
    {
      std::scoped_lock lock(closers_mutex);
      all = closers;
    }
    for (auto& [id, close] : all) close();
  }
};

namespace detail {

// A new connection's strand (see http_connection.cpp).
asio::any_io_executor connection_strand(const asio::any_io_executor& executor);
// Serves an accepted connection, counted in `server->connections`, until it
// closes.
void serve_accepted(std::shared_ptr<http_server::impl> server, tcp::socket socket, std::uint64_t number);
// Answers a connection over the limit 503 and closes it.
void refuse_accepted(tcp::socket socket);

}  // namespace detail
}  // namespace switchboard::net
