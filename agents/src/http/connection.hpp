// One pooled HTTP/1.1 connection, plain TCP or TLS over TCP. Used by one
// request at a time (the pool hands it out exclusively). Internal.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <optional>

namespace switchboard::agents::detail {

struct connection {
  // tls == nullptr: plain TCP.
  connection(const boost::asio::any_io_executor& ex, boost::asio::ssl::context* tls_context);

  boost::beast::tcp_stream& tcp() noexcept { return tls ? tls->next_layer() : *plain; }

  std::optional<boost::beast::tcp_stream> plain;
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls;
  boost::beast::flat_buffer buffer;                       // bytes read past a response
  boost::asio::execution_context* context = nullptr;      // whose reactor drives the socket
  std::chrono::steady_clock::time_point idle_since{};
  bool reused = false;                                    // served a request before
};

}  // namespace switchboard::agents::detail
