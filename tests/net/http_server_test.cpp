// The HTTP server (http_server.hpp) over real sockets on 127.0.0.1, port 0:
// what a handler sees of a request and what a client sees of the answer,
// keep-alive, the limits a client cannot exceed (head, body, slow or idle
// clients, connections), a handler that throws, streamed responses and a
// client that stops reading one, stop(), TLS, and the errors of the
// constructor. The clients are plain blocking Beast sockets, so that they can
// misbehave byte by byte; the project's http_client where a client that
// trusts the certificate is needed.
//
// No test asserts how fast anything happened: the timeouts are set small so
// that the tests run fast, and a hang guard ends a test that waits forever.
#include <switchboard/net/http_server.hpp>

#include <switchboard/net/error.hpp>
#include <switchboard/net/http_client.hpp>
#include <switchboard/net/http_options.hpp>
#include <switchboard/testing/hang_guard.hpp>
#include <switchboard/testing/temp_dir.hpp>

#include "self_signed_certificate.hpp"  // tests/support/src

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace switchboard::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

using response = http::response<http::string_body>;

// An http_server on an io_context of its own, run by two threads (the
// server's connections run in parallel on strands). Declare it after
// everything its handler uses: it stops before those go away.
class running_server {
 public:
  running_server(server_options options, request_handler handler) {
    server_.emplace(io_.get_executor(), std::move(options), std::move(handler));
    server_->start();
    for (auto& thread : threads_) thread = std::thread([this] { io_.run(); });
  }
  ~running_server() {
    server_->stop();
    io_.stop();
    for (auto& thread : threads_) thread.join();
    server_.reset();
  }
  running_server(const running_server&) = delete;
  running_server& operator=(const running_server&) = delete;

  http_server* operator->() { return &*server_; }
  std::uint16_t port() const { return server_->port(); }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::optional<http_server> server_;
  std::array<std::thread, 2> threads_;
};

// What the handler saw, from the server's threads.
class recorder {
 public:
  void add(const server_request& request) {
    std::scoped_lock lock(mutex_);
    requests_.push_back(request);
  }
  std::vector<server_request> requests() const {
    std::scoped_lock lock(mutex_);
    return requests_;
  }
  std::size_t count() const {
    std::scoped_lock lock(mutex_);
    return requests_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<server_request> requests_;
};

// Options and responses are built field by field: designated initializers
// that skip members warn under -Wextra (-Wmissing-field-initializers).
template <class Edit>
server_options options_with(Edit edit) {
  server_options options;
  edit(options);
  return options;
}

server_response answer_with(int status, std::string body,
                            std::vector<std::pair<std::string, std::string>> headers = {}, bool close = false) {
  server_response answer;
  answer.status = status;
  answer.body = std::move(body);
  answer.headers = std::move(headers);
  answer.close = close;
  return answer;
}

// Records the request and answers 200 with {"path": <decoded path>}.
request_handler recording_handler(recorder& seen) {
  return [&seen](server_request& request) -> asio::awaitable<server_response> {
    seen.add(request);
    co_return answer_with(200, boost::json::serialize(boost::json::object{{"path", request.path}}));
  };
}

std::string detail_of(const response& answer) {
  const boost::json::value body = boost::json::parse(answer.body());
  return std::string(body.at("detail").as_string());
}

// Waits (without a bound: the hang guard is the bound) until `done` holds.
template <class Predicate>
void wait_until(Predicate done) {
  while (!done()) std::this_thread::sleep_for(2ms);
}

class HttpServer : public ::testing::Test {
 protected:
  HttpServer()
      : guard_(std::string("HttpServer.") + ::testing::UnitTest::GetInstance()->current_test_info()->name(),
               std::chrono::seconds(60)) {}

  tcp::socket connect(std::uint16_t port) {
    tcp::socket socket(client_io_);
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    return socket;
  }

