// Errors of the MCP client (client.hpp), wired into
// boost::system::error_code, and the exception that carries them.
//
// Every message names the server ("MCP server 'files': ...") and is safe to
// log: what a server sent is quoted only as a short, escaped excerpt.
//
// Thread-safety: value types; the category is stateless.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <string_view>
#include <type_traits>

namespace switchboard::mcp {

enum class mcp_errc {
  not_configured = 1,    // a bad server configuration or SPEC (no command, no URL, bad name)
  spawn_failed,          // the stdio server's command could not be started
  connect_failed,        // DNS, TCP connect or TLS handshake of the HTTP server failed
  connection_lost,       // the server exited or closed the connection mid-request
  timeout,               // a request's deadline passed
  protocol_error,        // invalid JSON or JSON-RPC, a result of the wrong shape
  message_too_large,     // a message over max_message_bytes
  unsupported_version,   // the server answered initialize with a revision we do not speak
  server_error,          // the server answered with a JSON-RPC error object
  http_status,           // the HTTP server answered with a non-2xx status
  session_expired,       // the HTTP server no longer knows the session (404)
  too_many_tools,        // tools/list past the page or tool bound
  closed,                // the client was closed
};

std::string_view to_string(mcp_errc code) noexcept;
const boost::system::error_category& mcp_category() noexcept;
inline boost::system::error_code make_error_code(mcp_errc code) noexcept {
  return {static_cast<int>(code), mcp_category()};
}

// Thrown by the client's operations. rpc_code() is the JSON-RPC error code
// for server_error (e.g. -32602 invalid params), 0 otherwise.
class mcp_error : public boost::system::system_error {
 public:
  mcp_error(mcp_errc code, const std::string& message, int rpc_code = 0)
      : boost::system::system_error(make_error_code(code), message), rpc_code_(rpc_code) {}

  mcp_errc errc() const noexcept { return static_cast<mcp_errc>(code().value()); }
  int rpc_code() const noexcept { return rpc_code_; }

 private:
  int rpc_code_;
};

}  // namespace switchboard::mcp

template <>
struct boost::system::is_error_code_enum<switchboard::mcp::mcp_errc> : std::true_type {};
