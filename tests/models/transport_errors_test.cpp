// What the model clients say when a server answers with something other than
// the provider's JSON, each case against a loopback server that does it:
// proxy pages, echoes of the request (the key must never be printed),
// compressed or streamed bodies, byte order marks and invalid UTF-8, errors
// inside a 200, redirects, a base URL missing /v1, and http/https mix-ups.
#include <switchboard/models/model_error.hpp>

#include "canned_server_support.hpp"
#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <switchboard/models/anthropic_model.hpp>
#include <switchboard/models/openai_model.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <gtest/gtest.h>

#include <string>

namespace switchboard::models {
namespace {

using namespace std::chrono_literals;
using testing::loopback_model_server;
using testing::server_action;
using test::canned_server;
using test::error_of;
using test::http_response_bytes;
using test::run;

const std::string key = test::secret_key;

openai_options openai_at(std::string base_url) {
  openai_options options;
  options.http.base_url = std::move(base_url);
  options.http.retry.initial_backoff = 1ms;
  options.http.retry.max_backoff = 5ms;
  options.http.retry.jitter = 0;
  options.api_key = key;
  options.model = "m";
  return options;
}

anthropic_options anthropic_for(const loopback_model_server& server) {
  anthropic_options options;
  options.http = test::fast_http(server, "");
  options.api_key = key;
  options.model = "claude-test";
  return options;
}

std::optional<model_error> error_asking(openai_model& model) {
  return error_of([&] { run(model.complete(test::user_request("hello"))); });
}

std::optional<model_error> error_asking(anthropic_model& model) {
  return error_of([&] { run(model.complete(test::user_request("hello", ""))); });
}

bool mentions(const model_error& error, std::string_view text) {
  return std::string(error.what()).find(text) != std::string::npos;
}

std::string completion_with(const std::string& model_name, const std::string& content) {
  return R"({"id":"x","model":")" + model_name + R"(","choices":[{"index":0,"message":{"role":"assistant",)"
         R"("content":")" + content + R"("},"finish_reason":"stop"}]})";
}

// ---------------------------------------------------------------- secrets

TEST(TransportErrors, ProxyPageEchoingTheRequestNeverPrintsTheKey) {
  test::captured_log log;
  canned_server server(http_response_bytes(
      "200 OK", "Content-Type: text/html; charset=utf-8\r\n",
      "<html><head><title>Proxy\n  check</title></head><body><pre>Authorization: Bearer " + key +
          "\nX-Api-Key: " + key + "</pre></body></html>"));
  auto options = openai_at(server.url("http"));
  options.http.retry.max_attempts = 3;
  openai_model model(options);
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::invalid_response);
  EXPECT_TRUE(mentions(*error, "answered HTTP 200 with an HTML page titled 'Proxy check' (Content-Type text/html; "
                               "charset=utf-8), not the provider's JSON"))
      << error->what();
  EXPECT_TRUE(mentions(*error, "Authorization: [redacted]")) << error->what();
  EXPECT_FALSE(mentions(*error, key)) << error->what();
  EXPECT_FALSE(mentions(*error, "sk-test-SECRET")) << error->what();
  EXPECT_FALSE(error->retryable());
  EXPECT_EQ(server.connections(), 1u);  // a page cannot turn into an answer: not retried
  EXPECT_EQ(log.text().find("sk-test-SECRET"), std::string::npos) << log.text();
}

TEST(TransportErrors, JsonEchoOfTheRequestIsRefusedWithoutPrintingTheKey) {
  loopback_model_server server;
  // Key names the patterns do not know: only the request's own secret list finds it.
  server.enqueue(server_action::raw_body(200, R"({"seen":{"h1":")" + key + R"("},"note":"echo"})"));
  openai_model model(test::openai_for(server, "m"));
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::invalid_response);
  EXPECT_TRUE(mentions(*error, "holding the request's API key")) << error->what();
  EXPECT_FALSE(mentions(*error, "sk-test-SECRET")) << error->what();

  server.enqueue(server_action::raw_body(200, R"({"received":{"k":")" + key + R"("}})"));
  anthropic_model claude(anthropic_for(server));
  const auto anthropic_error = error_asking(claude);
  ASSERT_TRUE(anthropic_error);
  EXPECT_TRUE(mentions(*anthropic_error, "holding the request's API key")) << anthropic_error->what();
  EXPECT_FALSE(mentions(*anthropic_error, "sk-test-SECRET")) << anthropic_error->what();
}