  static void send(tcp::socket& socket, std::string_view bytes) { asio::write(socket, asio::buffer(bytes)); }

  static http::request<http::string_body> make_request(http::verb verb, std::string_view target,
                                                       std::string body = {}) {
    http::request<http::string_body> request{verb, target, 11};
    request.set(http::field::host, "127.0.0.1");
    request.body() = std::move(body);
    request.prepare_payload();
    return request;
  }

  static response read_response(tcp::socket& socket, beast::flat_buffer& buffer) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(16 * 1024 * 1024);
    http::read(socket, buffer, parser);
    return parser.release();
  }

  static response exchange(tcp::socket& socket, beast::flat_buffer& buffer,
                           const http::request<http::string_body>& request) {
    http::write(socket, request);
    return read_response(socket, buffer);
  }

  // One GET on a connection of its own.
  response get(std::uint16_t port, std::string_view target) {
    auto socket = connect(port);
    beast::flat_buffer buffer;
    return exchange(socket, buffer, make_request(http::verb::get, target));
  }

  // The server closed the connection: nothing more to read, then EOF (or a
  // reset, when the server closed with bytes of ours unread).
  static ::testing::AssertionResult closed_by_server(tcp::socket& socket, beast::flat_buffer& buffer) {
    if (buffer.size() > 0)
      return ::testing::AssertionFailure() << buffer.size() << " more bytes were sent before the close";
    std::array<char, 256> bytes{};
    boost::system::error_code ec;
    const std::size_t n = socket.read_some(asio::buffer(bytes), ec);
    if (ec == asio::error::eof || ec == asio::error::connection_reset) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "the connection is open: read " << n << " bytes ("
                                         << std::string_view(bytes.data(), n) << "), " << ec.message();
  }

  // Everything the server sends until it closes.
  static std::string read_until_closed(tcp::socket& socket) {
    std::string out;
    std::array<char, 4096> bytes{};
    boost::system::error_code ec;
    while (!ec) out.append(bytes.data(), socket.read_some(asio::buffer(bytes), ec));
    return out;
  }

  testing::hang_guard guard_;
  asio::io_context client_io_;
};

// --- requests and responses -------------------------------------------------

TEST_F(HttpServer, AGetReachesTheHandlerWithItsPathQueryAndHeaders) {
  recorder seen;
  running_server server({}, recording_handler(seen));

  auto request = make_request(http::verb::get, "/threads/a%20b/runs?limit=3&name=caf%C3%A9&flag");
  request.set("X-Trace-Id", "Abc-123");
  auto socket = connect(server.port());
  beast::flat_buffer buffer;
  const response answer = exchange(socket, buffer, request);

  EXPECT_EQ(answer.result_int(), 200);
  EXPECT_EQ(answer.body(), R"({"path":"/threads/a b/runs"})");
  EXPECT_EQ(answer[http::field::content_type], "application/json");
  ASSERT_EQ(seen.count(), 1u);
  const server_request got = seen.requests()[0];
  EXPECT_EQ(got.method, "GET");
  EXPECT_EQ(got.target, "/threads/a%20b/runs?limit=3&name=caf%C3%A9&flag");
  EXPECT_EQ(got.path, "/threads/a b/runs");
  EXPECT_EQ(got.query, "limit=3&name=caf%C3%A9&flag");
  EXPECT_EQ(got.query_parameter("limit"), "3");
  EXPECT_EQ(got.query_parameter("name"), "caf\xC3\xA9");
  EXPECT_EQ(got.query_parameter("flag"), "");
  EXPECT_EQ(got.query_parameter("missing"), std::nullopt);
  EXPECT_EQ(got.header("x-trace-id"), "Abc-123");
  EXPECT_EQ(got.header("X-Trace-Id"), std::nullopt);  // looked up by the lower-case name
  EXPECT_EQ(got.header("host"), "127.0.0.1");
  for (const auto& [name, value] : got.headers)
    EXPECT_TRUE(std::ranges::none_of(name, [](unsigned char c) { return std::isupper(c) != 0; })) << name;
  EXPECT_TRUE(got.body.empty());
  EXPECT_EQ(got.remote_address, "127.0.0.1");
}

