#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
using namespace switchboard::testing;
using tcp = asio::ip::tcp;

http::request<http::string_body> post(std::string target, std::string body) {
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.set("x-api-key", "secret");
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

// A blocking client that keeps its connection open between exchanges.
struct plain_client {
  explicit plain_client(unsigned short port) : socket(ioc) {
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
  }
  http::response<http::string_body> exchange(http::request<http::string_body> req) {
    http::write(socket, req);
    http::response<http::string_body> res;
    http::read(socket, buffer, res);
    return res;
  }
  asio::io_context ioc;
  tcp::socket socket;
  boost::beast::flat_buffer buffer;
};

TEST(LoopbackModelServer, RendersOpenAiRepliesAndRecordsRequests) {
  loopback_model_server server;
  server.enqueue(server_action::reply("hello"));
  plain_client client(server.port());
  const auto res = client.exchange(post("/v1/chat/completions", R"({"model":"m1"})"));
  ASSERT_EQ(res.result_int(), 200);
  const auto body = json::parse(res.body());
  EXPECT_EQ(body.at("choices").at(0).at("message").at("content"), "hello");
  EXPECT_EQ(body.at("model"), "m1");
  EXPECT_EQ(body.at("usage").at("prompt_tokens"), 11);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/chat/completions");
  EXPECT_EQ(requests[0].header("X-API-KEY"), "secret");
  EXPECT_EQ(requests[0].json().at("model"), "m1");
}

TEST(LoopbackModelServer, AnthropicForcedToolGetsToolUseBlock) {
  loopback_model_server server;
  server.enqueue(server_action::reply(R"({"a":1})"));
  server.enqueue(server_action::reply("not json"));
  plain_client client(server.port());
  const std::string forced = R"({"model":"c","tool_choice":{"type":"tool","name":"out"}})";
  auto body = json::parse(client.exchange(post("/v1/messages", forced)).body());
  EXPECT_EQ(body.at("content").at(0).at("type"), "tool_use");
  EXPECT_EQ(body.at("content").at(0).at("name"), "out");
  EXPECT_EQ(body.at("content").at(0).at("input").at("a"), 1);
  EXPECT_EQ(body.at("stop_reason"), "tool_use");
  body = json::parse(client.exchange(post("/v1/messages", forced)).body());
  EXPECT_EQ(body.at("content").at(0).at("type"), "text");
  EXPECT_EQ(body.at("content").at(0).at("text"), "not json");
}

TEST(LoopbackModelServer, ToolCallsInBothWireFormats) {
  loopback_model_server server;
  const std::vector<scripted_tool_call> calls = {{"c1", "get_weather", R"({"city": "Oslo"})"}, {"c2", "ping", "{}"}};
  server.enqueue(server_action::tool_calls(calls));
  server.enqueue(server_action::tool_calls(calls, "Checking."));
  plain_client client(server.port());
  auto body = json::parse(client.exchange(post("/v1/chat/completions", "{}")).body());
  const auto& choice = body.at("choices").at(0);
  EXPECT_EQ(choice.at("finish_reason"), "tool_calls");
  EXPECT_TRUE(choice.at("message").at("content").is_null());
  EXPECT_EQ(choice.at("message").at("tool_calls"), json::parse(R"([
      {"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}},
      {"id":"c2","type":"function","function":{"name":"ping","arguments":"{}"}}])"));
  body = json::parse(client.exchange(post("/v1/messages", "{}")).body());
  EXPECT_EQ(body.at("stop_reason"), "tool_use");
  EXPECT_EQ(body.at("content"), json::parse(R"([{"type":"text","text":"Checking."},
      {"type":"tool_use","id":"c1","name":"get_weather","input":{"city":"Oslo"}},
      {"type":"tool_use","id":"c2","name":"ping","input":{}}])"));
}

TEST(LoopbackModelServer, ErrorsCarryRetryAfterAndProviderMessage) {
  loopback_model_server server;
  server.enqueue(server_action::rate_limited(3, "slow down"));
  server.enqueue(server_action::error(400, "bad schema"));
  plain_client client(server.port());
  auto res = client.exchange(post("/chat/completions", "{}"));
  EXPECT_EQ(res.result_int(), 429);
  EXPECT_EQ(res[http::field::retry_after], "3");
  EXPECT_EQ(json::parse(res.body()).at("error").at("message"), "slow down");
  res = client.exchange(post("/v1/messages", "{}"));
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_EQ(json::parse(res.body()).at("error").at("message"), "bad schema");
  EXPECT_EQ(server.accepted_connections(), 1u);
}

TEST(LoopbackModelServer, UnscriptedRequestFailsLoudly) {
  loopback_model_server server;
  plain_client client(server.port());
  const auto res = client.exchange(post("/chat/completions", "{}"));
  EXPECT_EQ(res.result_int(), 500);
  EXPECT_NE(res.body().find("no scripted action"), std::string::npos);
}

TEST(LoopbackModelServer, ChunkedRepliesAndHandlers) {
  loopback_model_server server;
  server.set_handler([](const recorded_request& r) {
    return server_action::reply("echo " + r.header("x-api-key")).with_chunked();
  });
  plain_client client(server.port());
  const auto res = client.exchange(post("/chat/completions", "{}"));
  EXPECT_TRUE(res.chunked());
  EXPECT_EQ(json::parse(res.body()).at("choices").at(0).at("message").at("content"), "echo secret");
}

TEST(LoopbackModelServer, ResetMidBodyBreaksTheRead) {
  loopback_model_server server;
  server.enqueue(server_action::reset_mid_body());
  plain_client client(server.port());
  EXPECT_THROW(client.exchange(post("/chat/completions", "{}")), boost::system::system_error);
}

TEST(LoopbackModelServer, ServesTlsWithACertificateTheCaFileTrusts) {
  loopback_model_server server({.tls = true});
  server.enqueue(server_action::reply("secure"));
  ASSERT_FALSE(server.ca_file().empty());
  EXPECT_EQ(server.base_url().rfind("https://127.0.0.1:", 0), 0u);

  asio::io_context ioc;
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.load_verify_file(server.ca_file());
  ctx.set_verify_mode(asio::ssl::verify_peer);
  asio::ssl::stream<tcp::socket> stream(ioc, ctx);
  stream.set_verify_callback(asio::ssl::host_name_verification("127.0.0.1"));
  stream.next_layer().connect({asio::ip::make_address("127.0.0.1"), server.port()});
  stream.handshake(asio::ssl::stream_base::client);
  http::write(stream, post("/chat/completions", "{}"));
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res);
  EXPECT_EQ(json::parse(res.body()).at("choices").at(0).at("message").at("content"), "secure");
}

TEST(LoopbackModelServer, WrongCertificateNameFailsHostNameVerification) {
  loopback_model_server server({.tls = true, .certificate_names = {"wrong.example"}});
  asio::io_context ioc;
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.load_verify_file(server.ca_file());
  ctx.set_verify_mode(asio::ssl::verify_peer);
  asio::ssl::stream<tcp::socket> stream(ioc, ctx);
  stream.set_verify_callback(asio::ssl::host_name_verification("127.0.0.1"));
  stream.next_layer().connect({asio::ip::make_address("127.0.0.1"), server.port()});
  EXPECT_THROW(stream.handshake(asio::ssl::stream_base::client), boost::system::system_error);
}

}  // namespace
