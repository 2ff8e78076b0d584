// An MCP client: one session with one server, over stdio (a child process
// the client starts and stops) or Streamable HTTP. It speaks protocol
// revision 2025-11-25 and accepts a server that answers 2025-06-18; it
// lists tools (paginated, re-listed after notifications/tools/list_changed)
// and calls them. Server-to-client requests are answered (ping) or refused
// (method not found); progress notifications are logged.
//
// Everything a server sends is untrusted: messages are held to
// max_message_bytes and protocol::max_json_depth, tool lists to
// max_tool_pages and max_tools, and a server that breaks the protocol ends
// the session with an mcp_error(protocol_error) naming it. See docs/mcp.md.
//
// Async operations:
//   - run on the client's own strand (made from the executor connect() ran
//     on) and complete on the caller's executor; a client may be shared by
//     coroutines on any threads;
//   - end by the configuration's request_timeout with mcp_errc::timeout;
//   - are cancelled through the awaiting coroutine's cancellation slot
//     (terminal cancellation): the request is abandoned, the server is sent
//     notifications/cancelled, and the operation ends with
//     asio::error::operation_aborted;
//   - throw mcp_error otherwise.
//
// Lifetime: the client must outlive its pending operations, and the
// execution context it was connected on must outlive the client. close()
// ends the session cleanly (stdio: standard input closed, then SIGTERM, then
// SIGKILL after shutdown_grace each; HTTP: DELETE of the session); the
// destructor of a client not closed kills a stdio server at once.
#pragma once

#include <switchboard/mcp/mcp_error.hpp>
#include <switchboard/mcp/server_config.hpp>

#include <switchboard/telemetry/span_data.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spdlog { class logger; }

namespace switchboard::mcp {

// One tool as the server described it. Hints are null when the server did
// not send them (the spec's defaults are not applied here; see mcp_tool.hpp).
struct tool_description {
  std::string name;
  std::string title;
  std::string description;
  boost::json::object input_schema;
  std::optional<boost::json::object> output_schema;
  std::optional<bool> read_only_hint;
  std::optional<bool> destructive_hint;
  std::optional<bool> idempotent_hint;
  std::optional<bool> open_world_hint;
};

// The result of tools/call.
struct call_result {
  bool is_error = false;
  // The text content blocks joined with newlines; other blocks summarized
  // ("[image image/png, 1234 bytes]").
  std::string text;
  std::optional<boost::json::value> structured;  // structuredContent
  boost::json::array content;                   // the blocks as sent
};

class client {
 public:
  // Starts the server (stdio) or reaches it (HTTP), runs initialize and
  // sends notifications/initialized. `logger` may be null (spdlog's default).
  // Throws mcp_error: not_configured, spawn_failed, connect_failed,
  // unsupported_version, timeout, ...; nothing is left running then.
  static boost::asio::awaitable<std::shared_ptr<client>> connect(server_config config,
                                                                 std::shared_ptr<spdlog::logger> logger = {});

  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  const server_config& config() const noexcept;
  const std::string& name() const noexcept { return config().name; }
  // What initialize agreed on: "2025-11-25" or "2025-06-18".
  const std::string& protocol_version() const noexcept;
  // The server's serverInfo (name, version), as sent.
  const boost::json::object& server_info() const noexcept;

  // The server's tools: the cached list, or a fresh (paginated) one the
  // first time and after the server announced notifications/tools/list_changed.
  boost::asio::awaitable<std::vector<tool_description>> list_tools();

  // Calls `tool` with `arguments` (an object). A tool that failed is a
  // result with is_error set, not an exception. `trace`, when valid, is the
  // execute_tool span of the call: Streamable HTTP sends it as W3C
  // traceparent (and tracestate), so the server's spans join the run's trace.
  boost::asio::awaitable<call_result> call_tool(std::string tool, boost::json::value arguments,
                                                telemetry::span_context trace);
  boost::asio::awaitable<call_result> call_tool(std::string tool, boost::json::value arguments);

  // Sends ping and waits for the answer.
  boost::asio::awaitable<void> ping();

  // Ends the session; pending operations end with mcp_errc::closed.
  // Idempotent; never throws.
  boost::asio::awaitable<void> close();

  class impl;

 private:
  explicit client(std::shared_ptr<impl> impl);
  std::shared_ptr<impl> impl_;
};

}  // namespace switchboard::mcp
