// The server half of MCP: one session with one client, speaking JSON-RPC 2.0
// (lifecycle with version negotiation, ping, tools/list, tools/call,
// notifications/cancelled, progress notifications, and elicitation/create
// sent to the client). It is transport-agnostic: whatever carries the
// messages (stdio_server.hpp: newline-delimited on standard input and
// output; `switchboard serve`'s /mcp: Streamable HTTP) hands each received
// message's text to receive() and writes each message the session sends.
//
//   auto session = mcp::server_session::make(strand, provider, {"switchboard", "1.2.0"},
//                                            [](std::string message) { write_line(message); });
//   session->receive(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
//
// The tools come from a tool_provider: it lists them and runs each call as
// a coroutine, with a tool_call context for progress, elicitation and
// cancellation.
//
// Everything the client sends is untrusted: a message over
// server_limits::max_message_bytes, malformed JSON (or nested deeper than
// protocol::max_json_depth), a batch, an unknown method, bad parameters are
// answered with JSON-RPC errors (-32700 parse error, -32600 invalid request,
// -32601 method not found, -32602 invalid params); the session keeps
// serving. At most server_limits::max_calls_in_flight tools/call run at once.
//
// Thread-safety: a session lives on one strand (or single-threaded
// executor): receive(), close() and the send function run there. A
// tool_call's progress() may be called from any thread (it posts).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spdlog { class logger; }

namespace switchboard::mcp {

// The revisions the server answers initialize with: the client's own when
// it is one of these, else the first (the latest).
inline constexpr std::array<std::string_view, 4> server_protocol_versions = {"2025-11-25", "2025-06-18",
                                                                             "2025-03-26", "2024-11-05"};

// JSON-RPC error codes the session answers with.
namespace rpc_code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
inline constexpr int server_busy = -32000;  // over max_calls_in_flight
}  // namespace rpc_code

// One tool as tools/list shows it.
struct exposed_tool {
  std::string name;         // [A-Za-z0-9_.-]{1,128}
  std::string title;        // "" = none
  std::string description;
  boost::json::object input_schema;                  // a JSON Schema of "type": "object"
  std::optional<boost::json::object> output_schema;  // for structuredContent, when every result has one shape
  boost::json::object annotations;                   // readOnlyHint, destructiveHint, ... ({} = none)
};

// What the client answered to elicitation/create: action "accept" (with
// `content`), "decline" or "cancel". A client that answered with an error,
// went away, or cancelled the call counts as "cancel".
struct elicitation_reply {
  std::string action;
  boost::json::object content;
};

// Why a call is asked to stop.
enum class stop_reason {
  cancelled,       // the client sent notifications/cancelled for it
  session_closed,  // the transport ended (the client went away, a signal)
};

// The context of one tools/call, valid until the provider's call_tool
// coroutine completes.
class tool_call {
 public:
  virtual ~tool_call() = default;
  // Whether the client declared the elicitation capability.
  virtual bool can_elicit() const noexcept = 0;
  // Sends elicitation/create (`message`, a flat object `requested_schema`)
  // and completes with the answer; "cancel" at once when the client cannot
  // elicit or the call was stopped.
  virtual boost::asio::awaitable<elicitation_reply> elicit(std::string message,
                                                            boost::json::object requested_schema) = 0;
  // Sends notifications/progress (progress counts up by one each time) when
  // the client gave a progressToken; otherwise nothing. Any thread (at once
  // on the session's strand, else posted to it).
  virtual void progress(std::string message) = 0;
  // `handler` is called once, on the session's strand, when the call must
  // stop; at once when it already must. Replaces an earlier handler.
  virtual void on_stop(std::function<void(stop_reason)> handler) = 0;
};

// What a session serves. Called on the session's strand.
class tool_provider {
 public:
  virtual ~tool_provider() = default;
  virtual std::vector<exposed_tool> list_tools() const = 0;
  // Runs tool `name` (one of list_tools()) and returns the tools/call
  // result: {"content": [...], "structuredContent"?: {...}, "isError"?: bool}.
  // A failure of the tool is a result with isError, not an exception; an
  // exception is answered as a JSON-RPC internal error naming it.
  virtual boost::asio::awaitable<boost::json::object> call_tool(std::string name, boost::json::object arguments,
                                                                tool_call& call) = 0;
};

// Result builders for providers.
boost::json::object text_result(std::string text, bool is_error = false);
boost::json::object structured_result(std::string text, boost::json::object structured, bool is_error = false);

struct server_info {
  std::string name = "switchboard";
  std::string version;
  std::string instructions;  // "" = none
};

struct server_limits {
  std::size_t max_message_bytes = std::size_t{4} << 20;  // one JSON-RPC message from the client
  std::size_t max_calls_in_flight = 32;
};

class server_session : public std::enable_shared_from_this<server_session> {
 public:
  // One serialized message (no newline) and the id of the client's request
  // it belongs to (its response, its progress, a question asked during it),
  // or null: a transport that answers each request on its own stream (HTTP)
  // routes by it.
  using send_function = std::function<void(std::string message, const boost::json::value& related_request)>;

  // `executor` must be a strand or a single-threaded executor; `provider`
  // must outlive the session's calls.
  static std::shared_ptr<server_session> make(boost::asio::any_io_executor executor,
                                              std::shared_ptr<tool_provider> provider, server_info info,
                                              send_function send, server_limits limits = {},
                                              std::shared_ptr<spdlog::logger> logger = nullptr);
  virtual ~server_session() = default;

  // Handles one message the client sent (its text, as received).
  virtual void receive(std::string_view message) = 0;
  // The transport dropped a message over max_message_bytes: answered with
  // an invalid-request error (id null).
  virtual void receive_oversized(std::size_t bytes_seen) = 0;
  // The transport ended: every call in flight is asked to stop
  // (session_closed), pending elicitations end as "cancel", and nothing
  // more is sent.
  virtual void close() = 0;
  // Completes when no call is in flight (after close(), when all ended).
  virtual boost::asio::awaitable<void> calls_finished() = 0;
  virtual std::size_t calls_in_flight() const noexcept = 0;
  // Whether the client declared the elicitation capability at initialize.
  virtual bool client_can_elicit() const noexcept = 0;
};

}  // namespace switchboard::mcp
