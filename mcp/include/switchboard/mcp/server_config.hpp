// How to reach one MCP server: a command the client starts (stdio) or a
// Streamable HTTP URL, plus the bounds the client holds it to. Built from a
// workflow file's "mcp_servers" entry (from_json), from a command-line SPEC
// (parse_spec), or by hand.
//
// The configuration comes from the invoker (a workflow file, the command
// line), never from a server or a stored run.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::mcp {

// The protocol revision the client asks for, and the older one it accepts.
inline constexpr std::string_view latest_protocol_version = "2025-11-25";
inline constexpr std::string_view oldest_protocol_version = "2025-06-18";

// Bounds on what a server may send (docs/mcp.md, "Limits").
inline constexpr std::size_t max_message_bytes = std::size_t{4} << 20;  // one JSON-RPC message
inline constexpr std::size_t max_tool_pages = 64;                      // tools/list pages per listing
inline constexpr std::size_t max_tools = 1024;                         // tools per server
inline constexpr std::size_t max_server_name_length = 64;

struct server_config {
  // [A-Za-z0-9_.-]{1,64}: the <server> of the tools' names "mcp:<server>/<tool>".
  std::string name;

  // stdio: the program and its arguments (looked up on PATH), and variables
  // added to (or replacing those of) the client's own environment.
  std::vector<std::string> command;
  std::map<std::string, std::string> env;

  // Streamable HTTP: the endpoint ("https://host/mcp") and headers sent
  // with every request (an Authorization header, for instance).
  std::string url;
  std::map<std::string, std::string> headers;

  // Every request (initialize included) ends by this deadline.
  std::chrono::milliseconds request_timeout{60'000};
  // How long close() waits for a stdio server to exit after its standard
  // input is closed, and again after SIGTERM, before SIGKILL.
  std::chrono::milliseconds shutdown_grace{2'000};
  // Every tool of this server needs approval, whatever its annotations say.
  bool needs_approval = false;
  // TLS: verify the server's certificate (always on unless a test turns it off).
  bool verify_peer = true;

  bool is_stdio() const noexcept { return !command.empty(); }
};

// True for [A-Za-z0-9_.-]{1,64}.
bool is_valid_server_name(std::string_view name) noexcept;

// Parses a workflow file's entry: {"command": [...], "env": {...}} or
// {"url": "...", "headers": {...}}, with optional "timeout_ms",
// "needs_approval". Unknown keys are refused. Throws std::invalid_argument
// whose message starts with the offending field ("command: expected a
// non-empty array of strings"), for the caller to prefix with the file.
server_config from_json(std::string name, const boost::json::value& entry);
// The entry from_json() reads back (only what differs from the defaults).
boost::json::object to_json(const server_config& config);

// A command-line SPEC: "stdio:COMMAND ARG..." (split on whitespace; no
// quoting) or an http:// or https:// URL. Throws std::invalid_argument
// naming the SPEC.
server_config parse_spec(std::string name, std::string_view spec);

}  // namespace switchboard::mcp
