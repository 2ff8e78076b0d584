// The MCP error category, and the helpers every MCP source uses to name the
// server and quote what it sent.
#include <switchboard/mcp/mcp_error.hpp>

#include "transport.hpp"

#include <switchboard/protocol/terminal_text.hpp>

namespace switchboard::mcp {

std::string_view to_string(mcp_errc code) noexcept {
  switch (code) {
    case mcp_errc::not_configured: return "not_configured";
    case mcp_errc::spawn_failed: return "spawn_failed";
    case mcp_errc::connect_failed: return "connect_failed";
    case mcp_errc::connection_lost: return "connection_lost";
    case mcp_errc::timeout: return "timeout";
    case mcp_errc::protocol_error: return "protocol_error";
    case mcp_errc::message_too_large: return "message_too_large";
    case mcp_errc::unsupported_version: return "unsupported_version";
    case mcp_errc::server_error: return "server_error";
    case mcp_errc::http_status: return "http_status";
    case mcp_errc::session_expired: return "session_expired";
    case mcp_errc::too_many_tools: return "too_many_tools";
    case mcp_errc::closed: return "closed";
  }
  return "unknown_error";
}

namespace {

class mcp_category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "switchboard.mcp"; }
  std::string message(int value) const override { return std::string(to_string(static_cast<mcp_errc>(value))); }
};

}  // namespace

const boost::system::error_category& mcp_category() noexcept {
  static const mcp_category_impl category;
  return category;
}

namespace detail {

std::string server_prefix(const std::string& name) {
  return "MCP server '" + protocol::escape_for_terminal(name) + "': ";
}

std::string quote(std::string_view untrusted, std::size_t max) {
  std::string out = "'";
  const bool cut = untrusted.size() > max;
  // Cut on a byte boundary; a broken UTF-8 tail is shown as \xNN escapes.
  protocol::append_escaped_for_terminal(out, untrusted.substr(0, max));
  out += cut ? "...'" : "'";
  return out;
}

}  // namespace detail

}  // namespace switchboard::mcp