TEST_F(HttpServer, APostReachesTheHandlerWithItsBodyAndTheAnswerArrivesWhole) {
  recorder seen;
  running_server server({}, [&seen](server_request& request) -> asio::awaitable<server_response> {
    seen.add(request);
    if (request.path == "/text")
      co_return answer_with(202, "plain", {{"content-type", "text/plain"}});
    co_return answer_with(201, R"({"created":true})",
                          {{"X-Handler", "yes"}, {"Set-Cookie", "a=1"}, {"Set-Cookie", "b=2"}});
  });

  auto socket = connect(server.port());
  beast::flat_buffer buffer;
  auto request = make_request(http::verb::post, "/threads", R"({"x":1})");
  request.set(http::field::content_type, "application/json");
  const response created = exchange(socket, buffer, request);

  EXPECT_EQ(created.result_int(), 201);
  EXPECT_EQ(created.body(), R"({"created":true})");
  EXPECT_EQ(created["X-Handler"], "yes");
  EXPECT_EQ(created[http::field::content_type], "application/json");  // the default
  std::vector<std::string> cookies;
  for (auto [it, end] = created.equal_range(http::field::set_cookie); it != end; ++it)
    cookies.emplace_back(it->value());
  EXPECT_THAT(cookies, ::testing::ElementsAre("a=1", "b=2"));  // a name given twice is sent twice
  ASSERT_EQ(seen.count(), 1u);
  const server_request got = seen.requests()[0];
  EXPECT_EQ(got.method, "POST");
  EXPECT_EQ(got.path, "/threads");
  EXPECT_EQ(got.query, "");
  EXPECT_EQ(got.body, R"({"x":1})");
  EXPECT_EQ(got.header("content-type"), "application/json");
  EXPECT_EQ(got.header("content-length"), "7");
  EXPECT_EQ(got.remote_address, "127.0.0.1");

  // The handler's own Content-Type (whatever its case) is kept, not doubled.
  const response text = exchange(socket, buffer, make_request(http::verb::post, "/text", "x"));
  EXPECT_EQ(text.result_int(), 202);
  EXPECT_EQ(text.body(), "plain");
  EXPECT_EQ(text.count(http::field::content_type), 1u);
  EXPECT_EQ(text[http::field::content_type], "text/plain");
}

TEST_F(HttpServer, ServerRequestLooksUpHeadersAndQueryParameters) {
  server_request request;
  request.headers = {{"accept", "text/event-stream"}, {"x-a", "1"}, {"x-a", "2"}};
  request.query = "a=1&b=x%2By%26z&a=2&empty=&bare";
  EXPECT_EQ(request.header("x-a"), "1");  // the first
  EXPECT_EQ(request.header("accept"), "text/event-stream");
  EXPECT_EQ(request.header("missing"), std::nullopt);
  EXPECT_EQ(request.query_parameter("a"), "1");  // the first
  EXPECT_EQ(request.query_parameter("b"), "x+y&z");  // percent-decoded
  EXPECT_EQ(request.query_parameter("empty"), "");
  EXPECT_EQ(request.query_parameter("bare"), "");
  EXPECT_EQ(request.query_parameter("c"), std::nullopt);
  request.query.clear();
  EXPECT_EQ(request.query_parameter("a"), std::nullopt);
}

