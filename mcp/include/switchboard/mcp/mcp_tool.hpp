// An MCP server's tool as an agents::tool, named "mcp:<server>/<tool>", and
// the helper that registers every tool of a connected client.
//
// Flags from the server's annotations (hints from an untrusted server, so
// they only ever add caution, and server_config::needs_approval overrides):
//   needs_approval  destructiveHint is true and readOnlyHint is not true,
//                   or the server's configuration says needs_approval;
//   idempotent      idempotentHint is true, or readOnlyHint is true.
//
// call() maps the outcome for the model: structuredContent when present,
// else the joined text (a JSON string); isError becomes
// tool_error{"tool_error"}; a timeout tool_error{"timeout", retryable};
// a server gone tool_error{"unavailable"}; a JSON-RPC error
// tool_error{"invalid_arguments"} for -32602 and {"server_error"} otherwise.
// A tool the server no longer lists (after list_changed) is
// tool_error{"not_found"}. Cancellation propagates (operation_aborted).
//
// Thread-safety: as agents::tool; the tool shares ownership of its client.
#pragma once

#include <switchboard/mcp/client.hpp>
#include <switchboard/agents/tool.hpp>
#include <switchboard/agents/tool_registry.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::mcp {

class mcp_tool final : public agents::tool {
 public:
  mcp_tool(std::shared_ptr<client> client, tool_description description);

  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return description_.description; }
  boost::json::object parameters() const override { return description_.input_schema; }
  bool needs_approval() const noexcept override { return needs_approval_; }
  bool idempotent() const noexcept override { return idempotent_; }

  boost::asio::awaitable<agents::tool_result> call(agents::tool_context& context, const boost::json::value& arguments) override;

  const tool_description& remote() const noexcept { return description_; }

 private:
  std::shared_ptr<client> client_;
  tool_description description_;
  std::string name_;
  bool needs_approval_;
  bool idempotent_;
};

// "mcp:<server>/<tool>".
std::string registry_name(std::string_view server, std::string_view tool);

// Registers every tool `client` lists into `registry` with origin
// "mcp:<server>". A tool whose registry name would be invalid, or whose
// input schema the project's validator cannot compile, is skipped with a
// warning in the returned list (the others are still registered); a name
// already in the registry throws agent_error(duplicate_tool).
boost::asio::awaitable<std::vector<std::string>> add_tools(agents::tool_registry& registry, std::shared_ptr<client> client);

// Owns a background thread and io_context on which MCP clients run, for
// set-up code that is not itself asynchronous (the command-line tool): the
// servers are connected, listed and registered synchronously, and closed
// cleanly (child processes stopped) when the host is destroyed. Tools keep
// their clients alive, so destroy the registry before the host.
// Thread-safety: connect_and_register() is for one set-up thread.
class server_host {
 public:
  explicit server_host(std::shared_ptr<spdlog::logger> logger = {});
  ~server_host();
  server_host(const server_host&) = delete;
  server_host& operator=(const server_host&) = delete;

  // Connects `config` and registers its tools; returns warnings (skipped
  // tools). Throws mcp_error or agent_error.
  std::vector<std::string> connect_and_register(server_config config, agents::tool_registry& registry);
  // Connects without registering (switchboard tools --mcp).
  std::shared_ptr<client> connect(server_config config);

  // Runs `op` on the host's thread and waits for it (rethrowing its error).
  template <class T>
  T run(boost::asio::awaitable<T> op) {
    std::optional<T> out;
    run_void(store(std::move(op), out));
    return std::move(*out);
  }
  void run_void(boost::asio::awaitable<void> op);

  void close_all();  // what the destructor does; idempotent

 private:
  template <class T>
  static boost::asio::awaitable<void> store(boost::asio::awaitable<T> op, std::optional<T>& out) {
    out.emplace(co_await std::move(op));
  }
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace switchboard::mcp