TEST(TransportErrors, RedirectTargetsAndErrorBodiesAreRedactedWhateverTheStatus) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(302, "").with_header(
      "Location", "https://user:" + key + "@login.example/sso?api_key=" + key));
  server.enqueue(server_action::raw_body(418, "teapot refuses key=" + key + " and " + key));
  auto options = test::openai_for(server, "m");
  options.http.retry.max_attempts = 1;
  openai_model model(options);
  for (const int status : {302, 418}) {
    const auto error = error_asking(model);
    ASSERT_TRUE(error) << status;
    EXPECT_EQ(error->http_status(), status);
    EXPECT_FALSE(mentions(*error, "sk-test-SECRET")) << error->what();
    EXPECT_EQ(error->provider_message().find("sk-test-SECRET"), std::string::npos) << error->provider_message();
  }
}

TEST(TransportErrors, ControlCharactersFromTheServerAreEscaped) {
  canned_server server(http_response_bytes("200 OK", "Content-Type: text/plain\r\n",
                                           "\x1b]0;pwned\x07\x1b[2Jupstream says no\r\n"));
  openai_model model(openai_at(server.url("http")));
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  const std::string what = error->what();
  EXPECT_EQ(what.find('\x1b'), std::string::npos) << what;
  EXPECT_EQ(what.find('\x07'), std::string::npos) << what;
  EXPECT_NE(what.find("\\x1b]0;pwned\\x07\\x1b[2Jupstream says no\\r\\n"), std::string::npos) << what;

  loopback_model_server errors;
  errors.enqueue(server_action::error(400, "bad \x1b[31mrequest"));
  openai_model to_errors(test::openai_for(errors, "m"));
  const auto status_error = error_asking(to_errors);
  ASSERT_TRUE(status_error);
  EXPECT_TRUE(mentions(*status_error, "returned HTTP 400: bad \\x1b[31mrequest")) << status_error->what();
  EXPECT_EQ(status_error->provider_message(), "bad \x1b[31mrequest");  // data: exact, for whoever shows it
}

TEST(TransportErrors, CredentialsInTheBaseUrlAreRefusedAndNotPrinted) {
  const std::string with_password = "http://alice:hunter2pass@127.0.0.1:9/v1";
  const std::string with_key = "https://" + key + "@api.example/v1";
  for (const std::string& url : {with_password, with_key}) {
    const auto error = error_of([&] { openai_model model(openai_at(url)); });
    ASSERT_TRUE(error) << url;
    EXPECT_EQ(error->errc(), model_errc::not_configured);
    EXPECT_TRUE(mentions(*error, "carries credentials")) << error->what();
    EXPECT_TRUE(mentions(*error, "API key option")) << error->what();
    EXPECT_FALSE(mentions(*error, "hunter2")) << error->what();
    EXPECT_FALSE(mentions(*error, "alice")) << error->what();
    EXPECT_FALSE(mentions(*error, "sk-test-SECRET")) << error->what();
  }
}

// ---------------------------------------------------------------- bodies

TEST(TransportErrors, InvalidUtf8AnywhereInTheBodyIsReplacedNotRejected) {
  const std::string fffd = "\xEF\xBF\xBD";
  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, completion_with("gpt-\xff\xfe", "caf\xe9 ok")));
  openai_model model(test::openai_for(server, "m"));
  const auto result = run(model.complete(test::user_request("q")));
  EXPECT_EQ(result.model, "gpt-" + fffd + fffd);
  EXPECT_EQ(result.text, "caf" + fffd + " ok");

  server.enqueue(server_action::raw_body(
      200, R"({"type":"message","model":"claude-)" "\xc3\x28" R"(","content":[{"type":"text","text":"fine"}],)"
           R"("stop_reason":"end_turn"})"));
  anthropic_model claude(anthropic_for(server));
  const auto anthropic_result = run(claude.complete(test::user_request("q", "")));
  EXPECT_EQ(anthropic_result.text, "fine");
  EXPECT_EQ(anthropic_result.model, "claude-" + fffd + "(");
}