TEST_F(HttpServer, ErrorResponseIsADetailObjectWithTheTextEscaped) {
  const std::string text = "say \"hi\"\n\\ tab\t \x01 caf\xC3\xA9 </script>";
  const server_response answer = error_response(422, text);
  EXPECT_EQ(answer.status, 422);
  EXPECT_FALSE(answer.stream);
  EXPECT_FALSE(answer.close);
  const boost::json::value body = boost::json::parse(answer.body);
  ASSERT_TRUE(body.is_object());
  EXPECT_EQ(body.as_object().size(), 1u);
  EXPECT_EQ(body.at("detail").as_string(), text);
  EXPECT_EQ(answer.body, "{\"detail\":\"say \\\"hi\\\"\\n\\\\ tab\\t \\u0001 caf\xC3\xA9 </script>\"}");
  EXPECT_EQ(error_response(404, "").body, R"({"detail":""})");
}

// --- keep-alive ----------------------------------------------------------------

TEST_F(HttpServer, KeepAliveServesRequestsOneAfterAnotherUntilCloseIsAsked) {
  recorder seen;
  running_server server({}, [&seen](server_request& request) -> asio::awaitable<server_response> {
    seen.add(request);
    co_return answer_with(200, "\"" + request.path + "\"", {}, request.path == "/last");
  });

  auto socket = connect(server.port());
  beast::flat_buffer buffer;
  const response first = exchange(socket, buffer, make_request(http::verb::get, "/one"));
  EXPECT_EQ(first.body(), "\"/one\"");
  EXPECT_TRUE(first.keep_alive());
  const response second = exchange(socket, buffer, make_request(http::verb::post, "/two", "{}"));
  EXPECT_EQ(second.body(), "\"/two\"");
  EXPECT_TRUE(second.keep_alive());
  EXPECT_EQ(server->open_connections(), 1u);

  // Two requests sent at once (pipelined) are answered in order.
  std::string two;
  for (const char* target : {"/three", "/four"}) {
    std::ostringstream text;
    text << make_request(http::verb::get, target);
    two += text.str();
  }
  send(socket, two);
  EXPECT_EQ(read_response(socket, buffer).body(), "\"/three\"");
  EXPECT_EQ(read_response(socket, buffer).body(), "\"/four\"");

  // close = true: the answer says so and the connection closes after it.
  const response last = exchange(socket, buffer, make_request(http::verb::get, "/last"));
  EXPECT_EQ(last.body(), "\"/last\"");
  EXPECT_FALSE(last.keep_alive());
  EXPECT_TRUE(closed_by_server(socket, buffer));
  EXPECT_EQ(seen.count(), 5u);

  // A client's own "Connection: close" closes it too.
  auto other = connect(server.port());
  beast::flat_buffer other_buffer;
  auto request = make_request(http::verb::get, "/bye");
  request.keep_alive(false);
  EXPECT_FALSE(exchange(other, other_buffer, request).keep_alive());
  EXPECT_TRUE(closed_by_server(other, other_buffer));
}

// --- what a client cannot exceed ---------------------------------------------------

