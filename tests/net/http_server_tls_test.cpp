// The HTTP server with TLS, and the errors of its constructor. The fixture
// and helpers: http_server_fixture.hpp.
#include "http_server_fixture.hpp"

namespace switchboard::net {
namespace {
using namespace server_testing;

server_options tls_options(std::string certificate, std::string key) {
  server_options options;
  options.tls_certificate_file = std::move(certificate);
  options.tls_private_key_file = std::move(key);
  return options;
}
class tls_files {
 public:
  tls_files() {
    const auto pem = testing::detail::make_self_signed_certificate({"127.0.0.1", "localhost"});
    certificate = dir.write("certificate.pem", pem.certificate_pem).string();
    key = dir.write("key.pem", pem.private_key_pem).string();
  }
  server_options options() const { return tls_options(certificate, key); }

  testing::temp_dir dir{"switchboard-http-server-test"};
  std::string certificate;
  std::string key;
};

TEST_F(HttpServer, ServesHttpsToAClientThatTrustsTheCertificate) {
  tls_files files;
  recorder seen;
  running_server server(files.options(),
                        recording_handler(seen));

  http_options options;
  options.base_url = "https://127.0.0.1:" + std::to_string(server.port()) + "/v1";
  options.ca_file = files.certificate;
  options.retry.max_attempts = 1;
  http_client client(options, "http-server-test");
  asio::io_context io;
  auto result = asio::co_spawn(io, client.post_json("/secure%20path", R"({"q":1})", {}), asio::use_future);
  io.run();
  const http_response answer = result.get();

  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, R"({"path":"/v1/secure path"})");
  ASSERT_EQ(seen.count(), 1u);
  EXPECT_EQ(seen.requests()[0].method, "POST");
  EXPECT_EQ(seen.requests()[0].body, R"({"q":1})");
  EXPECT_EQ(seen.requests()[0].remote_address, "127.0.0.1");
}

TEST_F(HttpServer, PlainHttpToTheTlsPortNeverReachesTheHandler) {
  tls_files files;
  recorder seen;
  running_server server(files.options(),
                        recording_handler(seen));

  auto socket = connect(server.port());
  send(socket, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_THAT(read_until_closed(socket), Not(HasSubstr("HTTP/1.1")));
  EXPECT_EQ(seen.count(), 0u);
  wait_until([&] { return server->open_connections() == 0; });
}

TEST_F(HttpServer, AStalledHttpsRequestGets408Too) {
  tls_files files;
  recorder seen;
  server_options options = files.options();
  options.request_timeout = 200ms;
  running_server server(options, recording_handler(seen));

  asio::ssl::context context(asio::ssl::context::tls_client);
  context.load_verify_file(files.certificate);
  asio::ssl::stream<tcp::socket> tls(connect(server.port()), context);
  tls.set_verify_mode(asio::ssl::verify_peer);
  tls.set_verify_callback(asio::ssl::host_name_verification("127.0.0.1"));
  tls.handshake(asio::ssl::stream_base::client);
  asio::write(tls, asio::buffer(std::string_view("GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n")));

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  http::read(tls, buffer, parser);
  EXPECT_EQ(parser.get().result_int(), 408);
  EXPECT_THAT(parser.get().body(), HasSubstr("detail"));
  EXPECT_EQ(buffer.size(), 0u);
  std::array<char, 16> more{};
  boost::system::error_code ec;
  EXPECT_EQ(tls.read_some(asio::buffer(more), ec), 0u);
  EXPECT_TRUE(ec);  // closed (without a TLS close_notify: stream truncated)
  EXPECT_EQ(seen.count(), 0u);
}

TEST_F(HttpServer, AClientThatNeverStartsItsHandshakeIsClosedAtTheRequestTimeoutAndItsSlotFreed) {
  tls_files files;
  recorder seen;
  server_options options = files.options();
  options.request_timeout = 200ms;
  running_server server(options, recording_handler(seen));

  auto socket = connect(server.port());
  wait_until([&] { return server->open_connections() == 1; });
  EXPECT_EQ(read_until_closed(socket), "");  // closed without a byte: no TLS, so no HTTP answer either
  wait_until([&] { return server->open_connections() == 0; });
  EXPECT_EQ(seen.count(), 0u);
}

// --- construction errors -----------------------------------------------------------------

net_error construction_error(server_options options) {
  asio::io_context io;
  try {
    http_server server(io.get_executor(), std::move(options),
                       [](server_request&) -> asio::awaitable<server_response> { co_return server_response{}; });
  } catch (const net_error& e) {
    return e;
  }
  throw std::logic_error("the server was constructed");
}

TEST_F(HttpServer, TlsFilesThatCannotBeLoadedAreNamed) {
  tls_files files;
  const std::string missing = (files.dir.path() / "no-such-certificate.pem").string();
  const net_error no_certificate = construction_error(tls_options(missing, files.key));
  EXPECT_EQ(no_certificate.errc(), net_errc::invalid_options);
  EXPECT_THAT(no_certificate.what(), HasSubstr(missing));

  const std::string no_key_file = (files.dir.path() / "no-such-key.pem").string();
  const net_error no_key = construction_error(tls_options(files.certificate, no_key_file));
  EXPECT_EQ(no_key.errc(), net_errc::invalid_options);
  EXPECT_THAT(no_key.what(), HasSubstr(no_key_file));

  // A key file that is not PEM.
  const std::string not_a_key = files.dir.write("not-a-key.pem", "not PEM at all\n").string();
  const net_error bad_key = construction_error(tls_options(files.certificate, not_a_key));
  EXPECT_EQ(bad_key.errc(), net_errc::invalid_options);
  EXPECT_THAT(bad_key.what(), HasSubstr(not_a_key));

  EXPECT_EQ(construction_error(tls_options(files.certificate, "")).errc(), net_errc::invalid_options);
}

TEST_F(HttpServer, AnAddressThatCannotBeListenedOnIsNamed) {
  const net_error not_an_address = construction_error(options_with([](server_options& o) { o.address = "localhost-ish"; }));
  EXPECT_EQ(not_an_address.errc(), net_errc::invalid_options);
  EXPECT_THAT(not_an_address.what(), HasSubstr("localhost-ish"));

  const net_error not_ours = construction_error(options_with([](server_options& o) { o.address = "192.0.2.1"; }));  // TEST-NET-1
  EXPECT_EQ(not_ours.errc(), net_errc::invalid_options);
  EXPECT_THAT(not_ours.what(), HasSubstr("192.0.2.1"));

  asio::io_context io;
  http_server taken(io.get_executor(), {},
                    [](server_request&) -> asio::awaitable<server_response> { co_return server_response{}; });
  const net_error in_use = construction_error(options_with([&](server_options& o) { o.port = taken.port(); }));
  EXPECT_EQ(in_use.errc(), net_errc::invalid_options);
  EXPECT_THAT(in_use.what(), HasSubstr("127.0.0.1:" + std::to_string(taken.port())));
}

}  // namespace
}  // namespace switchboard::net
