// The HTTP server over plain HTTP: requests, keep-alive, limits, handlers that
// throw, streams, stop(). The fixture and helpers: http_server_fixture.hpp.
#include "http_server_fixture.hpp"

#include <atomic>

namespace switchboard::net {
namespace {
using namespace server_testing;
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

// open_streams() counts a streamed body from its first call until it
// returns or throws (the /metrics gauge of open streams reads it).
TEST_F(HttpServer, AStreamIsCountedOpenUntilItReturnsOrThrows) {
  std::atomic<bool> release{false};
  running_server server({}, [&release](server_request& request) -> asio::awaitable<server_response> {
    server_response answer = answer_with(200, "", {{"Content-Type", "text/event-stream"}});
    const bool throws = request.path == "/throws";
    answer.stream = [&release, throws](response_stream& out) -> asio::awaitable<void> {
      if (!co_await out.write("data: first\n\n")) co_return;
      asio::steady_timer timer(co_await asio::this_coro::executor);
      while (!release) {
        timer.expires_after(2ms);
        co_await timer.async_wait(asio::use_awaitable);
      }
      if (throws) throw std::runtime_error("the stream failed");
    };
    co_return answer;
  });
  EXPECT_EQ(server->open_streams(), 0u);

  for (const char* path : {"/returns", "/throws"}) {
    release = false;
    auto socket = connect(server.port());
    http::write(socket, make_request(http::verb::get, path));
    wait_until([&] { return server->open_streams() == 1; });
    EXPECT_EQ(server->open_streams(), 1u) << path;
    release = true;
    wait_until([&] { return server->open_streams() == 0; });
    EXPECT_EQ(server->open_streams(), 0u) << path;
  }
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


// A self-signed certificate for 127.0.0.1 and its key, as PEM files.
}  // namespace
}  // namespace switchboard::net