TEST(TransportErrors, ByteOrderMarkBeforeTheJsonIsSkipped) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, "\xEF\xBB\xBF" + completion_with("m", "after the mark")));
  openai_model model(test::openai_for(server, "m"));
  EXPECT_EQ(run(model.complete(test::user_request("q"))).text, "after the mark");

  server.enqueue(server_action::raw_body(
      200, "\xEF\xBB\xBF" R"({"type":"message","content":[{"type":"text","text":"marked"}]})"));
  anthropic_model claude(anthropic_for(server));
  EXPECT_EQ(run(claude.complete(test::user_request("q", ""))).text, "marked");
}

TEST(TransportErrors, CompressedBodyThatWasNotAskedForIsNamed) {
  const std::string gzip_bytes("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\x56\x4a\xce", 14);
  canned_server server(http_response_bytes(
      "200 OK", "Content-Type: application/json\r\nContent-Encoding: gzip\r\n", gzip_bytes));
  auto options = openai_at(server.url("http"));
  options.http.retry.max_attempts = 3;
  openai_model model(options);
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::invalid_response);
  EXPECT_TRUE(mentions(*error, "answered with a gzip-compressed body (Content-Encoding: gzip) though none was "
                               "requested"))
      << error->what();
  EXPECT_FALSE(error->retryable());
  EXPECT_EQ(server.connections(), 1u);
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].header("accept-encoding"), "identity");

  canned_server failing(http_response_bytes("500 Internal Server Error", "Content-Encoding: br\r\n", "\x0b\x02\x80"));
  auto failing_options = openai_at(failing.url("http"));
  failing_options.http.retry.max_attempts = 1;
  openai_model failing_model(failing_options);
  const auto status_error = error_asking(failing_model);
  ASSERT_TRUE(status_error);
  EXPECT_EQ(status_error->provider_message(), "(a br-compressed body, not shown)");
}

TEST(TransportErrors, StreamedAnswerIsNamed) {
  canned_server server(http_response_bytes(
      "200 OK", "Content-Type: text/event-stream\r\n",
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n"));
  openai_model model(openai_at(server.url("http")));
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::invalid_response);
  EXPECT_TRUE(mentions(*error, "answered with a stream (SSE, Content-Type text/event-stream) though the request "
                               "did not ask for one"))
      << error->what();
  EXPECT_EQ(server.connections(), 1u);
}

TEST(TransportErrors, HtmlPageIsNamedEvenUnderAJsonContentType) {
  loopback_model_server server;  // always says Content-Type: application/json
  server.enqueue(server_action::raw_body(
      200, "<!DOCTYPE html><html><head><title>Sign in - Corporate Proxy</title></head><body>...</body></html>"));
  openai_model model(test::openai_for(server, "m"));
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_TRUE(mentions(*error, "with an HTML page titled 'Sign in - Corporate Proxy' (Content-Type "
                               "application/json), not the provider's JSON"))
      << error->what();
}

TEST(TransportErrors, PlainTextAndEmptyBodiesAreNamed) {
  canned_server text(http_response_bytes("200 OK", "Content-Type: text/plain\r\n", "upstream connect error"));
  openai_model to_text(openai_at(text.url("http")));
  const auto text_error = error_asking(to_text);
  ASSERT_TRUE(text_error);
  EXPECT_TRUE(mentions(*text_error, "answered HTTP 200 with a body that is not JSON (Content-Type text/plain), not "
                                    "the provider's JSON: body starts 'upstream connect error'"))
      << text_error->what();

  loopback_model_server server;
  server.enqueue(server_action::raw_body(200, ""));
  openai_model to_empty(test::openai_for(server, "m"));
  const auto empty_error = error_asking(to_empty);
  ASSERT_TRUE(empty_error);
  EXPECT_TRUE(mentions(*empty_error, "answered HTTP 200 with an empty body")) << empty_error->what();
}

TEST(TransportErrors, ErrorObjectInA200SurfacesTheProvidersMessage) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(
      200, R"({"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}})"));
  openai_model model(test::openai_for(server, "m"));
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::http_status);
  EXPECT_EQ(error->http_status(), 200);
  EXPECT_EQ(error->provider_message(), "You exceeded your current quota");
  EXPECT_TRUE(mentions(*error, "answered HTTP 200 with an error instead of an answer: You exceeded your current "
                               "quota"))
      << error->what();
  EXPECT_FALSE(error->retryable());
  EXPECT_EQ(server.request_count(), 1u);
}

