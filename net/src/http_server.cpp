// The HTTP/1.1 server (http_server.hpp): listening, accepting, stopping,
// and the request and response helpers of its interface. Each accepted
// connection is served by its own coroutine (http_connection.cpp).
#include "http_server_impl.hpp"

#include <switchboard/net/error.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/url/parse_query.hpp>
#include <spdlog/spdlog.h>

namespace switchboard::net {

std::optional<std::string_view> server_request::header(std::string_view lowercase_name) const {
  for (const auto& [name, value] : headers)
    if (name == lowercase_name) return std::string_view(value);
  return std::nullopt;
}

std::optional<std::string> server_request::query_parameter(std::string_view name) const {
  if (query.empty()) return std::nullopt;
  const auto parsed = boost::urls::parse_query(query);
  if (!parsed) return std::nullopt;
  // parse_query's params are the encoded ones: decode key and value.
  for (const auto& param : *parsed)
    if (param.key.decode() == name) return param.has_value ? param.value.decode() : std::string{};
  return std::nullopt;
}

server_response error_response(int status, std::string_view detail) {
  server_response r;
  r.status = status;
  r.body = "{\"detail\":" + boost::json::serialize(boost::json::string(detail)) + "}";
  return r;
}


void http_server::impl::load_tls() {
  if (options.tls_certificate_file.empty() && options.tls_private_key_file.empty()) return;
  if (options.tls_certificate_file.empty() || options.tls_private_key_file.empty())
    throw net_error(net_errc::invalid_options, "TLS needs both a certificate file and a private key file");
  tls.emplace(asio::ssl::context::tls_server);
  tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  tls->use_certificate_chain_file(options.tls_certificate_file, ec);
  if (ec)
    throw net_error(net_errc::invalid_options,
                    "cannot load TLS certificate '" + options.tls_certificate_file + "': " + ec.message());
  tls->use_private_key_file(options.tls_private_key_file, asio::ssl::context::pem, ec);
  if (ec)
    throw net_error(net_errc::invalid_options,
                    "cannot load TLS private key '" + options.tls_private_key_file + "': " + ec.message());
}

void http_server::impl::listen() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(options.address, ec);
  if (ec) throw net_error(net_errc::invalid_options, "'" + options.address + "' is not an IP address to listen on");
  const tcp::endpoint endpoint{address, options.port};
  const auto where = options.address + ":" + std::to_string(options.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw net_error(net_errc::invalid_options, "cannot listen on " + where + ": " + ec.message());
  port = acceptor.local_endpoint().port();
}

asio::awaitable<void> http_server::impl::accept_loop() {
  auto self = shared_from_this();
  while (!stopped) {
    auto [ec, socket] = co_await acceptor.async_accept(detail::connection_strand(executor), use_tuple);
    if (ec) {
      if (stopped || ec == asio::error::operation_aborted) co_return;
      // Out of descriptors or memory: wait a little rather than spin.
      spdlog::warn("http server: accept failed: {}", ec.message());
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    const auto number = ++accepted;
    if (connections >= options.max_connections) {
      detail::refuse_accepted(std::move(socket));
      continue;
    }
    ++connections;
    detail::serve_accepted(self, std::move(socket), number);
  }
}

http_server::http_server(asio::any_io_executor executor, server_options options, request_handler handler)
    : impl_(std::make_shared<impl>(std::move(executor), std::move(options), std::move(handler))) {
  impl_->load_tls();
  impl_->listen();
}

http_server::~http_server() { stop(); }

std::uint16_t http_server::port() const noexcept { return impl_->port; }
const server_options& http_server::options() const noexcept { return impl_->options; }
std::size_t http_server::open_connections() const noexcept { return impl_->connections; }
std::size_t http_server::open_streams() const noexcept { return impl_->streams; }
std::uint64_t http_server::accepted_connections() const noexcept { return impl_->accepted; }

void http_server::start() { asio::co_spawn(impl_->acceptor_strand, impl_->accept_loop(), asio::detached); }

void http_server::stop() {
  if (impl_->stopped.exchange(true)) return;
  asio::post(impl_->acceptor_strand, [self = impl_] {
    boost::system::error_code ignored;
    self->acceptor.close(ignored);
  });
  impl_->close_all();
}

}  // namespace switchboard::net
