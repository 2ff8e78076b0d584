// The byte pipe under an MCP session: it carries JSON-RPC messages as text
// and reports what arrives. Two implementations: stdio (a child process,
// stdio_transport.cpp) and Streamable HTTP (http_transport.cpp). Internal.
//
// Threading: every member is called on the session's strand, and every
// handler is invoked on it. send() never blocks: the work continues in
// coroutines the transport owns, which end when close() completes or the
// transport is destroyed.
#pragma once

#include <switchboard/mcp/mcp_error.hpp>
#include <switchboard/mcp/server_config.hpp>
#include <switchboard/telemetry/span_data.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace spdlog { class logger; }

namespace switchboard::mcp::detail {

using strand_type = boost::asio::strand<boost::asio::any_io_executor>;

struct transport_handlers {
  // One message's text, not yet parsed (at most max_message_bytes).
  std::function<void(std::string_view)> on_message;
  // The request `id` cannot be answered (its HTTP exchange failed).
  std::function<void(std::int64_t id, const mcp_error&)> on_request_failed;
  // The transport is broken for good (the server exited, a message too
  // large on a stream); every pending request fails with `error`.
  std::function<void(const mcp_error&)> on_fatal;
  // Whether request `id` still waits for its answer (HTTP: resume or not).
  std::function<bool(std::int64_t id)> is_pending;
};

class transport {
 public:
  virtual ~transport() = default;

  virtual void start(transport_handlers handlers) = 0;
  // Queues `text` (one serialized message). `request_id` is set for a
  // request (HTTP ties the response stream to it). `trace`, when valid, is
  // the span the request belongs to: Streamable HTTP sends it as W3C
  // traceparent (and tracestate); stdio has no headers and ignores it.
  virtual void send(std::string text, std::optional<std::int64_t> request_id,
                    const telemetry::span_context& trace) = 0;
  // Stops waiting for request `id`'s answer (cancelled or timed out).
  virtual void abandon(std::int64_t /*id*/) {}
  // After initialize: the revision to name in later requests (HTTP header).
  virtual void set_protocol_version(const std::string& /*version*/) {}
  // Ends the session cleanly; never throws.
  virtual boost::asio::awaitable<void> close() = 0;
  // Ends at once, synchronously (the client's destructor).
  virtual void kill() noexcept = 0;
};

std::unique_ptr<transport> make_stdio_transport(const server_config& config, strand_type strand,
                                                std::shared_ptr<spdlog::logger> logger);
std::unique_ptr<transport> make_http_transport(const server_config& config, strand_type strand,
                                               std::shared_ptr<spdlog::logger> logger);

// "MCP server 'name': " — the prefix of every error message.
std::string server_prefix(const std::string& name);
// A short, escaped excerpt of untrusted text for an error message.
std::string quote(std::string_view untrusted, std::size_t max = 200);

}  // namespace switchboard::mcp::detail
