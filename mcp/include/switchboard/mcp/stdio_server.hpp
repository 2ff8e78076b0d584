// An MCP server over standard input and output: newline-delimited JSON-RPC
// messages (the stdio transport of the specification), served by a
// server_session (server.hpp) until the input ends or SIGINT/SIGTERM/SIGHUP
// arrives.
//
//   boost::asio::io_context io;
//   auto tools = std::make_shared<my_tools>(io.get_executor());
//   mcp::serve_stdio(io, tools, {"switchboard", "1.2.0"});
//
// Input is read on a thread of its own (it works for pipes, terminals and
// files alike) and handed to the session on its strand; a line over
// server_limits::max_message_bytes is skipped up to its newline and
// answered with an invalid-request error, never buffered whole. Output is
// written whole message by message (a reader that went away ends the
// session). Nothing else may write to `out_fd`: logs go to standard error.
//
// When the input ends (or a signal), the session closes: calls in flight
// are asked to stop (stop_reason::session_closed) and serve_stdio returns
// once they have ended and `io` has no more work.
//
// Thread-safety: call from one thread, which then runs `io`; blocking.
#pragma once

#include <switchboard/mcp/server.hpp>

#include <boost/asio/io_context.hpp>

#include <memory>

namespace switchboard::mcp {

struct stdio_server_options {
  int in_fd = 0;
  int out_fd = 1;
  bool handle_signals = true;  // SIGINT, SIGTERM, SIGHUP close the session
  server_limits limits;
};

// Returns when the session has ended, with `io` stopped (do not run it
// again: handlers of the ended session may still be queued in it). Throws
// only for set-up failures.
void serve_stdio(boost::asio::io_context& io, std::shared_ptr<tool_provider> provider, server_info info,
                 stdio_server_options options = {});

}  // namespace switchboard::mcp
