// The HTTP transport over TLS (http_options.hpp): custom CA files, peer and
// host-name verification, handshakes that never finish, stalls after them.
#include <switchboard/models/http_options.hpp>

#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <switchboard/models/openai_model.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <gtest/gtest.h>

#include <thread>

namespace switchboard::models {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using testing::loopback_model_server;
using testing::server_action;
using test::ask;
using test::ask_in_sequence;
using test::error_of;
using test::options_at;
using test::run;

openai_options options_for(const loopback_model_server& server) { return test::openai_for(server, "gpt-test"); }

// ---------------------------------------------------------------- TLS

TEST(HttpTransport, TlsWithACustomCaFileIsTrusted) {
  loopback_model_server server({.tls = true});
  server.set_default(server_action::reply("over tls"));
  openai_model model(options_for(server));  // ca_file = the server's certificate
  EXPECT_EQ(run(ask_in_sequence(model, 3)), "over tlsover tlsover tls");
  EXPECT_EQ(server.accepted_connections(), 1u);  // TLS connections are pooled too
}

TEST(HttpTransport, UntrustedCertificateFailsVerificationWithoutRetry) {
  loopback_model_server server({.tls = true});
  server.set_default(server_action::reply("must not arrive"));
  auto options = options_for(server);
  options.http.ca_file.clear();  // only the system store: the self-signed cert is unknown
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::tls_verification_failed);
  EXPECT_FALSE(error->retryable());
  EXPECT_EQ(server.request_count(), 0u);
  EXPECT_EQ(server.accepted_connections(), 1u);
}

TEST(HttpTransport, WrongHostNameOnTheCertificateFailsVerification) {
  loopback_model_server server({.tls = true, .certificate_names = {"wrong.example"}});
  server.set_default(server_action::reply("must not arrive"));
  openai_model model(options_for(server));
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::tls_verification_failed);
  EXPECT_NE(std::string(error->what()).find("mismatch"), std::string::npos) << error->what();
  EXPECT_EQ(server.request_count(), 0u);
}

TEST(HttpTransport, HostNameIsVerifiedForDnsNamesToo) {
  // "localhost" resolves to 127.0.0.1; the certificate only names "other.example".
  loopback_model_server server({.tls = true, .certificate_names = {"other.example"}});
  auto options = options_for(server);
  options.http.base_url = "https://localhost:" + std::to_string(server.port()) + "/v1";
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::tls_verification_failed);
}

TEST(HttpTransport, DnsNameMatchingTheCertificateIsAccepted) {
  loopback_model_server server({.tls = true, .certificate_names = {"localhost"}});
  server.set_default(server_action::reply("by name"));
  auto options = options_for(server);
  options.http.base_url = "https://localhost:" + std::to_string(server.port()) + "/v1";
  openai_model model(options);
  EXPECT_EQ(ask(model).text, "by name");
  EXPECT_EQ(server.requests().at(0).header("Host"), "localhost:" + std::to_string(server.port()));
}

TEST(HttpTransport, TlsServerThatNeverAnswersTheHandshakeIsAConnectTimeout) {
  // A listening socket nobody accepts on: the kernel completes the TCP
  // handshake, then the TLS handshake waits for an answer that never comes.
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  auto options = options_at("https://127.0.0.1:" + std::to_string(silent.local_endpoint().port()) + "/v1");
  options.http.connect_timeout = 150ms;
  options.http.retry.max_attempts = 2;
  options.http.retry.initial_backoff = 1ms;
  test::retry_log retries;
  options.http.retry.on_retry = retries.observer();
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::timeout);
  EXPECT_NE(std::string(error->what()).find("TLS handshake with 127.0.0.1:"), std::string::npos) << error->what();
  EXPECT_NE(std::string(error->what()).find("timed out"), std::string::npos) << error->what();
  ASSERT_EQ(retries.events.size(), 1u);  // a connect timeout is retried like any timeout
  EXPECT_EQ(retries.events[0].reason, "timeout");
}

TEST(HttpTransport, TlsStallPastTheDeadlineIsATimeoutAndTheConnectionIsNotReused) {
  loopback_model_server server({.tls = true});
  server.enqueue(server_action::stall());
  server.set_default(server_action::reply("after the timeout"));
  auto options = options_for(server);
  options.http.request_timeout = 150ms;
  options.http.retry.max_attempts = 1;
  openai_model model(options);
  const auto error = error_of([&] { ask(model); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::timeout);
  EXPECT_NE(std::string(error->what()).find("150 ms"), std::string::npos) << error->what();
  // The timed-out connection was closed: the next request opens a new one.
  EXPECT_EQ(run(ask_in_sequence(model, 2)), "after the timeoutafter the timeout");
  EXPECT_EQ(server.accepted_connections(), 2u);
}

}  // namespace
}  // namespace switchboard::models
