// A real HTTP/1.1 (optionally HTTPS) model server on 127.0.0.1 for tests and
// benchmarks. It speaks both wire formats — OpenAI chat completions
// (POST .../chat/completions) and Anthropic messages (POST .../messages) —
// and is scripted per request.
//
// Usage:
//
//   using namespace switchboard::testing;
//   loopback_model_server server;                        // plain HTTP
//   loopback_model_server tls_server({.tls = true});     // HTTPS, self-signed
//   server.enqueue(server_action::reply(R"({"city":"Oslo"})"));
//   server.enqueue(server_action::rate_limited(1));      // 429, Retry-After: 1
//   server.set_default(server_action::reply("{}"));      // when the queue is empty
//   // point the client at server.base_url() (tls: trust server.ca_file())
//   EXPECT_EQ(server.accepted_connections(), 1u);
//   EXPECT_EQ(server.requests().at(0).json().at("model"), "gpt-test");
//
// Each request takes the next action from the queue; when the queue is empty
// the handler (if set) decides, else the default action (a 500 whose message
// says that nothing was scripted, so an unscripted request fails loudly).
//
// Replies are rendered in the wire format of the request's target. For the
// Anthropic format, when the request forces a tool (tool_choice.type ==
// "tool") and the reply's content is a JSON object, the answer is a tool_use
// block with that object as input; otherwise a text block.
//
// server_action::tool_calls answers with tool calls: OpenAI
// choices[0].message.tool_calls (arguments as the string given) with
// finish_reason "tool_calls"; Anthropic a tool_use block per call (input:
// the arguments parsed; a string input when they are not JSON) with
// stop_reason "tool_use". Malformed answers are raw_body's job.
//
// The server is the network layer's net::http_server, on its own thread
// and io_context; the destructor (or stop()) stops it and waits for the
// thread. All member functions are thread-safe.
#pragma once

#include <boost/json/value.hpp>

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

namespace switchboard::testing {

using header_list = std::vector<std::pair<std::string, std::string>>;

// One request as the server received it.
struct recorded_request {
  std::string method;
  std::string target;
  header_list headers;  // names in lower case
  std::string body;
  std::size_t connection = 0;  // 1-based index of the accepted connection
  std::chrono::steady_clock::time_point received_at;

  // The value of the first header named `name` (case-insensitive), "" if absent.
  std::string header(std::string_view name) const;
  // The body parsed as JSON; throws if it is not JSON.
  boost::json::value json() const;
};

// One tool call of a server_action::tool_calls answer.
struct scripted_tool_call {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON text, e.g. R"({"city":"Oslo"})"
};

// What the server does with one request.
struct server_action {
  enum class kind {
    reply,           // 200 with `content` as the model's answer
    status,          // `status` with an error body carrying `content` as message
    raw,             // `status` with `content` sent verbatim as the body
    stall,           // read the request, answer nothing for `stall_for`, then close
    reset_mid_body,  // send the head and half the body, then reset the connection
    close,           // close the connection without answering
  };

  kind type = kind::reply;
  int status = 200;
  std::string content;
  header_list headers;                     // extra response headers
  bool chunked = false;                    // chunked transfer encoding
  bool keep_alive = true;                  // false: "Connection: close" and close
  std::chrono::milliseconds latency{0};    // wait before answering
  std::chrono::milliseconds stall_for{std::chrono::minutes(10)};
  std::string finish_reason = "stop";      // OpenAI; Anthropic uses end_turn/tool_use
  std::int64_t prompt_tokens = 11;
  std::int64_t completion_tokens = 7;
  std::vector<scripted_tool_call> calls;   // reply: tool calls beside `content`

  // Streaming (reply only): the answer as server-sent events in the
  // request's format — OpenAI chat.completion.chunk events (content and
  // tool-call arguments in pieces, a usage chunk, `data: [DONE]`), Anthropic
  // message_start / ping / content_block_* / message_delta / message_stop —
  // with Content-Type text/event-stream and chunked encoding, each event
  // written separately unless split_at says where to cut. The same answer
  // non-streamed reads the same (the tests compare both).
  bool stream = false;
  std::size_t delta_bytes = 8;             // text and arguments in pieces of about this many bytes (whole characters)
  std::vector<std::size_t> split_at;       // cut the event stream's bytes at these offsets (one write each)
  std::optional<std::size_t> stall_after;  // send this many bytes of the stream, then nothing for stall_for, then close
  bool terminator = true;                  // false: no [DONE] / message_stop (the body still ends cleanly)
  bool crlf = false;                       // lines end with \r\n instead of \n

  // A successful answer whose text is `content`.
  static server_action reply(std::string content);
  // An assistant turn calling `calls` (several: in parallel), with `text`
  // said beside them (none: OpenAI content null, no Anthropic text block).
  static server_action tool_calls(std::vector<scripted_tool_call> calls, std::string text = {});
  // A successful answer with ```json fences around `json_text`.
  static server_action fenced_json(std::string_view json_text);
  // An error status with the provider's error body carrying `message`.
  static server_action error(int status, std::string message);
  // 429 with Retry-After: seconds.
  static server_action rate_limited(int retry_after_seconds,
                                    std::string message = "rate limit reached");
  // A body sent as is (e.g. "not json at all") with the given status.
  static server_action raw_body(int status, std::string body);
  // An answer whose body is at least `bytes` long.
  static server_action oversized(std::size_t bytes);
  static server_action stall(std::chrono::milliseconds for_how_long = std::chrono::minutes(10));
  static server_action reset_mid_body();
  static server_action close_connection();

  server_action&& with_latency(std::chrono::milliseconds delay) &&;
  server_action&& with_chunked(bool on = true) &&;
  server_action&& with_header(std::string name, std::string value) &&;
  server_action&& with_connection_close() &&;
  // Streaming (see `stream` above).
  server_action&& streamed() &&;
  server_action&& with_delta_bytes(std::size_t bytes) &&;
  server_action&& with_split_at(std::vector<std::size_t> offsets) &&;
  server_action&& with_stall_after(std::size_t bytes, std::chrono::milliseconds for_how_long) &&;
  server_action&& without_terminator() &&;
  server_action&& with_crlf() &&;
};

// The event stream a streamed `action` sends for a request to `target`
// (its body `request_body`), for tests that pick split offsets inside it.
std::string render_event_stream(const server_action& action, std::string_view target, std::string_view request_body);

struct loopback_options {
  bool tls = false;
  // Names the certificate is valid for (subjectAltName). "127.0.0.1" and other
  // IP literals become IP entries. Give a wrong name to test host-name checks.
  std::vector<std::string> certificate_names{"localhost", "127.0.0.1"};
};

class loopback_model_server {
 public:
  using handler = std::function<server_action(const recorded_request&)>;

  explicit loopback_model_server(loopback_options options = {});
  ~loopback_model_server();
  loopback_model_server(const loopback_model_server&) = delete;
  loopback_model_server& operator=(const loopback_model_server&) = delete;

  unsigned short port() const noexcept;
  // "http://127.0.0.1:PORT" or "https://127.0.0.1:PORT".
  std::string base_url() const;
  // TLS only: path of a PEM file holding the self-signed certificate (a CA
  // file that makes clients trust this server). Removed by the destructor.
  std::string ca_file() const;

  void enqueue(server_action action);
  void set_handler(handler h);
  void set_default(server_action action);

  std::size_t accepted_connections() const noexcept;
  std::size_t request_count() const;
  std::vector<recorded_request> requests() const;
  void clear_requests();

  // Stops accepting, drops every connection and joins the thread. Idempotent.
  void stop();

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace switchboard::testing