TEST_F(HttpServer, AnOversizedHeadGets431AndOthersAreStillServed) {
  recorder seen;
  running_server server(options_with([](server_options& o) { o.max_header_bytes = 1024; }), recording_handler(seen));

  for (const std::size_t size : {2000u, 64u * 1024u}) {  // within the first read, and far beyond it
    auto socket = connect(server.port());
    beast::flat_buffer buffer;
    boost::system::error_code ignored;  // the server may stop reading before all of it is sent
    asio::write(socket, asio::buffer("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(size, 'a') + "\r\n\r\n"),
                ignored);
    const response answer = read_response(socket, buffer);
    EXPECT_EQ(answer.result_int(), 431) << size;
    EXPECT_THAT(detail_of(answer), HasSubstr("head")) << size;
    EXPECT_EQ(answer[http::field::content_type], "application/json");
    EXPECT_FALSE(answer.keep_alive());
    EXPECT_TRUE(closed_by_server(socket, buffer));
  }
  EXPECT_EQ(seen.count(), 0u);
  EXPECT_EQ(get(server.port(), "/next").result_int(), 200);
  EXPECT_EQ(seen.count(), 1u);
}

TEST_F(HttpServer, AnOversizedBodyGets413AndOthersAreStillServed) {
  recorder seen;
  running_server server(options_with([](server_options& o) { o.max_body_bytes = 16; }), recording_handler(seen));

  auto socket = connect(server.port());
  beast::flat_buffer buffer;
  const response answer = exchange(socket, buffer, make_request(http::verb::post, "/big", std::string(17, 'x')));
  EXPECT_EQ(answer.result_int(), 413);
  EXPECT_THAT(detail_of(answer), HasSubstr("body"));
  EXPECT_TRUE(closed_by_server(socket, buffer));

  // A chunked body over the limit too.
  auto chunked = connect(server.port());
  beast::flat_buffer chunked_buffer;
  send(chunked, "POST /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                "a\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n");
  EXPECT_EQ(read_response(chunked, chunked_buffer).result_int(), 413);
  EXPECT_TRUE(closed_by_server(chunked, chunked_buffer));
  EXPECT_EQ(seen.count(), 0u);

  // Exactly the limit is accepted, and so is everyone else.
  auto fits = connect(server.port());
  beast::flat_buffer fits_buffer;
  EXPECT_EQ(exchange(fits, fits_buffer, make_request(http::verb::post, "/fits", std::string(16, 'x'))).result_int(),
            200);
  ASSERT_EQ(seen.count(), 1u);
  EXPECT_EQ(seen.requests()[0].body, std::string(16, 'x'));
}

TEST_F(HttpServer, AMalformedRequestGets400AndOthersAreStillServed) {
  recorder seen;
  running_server server({}, recording_handler(seen));

  for (const std::string_view garbage : {std::string_view("THIS IS NOT HTTP\r\n\r\n"),
                                         std::string_view("GET / HTTP/1.1\r\nno colon in this line\r\n\r\n"),
                                         std::string_view("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)}) {
    auto socket = connect(server.port());
    beast::flat_buffer buffer;
    send(socket, garbage);
    const response answer = read_response(socket, buffer);
    EXPECT_EQ(answer.result_int(), 400) << garbage;
    EXPECT_THAT(detail_of(answer), HasSubstr("malformed"));
    EXPECT_TRUE(closed_by_server(socket, buffer));
  }
  EXPECT_EQ(seen.count(), 0u);
  EXPECT_EQ(get(server.port(), "/next").result_int(), 200);
}

TEST_F(HttpServer, AClientThatStopsMidRequestGets408AndIsClosed) {
  recorder seen;
  running_server server(options_with([](server_options& o) {
                           o.request_timeout = 200ms;
                           o.idle_timeout = 30s;
                         }), recording_handler(seen));

  auto socket = connect(server.port());
  beast::flat_buffer buffer;
  send(socket, "GET /slow HTTP/1.1\r\nHost: x\r\n");  // and never the rest
  const response answer = read_response(socket, buffer);
  EXPECT_EQ(answer.result_int(), 408);
  EXPECT_THAT(detail_of(answer), HasSubstr("time"));
  EXPECT_TRUE(closed_by_server(socket, buffer));
  EXPECT_EQ(seen.count(), 0u);
  EXPECT_EQ(get(server.port(), "/next").result_int(), 200);
}

TEST_F(HttpServer, AClientThatTricklesItsRequestGets408AndIsClosed) {
  recorder seen;
  running_server server(options_with([](server_options& o) {
                           o.request_timeout = 200ms;
                           o.idle_timeout = 30s;
                         }), recording_handler(seen));

  auto socket = connect(server.port());
  send(socket, "GET /slow HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  // A byte every 20 ms, each one well within the timeout on its own, until
  // the server answers: the timeout counts from the request's start, so a
  // server that restarted it with every byte would never answer (the hang
  // guard would end the test).
  while (socket.available() == 0) {
    boost::system::error_code ec;
    asio::write(socket, asio::buffer("a", 1), ec);
    if (ec) break;
    std::this_thread::sleep_for(20ms);
  }
  beast::flat_buffer buffer;
  const response answer = read_response(socket, buffer);
  EXPECT_EQ(answer.result_int(), 408);
  EXPECT_TRUE(closed_by_server(socket, buffer));
  EXPECT_EQ(seen.count(), 0u);
}

TEST_F(HttpServer, AnIdleKeepAliveConnectionIsClosedWithoutAnAnswer) {
  recorder seen;
  running_server server(options_with([](server_options& o) {
                           o.request_timeout = 30s;
                           o.idle_timeout = 200ms;
                         }), recording_handler(seen));

  auto socket = connect(server.port());
  beast::flat_buffer buffer;
  EXPECT_EQ(exchange(socket, buffer, make_request(http::verb::get, "/one")).result_int(), 200);
  EXPECT_TRUE(closed_by_server(socket, buffer));  // no 408: it was between requests
  wait_until([&] { return server->open_connections() == 0; });

  auto silent = connect(server.port());  // a connection that never sends a byte
  beast::flat_buffer silent_buffer;
  EXPECT_TRUE(closed_by_server(silent, silent_buffer));
  wait_until([&] { return server->open_connections() == 0; });
  EXPECT_EQ(seen.count(), 1u);
}

TEST_F(HttpServer, AConnectionOverMaxConnectionsGets503UntilOneCloses) {
  recorder seen;
  running_server server(options_with([](server_options& o) { o.max_connections = 2; }), recording_handler(seen));

  auto first = connect(server.port());
  auto second = connect(server.port());
  wait_until([&] { return server->open_connections() == 2; });

  auto third = connect(server.port());
  beast::flat_buffer buffer;
  boost::system::error_code ignored;  // the server may close before it reads the request
  http::write(third, make_request(http::verb::get, "/third"), ignored);
  const response refused = read_response(third, buffer);
  EXPECT_EQ(refused.result_int(), 503);
  EXPECT_THAT(detail_of(refused), HasSubstr("connections"));
  EXPECT_FALSE(refused.keep_alive());
  EXPECT_TRUE(closed_by_server(third, buffer));
  EXPECT_EQ(server->open_connections(), 2u);
  EXPECT_EQ(seen.count(), 0u);

  // The held connections are served, and once one closes a new one is too.
  beast::flat_buffer first_buffer;
  EXPECT_EQ(exchange(first, first_buffer, make_request(http::verb::get, "/first")).result_int(), 200);
  second.close();
  wait_until([&] { return server->open_connections() == 1; });
  EXPECT_EQ(get(server.port(), "/fourth").result_int(), 200);
  EXPECT_EQ(seen.count(), 2u);
}

// --- handler failures -------------------------------------------------------------

TEST_F(HttpServer, AHandlerThatThrowsGets500WithAGenericDetail) {
  running_server server({}, [](server_request& request) -> asio::awaitable<server_response> {
    if (request.path == "/throws") throw std::runtime_error("db password hunter2 rejected");
    co_return answer_with(200, R"({"ok":true})");
  });

  auto socket = connect(server.port());
  beast::flat_buffer buffer;
  const response failed = exchange(socket, buffer, make_request(http::verb::get, "/throws"));
  EXPECT_EQ(failed.result_int(), 500);
  EXPECT_THAT(failed.body(), Not(HasSubstr("hunter2")));
  EXPECT_FALSE(detail_of(failed).empty());
  EXPECT_EQ(failed[http::field::content_type], "application/json");
  // The connection goes on.
  EXPECT_EQ(exchange(socket, buffer, make_request(http::verb::get, "/fine")).body(), R"({"ok":true})");
}

TEST_F(HttpServer, AHandlerThatThrowsBeforeItsFirstSuspensionGets500Too) {
  running_server server({}, [](server_request&) -> asio::awaitable<server_response> {
    throw std::logic_error("not even a coroutine frame of its own: secret-xyz");
  });
  const response failed = get(server.port(), "/");
  EXPECT_EQ(failed.result_int(), 500);
  EXPECT_THAT(failed.body(), Not(HasSubstr("secret-xyz")));
}

// --- streamed responses ---------------------------------------------------------------

TEST_F(HttpServer, AStreamArrivesChunkedInOrderAndTheConnectionServesTheNextRequest) {
  const std::vector<std::string> pieces{"data: one\n\n", "data: two\n\n", "", "data: three\n\n"};
  running_server server({}, [&pieces](server_request&) -> asio::awaitable<server_response> {
    server_response answer = answer_with(200, "ignored", {{"Content-Type", "text/event-stream"}});
    answer.stream = [&pieces](response_stream& out) -> asio::awaitable<void> {
      asio::steady_timer timer(co_await asio::this_coro::executor);
      for (const auto& piece : pieces) {
        if (!co_await out.write(piece)) co_return;
        timer.expires_after(5ms);
        co_await timer.async_wait(asio::use_awaitable);
      }
    };
    co_return answer;
  });

  auto socket = connect(server.port());
  beast::flat_buffer buffer;
  http::write(socket, make_request(http::verb::get, "/events"));
  http::response_parser<http::string_body> parser;
  std::vector<std::uint64_t> chunk_sizes;
  auto on_chunk = [&chunk_sizes](std::uint64_t size, beast::string_view, boost::system::error_code&) {
    chunk_sizes.push_back(size);
  };
  parser.on_chunk_header(on_chunk);
  http::read(socket, buffer, parser);
  const response& answer = parser.get();

  EXPECT_EQ(answer.result_int(), 200);
  EXPECT_TRUE(answer.chunked());
  EXPECT_EQ(answer[http::field::content_type], "text/event-stream");
  EXPECT_TRUE(answer.keep_alive());
  EXPECT_EQ(answer.body(), "data: one\n\ndata: two\n\ndata: three\n\n");
  // One chunk per non-empty write, in order, then the last chunk.
  EXPECT_THAT(chunk_sizes, ::testing::ElementsAre(11u, 11u, 13u, 0u));

  // Chunking framed the body: the same connection takes the next request,
  // and one that asks to close is the last.
  auto last = make_request(http::verb::get, "/events");
  last.set(http::field::connection, "close");
  http::write(socket, last);
  http::response_parser<http::string_body> second;
  http::read(socket, buffer, second);
  EXPECT_EQ(second.get().body(), "data: one\n\ndata: two\n\ndata: three\n\n");
  EXPECT_FALSE(second.get().keep_alive());
  EXPECT_TRUE(closed_by_server(socket, buffer));
}

TEST_F(HttpServer, AStreamWhoseClientStopsReadingIsCutOffAndOthersAreServed) {
  constexpr int max_writes = 1024;  // 64 MiB: far beyond any socket buffer
  const std::string piece(64 * 1024, 'x');
  struct outcome {
    int taken = 0;
    bool later_write = true;
  };
  std::promise<outcome> done;
  recorder seen;
  running_server server(options_with([](server_options& o) { o.write_timeout = 200ms; }),
                        [&](server_request& request) -> asio::awaitable<server_response> {
                          seen.add(request);
                          server_response answer;
                          if (request.path != "/stream") co_return answer;
                          answer.stream = [&](response_stream& out) -> asio::awaitable<void> {
                            outcome result;
                            while (result.taken < max_writes && co_await out.write(piece)) ++result.taken;
                            result.later_write = co_await out.write("more");
                            done.set_value(result);
                          };
                          co_return answer;
                        });

  tcp::socket stalled(client_io_);
  stalled.open(tcp::v4());
  stalled.set_option(asio::socket_base::receive_buffer_size(4096));
  stalled.connect({asio::ip::make_address("127.0.0.1"), server.port()});
  http::write(stalled, make_request(http::verb::get, "/stream"));  // and never reads

  const outcome result = done.get_future().get();
  EXPECT_GT(result.taken, 0);
  EXPECT_LT(result.taken, max_writes);  // write() said false once the buffers were full
  EXPECT_FALSE(result.later_write);     // and goes on saying it

  EXPECT_EQ(get(server.port(), "/other").result_int(), 200);
  wait_until([&] { return server->open_connections() == 0; });  // the stalled one was closed
  EXPECT_EQ(seen.count(), 2u);
}

// --- stop() ---------------------------------------------------------------------

TEST_F(HttpServer, StopEndsStreamsClosesConnectionsAndRefusesNewOnes) {
  std::promise<int> producer_ended;
  running_server server({}, [&](server_request& request) -> asio::awaitable<server_response> {
    server_response answer;
    if (request.path != "/stream") co_return answer;
    answer.stream = [&](response_stream& out) -> asio::awaitable<void> {
      asio::steady_timer timer(co_await asio::this_coro::executor);
      int written = 0;
      while (written < 100000 && co_await out.write("data: tick\n\n")) {
        ++written;
        timer.expires_after(10ms);
        co_await timer.async_wait(asio::use_awaitable);
      }
      producer_ended.set_value(written);
    };
    co_return answer;
  });

  // A stream in progress...
  auto streaming = connect(server.port());
  beast::flat_buffer streaming_buffer;
  http::write(streaming, make_request(http::verb::get, "/stream"));
  http::response_parser<http::string_body> parser;
  http::read_header(streaming, streaming_buffer, parser);
  while (parser.get().body().empty()) http::read_some(streaming, streaming_buffer, parser);
  // ...and an idle keep-alive connection.
  auto idle = connect(server.port());
  beast::flat_buffer idle_buffer;
  EXPECT_EQ(exchange(idle, idle_buffer, make_request(http::verb::get, "/")).result_int(), 200);
  EXPECT_EQ(server->open_connections(), 2u);

  server->stop();

  boost::system::error_code ec;
  http::read(streaming, streaming_buffer, parser, ec);
  EXPECT_TRUE(ec) << "the stream ended as if complete";
  EXPECT_FALSE(parser.is_done());
  EXPECT_GT(producer_ended.get_future().get(), 0);  // its write() said false
  EXPECT_TRUE(closed_by_server(idle, idle_buffer));
  wait_until([&] { return server->open_connections() == 0; });

  // New connections are refused (the listening socket closes on the
  // server's thread: until then one may be taken, but never answered).
  for (;;) {
    tcp::socket late(client_io_);
    late.connect({asio::ip::make_address("127.0.0.1"), server.port()}, ec);
    if (ec) {
      EXPECT_EQ(ec, asio::error::connection_refused);
      break;
    }
    asio::write(late, asio::buffer(std::string_view("GET / HTTP/1.1\r\nHost: x\r\n\r\n")), ec);
    EXPECT_THAT(read_until_closed(late), Not(HasSubstr("HTTP/1.1")));
    std::this_thread::sleep_for(2ms);
  }

  server->stop();  // again: nothing happens
  EXPECT_EQ(server->open_connections(), 0u);
}

TEST_F(HttpServer, StopBeforeStartAndTwiceIsFine) {
  asio::io_context io;
  http_server server(io.get_executor(), {}, [](server_request&) -> asio::awaitable<server_response> {
    co_return server_response{};
  });
  EXPECT_NE(server.port(), 0);
  EXPECT_EQ(server.options().address, "127.0.0.1");
  server.stop();
  server.stop();
  io.run();
  EXPECT_EQ(server.open_connections(), 0u);
}

// --- TLS ----------------------------------------------------------------------------

server_options tls_options(std::string certificate, std::string key) {
  server_options options;
  options.tls_certificate_file = std::move(certificate);
  options.tls_private_key_file = std::move(key);
  return options;
}

// A self-signed certificate for 127.0.0.1 and its key, as PEM files.
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