TEST(TransportErrors, TransientErrorObjectInA200IsRetried) {
  loopback_model_server server;
  server.enqueue(server_action::raw_body(
      200, R"({"error":{"message":"Rate limit reached","type":"requests","code":429}})"));
  server.enqueue(server_action::reply("after the limit"));
  test::retry_log retries;
  auto options = test::openai_for(server, "m");
  options.http.retry.on_retry = retries.observer();
  openai_model model(options);
  EXPECT_EQ(run(model.complete(test::user_request("q"))).text, "after the limit");
  ASSERT_EQ(retries.events.size(), 1u);
  EXPECT_EQ(retries.events[0].http_status, 429);

  server.enqueue(server_action::raw_body(
      200, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
  auto anthropic = anthropic_for(server);
  anthropic.http.retry.max_attempts = 1;
  anthropic_model claude(anthropic);
  const auto error = error_asking(claude);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::http_status);
  EXPECT_EQ(error->provider_message(), "Overloaded");
  EXPECT_TRUE(error->retryable());
}

// ---------------------------------------------------------------- addresses

TEST(TransportErrors, RedirectNamesTheNewAddressAndIsNotFollowed) {
  for (const int status : {301, 302, 307, 308}) {
    loopback_model_server server;
    server.enqueue(server_action::raw_body(status, "").with_header(
        "Location", "https://api.example.test/v1/chat/completions"));
    openai_model model(test::openai_for(server, "m"));
    const auto error = error_asking(model);
    ASSERT_TRUE(error) << status;
    EXPECT_EQ(error->errc(), model_errc::http_status);
    EXPECT_EQ(error->http_status(), status);
    EXPECT_TRUE(mentions(*error, "was redirected to https://api.example.test/v1/chat/completions (HTTP " +
                                     std::to_string(status) + ")"))
        << error->what();
    EXPECT_TRUE(mentions(*error, "set the base URL to https://api.example.test/v1")) << error->what();
    EXPECT_FALSE(error->retryable());
    EXPECT_EQ(server.request_count(), 1u);
  }
  loopback_model_server server;
  server.enqueue(server_action::raw_body(308, "").with_header("Location", "/api/v1/chat/completions"));
  openai_model model(test::openai_for(server, "m"));
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_TRUE(mentions(*error, "set the base URL to http://127.0.0.1:" + std::to_string(server.port()) + "/api/v1"))
      << error->what();
}

TEST(TransportErrors, NotFoundOnABaseUrlWithoutAVersionHintsAtV1) {
  loopback_model_server server;
  server.set_default(server_action::error(404, "404 page not found"));
  auto options = test::openai_for(server, "m");
  options.http = test::fast_http(server, "");
  openai_model without_version(options);
  const auto error = error_asking(without_version);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->http_status(), 404);
  EXPECT_TRUE(mentions(*error, "returned HTTP 404: 404 page not found; the base URL may be missing /v1 (try http://"
                               "127.0.0.1:" + std::to_string(server.port()) + "/v1)"))
      << error->what();

  openai_model with_version(test::openai_for(server, "m"));
  const auto versioned_error = error_asking(with_version);
  ASSERT_TRUE(versioned_error);
  EXPECT_FALSE(mentions(*versioned_error, "missing /v1")) << versioned_error->what();

  auto anthropic = anthropic_for(server);
  anthropic.http = test::fast_http(server, "/v1");  // Anthropic's path is /v1/messages already
  anthropic_model claude(anthropic);
  const auto doubled = error_asking(claude);
  ASSERT_TRUE(doubled);
  EXPECT_TRUE(mentions(*doubled, "/v1/v1/messages returned HTTP 404: 404 page not found; the base URL may end in /v1 "
                                 "once too often"))
      << doubled->what();
}

TEST(TransportErrors, HttpsUrlToAPlainHttpServerSaysUseHttp) {
  // What a plain HTTP server (nginx, Go, Python, Node, the network layer's
  // own) answers to a TLS ClientHello: 400 Bad Request.
  canned_server server("", /*answers_not_http=*/true);
  auto options = openai_at(server.url("https"));
  options.http.retry.max_attempts = 3;
  openai_model model(options);
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::connect_failed);
  EXPECT_TRUE(mentions(*error, "the server answered in plain HTTP ('HTTP/1.1 400 Bad Request'): it speaks plain "
                               "HTTP on this port, use http:// in the base URL"))
      << error->what();
  EXPECT_FALSE(error->retryable());
  EXPECT_EQ(server.connections(), 1u);
}

