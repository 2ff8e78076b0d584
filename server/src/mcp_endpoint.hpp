// `/mcp` on `switchboard serve`: the MCP Streamable HTTP transport over the
// same protocol handling as `switchboard mcp` (mcp::server_session, with
// host::workflow_tools as its provider). docs/interop.md.
//
//   POST /mcp   one JSON-RPC message. initialize opens a session (its id in
//               the Mcp-Session-Id response header, required on every later
//               request). A request is answered with a text/event-stream:
//               the progress notifications and elicitation requests of the
//               call, then its response; a notification or a response (an
//               elicitation answer) with 202 Accepted.
//   DELETE /mcp ends the session (its calls are interrupted, resumable).
//   GET /mcp    405: the server opens no stream of its own.
//
// Bounds: the HTTP server's body limit is the message limit; at most
// max_sessions sessions (the one idle longest, with no call in flight, is
// dropped for a new one); a stream with nothing to send writes a comment
// every heartbeat, so a client that went away is noticed.
//
// Thread-safety: handle() may be called concurrently from any connection.
#pragma once

#include <switchboard/mcp/server.hpp>
#include <switchboard/net/http_server.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>

namespace switchboard::server {

class mcp_endpoint {
 public:
  static constexpr std::size_t max_sessions = 64;

  mcp_endpoint(boost::asio::any_io_executor executor, std::shared_ptr<mcp::tool_provider> tools,
               mcp::server_info info, std::chrono::milliseconds heartbeat);
  ~mcp_endpoint();

  // A request whose path is /mcp.
  boost::asio::awaitable<net::server_response> handle(net::server_request& request);
  // Ends every session (server shutdown): their calls are interrupted.
  void close_all();

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace switchboard::server