TEST(TransportErrors, HttpsUrlToAServerThatHangsUpOrWaitsSuggestsHttp) {
  canned_server hangs_up("");  // closes the connection on a ClientHello, unanswered
  auto options = openai_at(hangs_up.url("https"));
  options.http.retry.max_attempts = 1;
  openai_model model(options);
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::connect_failed);
  EXPECT_TRUE(mentions(*error, "stream truncated (if the server serves plain HTTP, use http:// in the base URL)"))
      << error->what();
  EXPECT_TRUE(error->retryable());  // a connection cut short may be a passing fault

  loopback_model_server resets;  // Beast closes with the ClientHello unread: a reset
  options.http.base_url = "https://127.0.0.1:" + std::to_string(resets.port()) + "/v1";
  openai_model to_resetting(options);
  const auto reset = error_asking(to_resetting);
  ASSERT_TRUE(reset);
  EXPECT_TRUE(mentions(*reset, "(if the server serves plain HTTP, use http:// in the base URL)")) << reset->what();

  // A server waiting for the end of a request line that a ClientHello never
  // brings: a listening socket nobody answers on behaves the same.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor waits(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  options.http.base_url = "https://127.0.0.1:" + std::to_string(waits.local_endpoint().port()) + "/v1";
  options.http.connect_timeout = 200ms;
  openai_model to_waiting(options);
  const auto timeout = error_asking(to_waiting);
  ASSERT_TRUE(timeout);
  EXPECT_EQ(timeout->errc(), model_errc::timeout);
  EXPECT_TRUE(mentions(*timeout, "timed out (if the server serves plain HTTP, use http:// in the base URL)"))
      << timeout->what();
}

TEST(TransportErrors, HttpUrlToATlsServerSaysUseHttps) {
  loopback_model_server server({.tls = true});  // OpenSSL: closes a plain-HTTP connection without a word
  auto options = test::openai_for(server, "m");
  options.http.base_url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1";
  test::retry_log retries;
  options.http.retry.on_retry = retries.observer();
  openai_model model(options);
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::connect_failed);
  EXPECT_TRUE(mentions(*error, "it speaks HTTPS on this port, use https:// in the base URL")) << error->what();
  EXPECT_FALSE(error->retryable());
  EXPECT_TRUE(retries.events.empty());
  EXPECT_EQ(server.request_count(), 0u);
}

TEST(TransportErrors, HttpUrlToATlsPortAnsweringWithAnAlertSaysUseHttps) {
  canned_server server(std::string("\x15\x03\x03\x00\x02\x02\x46", 7));  // a TLS alert record
  auto options = openai_at(server.url("http"));
  options.http.retry.max_attempts = 3;
  openai_model model(options);
  const auto error = error_asking(model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->errc(), model_errc::connect_failed);
  EXPECT_TRUE(mentions(*error, "the server answered the plain-HTTP request in TLS: it speaks HTTPS on this port, "
                               "use https:// in the base URL"))
      << error->what();
  EXPECT_FALSE(error->retryable());
  EXPECT_EQ(server.connections(), 1u);
}

TEST(TransportErrors, PlainHttpRejectionPagesOfTlsPortsSayUseHttps) {
  const std::string nginx_page =
      "<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n<body>\r\n"
      "<center><h1>400 Bad Request</h1></center>\r\n</body>\r\n</html>\r\n";
  const std::string go_text = "Client sent an HTTP request to an HTTPS server.\n";
  for (const auto& [type, body] : {std::pair{"text/html", nginx_page}, std::pair{"text/plain", go_text}}) {
    canned_server server(
        http_response_bytes("400 Bad Request", "Content-Type: " + std::string(type) + "\r\n", body));
    openai_model model(openai_at(server.url("http")));
    const auto error = error_asking(model);
    ASSERT_TRUE(error) << type;
    EXPECT_EQ(error->http_status(), 400);
    EXPECT_TRUE(mentions(*error, "; the server expects HTTPS on this port: use https:// in the base URL"))
        << error->what();
    EXPECT_FALSE(error->retryable());
  }
}

}  // namespace
}  // namespace switchboard::models
