// MCP tools in the tool registry, and the host that runs MCP clients for
// synchronous set-up code.
#include <switchboard/mcp/mcp_tool.hpp>

#include "transport.hpp"

#include <switchboard/agents/agent_registry.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <spdlog/spdlog.h>

#include <thread>

namespace switchboard::mcp {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// Hints from an untrusted server only ever add caution.
bool approval_from(const tool_description& d, bool configured) {
  return configured || (d.destructive_hint.value_or(false) && !d.read_only_hint.value_or(false));
}

bool idempotent_from(const tool_description& d) {
  return d.idempotent_hint.value_or(false) || d.read_only_hint.value_or(false);
}

agents::tool_result failure_of(const mcp_error& e, const std::string& tool) {
  switch (e.errc()) {
    case mcp_errc::timeout: return agents::tool_result::failure("timeout", e.what(), true);
    case mcp_errc::server_error:
      return agents::tool_result::failure(e.rpc_code() == -32602 ? "invalid_arguments" : "server_error", e.what());
    case mcp_errc::connection_lost:
    case mcp_errc::closed:
    case mcp_errc::session_expired:
    case mcp_errc::connect_failed: return agents::tool_result::failure("unavailable", e.what());
    default: return agents::tool_result::failure("mcp_error", tool + ": " + e.what());
  }
}

}  // namespace

std::string registry_name(std::string_view server, std::string_view tool) {
  return "mcp:" + std::string(server) + "/" + std::string(tool);
}

mcp_tool::mcp_tool(std::shared_ptr<client> c, tool_description description)
    : client_(std::move(c)),
      description_(std::move(description)),
      name_(registry_name(client_->name(), description_.name)),
      needs_approval_(approval_from(description_, client_->config().needs_approval)),
      idempotent_(idempotent_from(description_)) {}

asio::awaitable<agents::tool_result> mcp_tool::call(agents::tool_context& context, const json::value& arguments) {
  try {
    // After notifications/tools/list_changed the list is fetched again: a
    // tool the server dropped is reported, not called.
    const auto tools = co_await client_->list_tools();
    if (std::ranges::none_of(tools, [&](const auto& t) { return t.name == description_.name; })) {
      co_return agents::tool_result::failure("not_found", name_ + ": the MCP server no longer offers this tool");
    }
    auto call = client_->call_tool(description_.name, arguments, context.trace);
    const call_result r = co_await std::move(call);
    if (r.is_error) co_return agents::tool_result::failure("tool_error", name_ + " failed: " + r.text);
    if (r.structured) co_return agents::tool_result::success(*r.structured);
    co_return agents::tool_result::success(json::string(r.text));
  } catch (const mcp_error& e) {
    if (context.logger) context.logger->warn("{}", e.what());
    co_return failure_of(e, name_);
  }
}

asio::awaitable<std::vector<std::string>> add_tools(agents::tool_registry& registry, std::shared_ptr<client> c) {
  std::vector<std::string> warnings;
  const std::string origin = "mcp:" + c->name();
  for (auto& d : co_await c->list_tools()) {
    const std::string name = registry_name(c->name(), d.name);
    if (!models::is_valid_tool_name(name)) {
      warnings.push_back(detail::server_prefix(c->name()) + "tool " + detail::quote(d.name) +
                         " skipped: its name is not [A-Za-z0-9_.:/-]{1,128} once prefixed");
      continue;
    }
    auto t = std::make_shared<mcp_tool>(c, std::move(d));
    try {
      registry.add(t, origin);
    } catch (const agents::agent_error& e) {
      if (e.code() != make_error_code(agents::agent_errc::invalid_tool)) throw;
      warnings.push_back(detail::server_prefix(c->name()) + "tool " + detail::quote(t->remote().name) +
                         " skipped: " + e.what());
    }
  }
  co_return warnings;
}

struct server_host::state {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::shared_ptr<spdlog::logger> logger;
  std::vector<std::shared_ptr<client>> clients;
  std::thread thread{[this] { io.run(); }};
};

server_host::server_host(std::shared_ptr<spdlog::logger> logger) : state_(std::make_unique<state>()) {
  state_->logger = logger ? std::move(logger) : spdlog::default_logger();
}

server_host::~server_host() { close_all(); }

void server_host::run_void(asio::awaitable<void> op) {
  asio::co_spawn(state_->io, std::move(op), asio::use_future).get();
}

std::shared_ptr<client> server_host::connect(server_config config) {
  auto c = run(client::connect(std::move(config), state_->logger));
  state_->clients.push_back(c);
  return c;
}

std::vector<std::string> server_host::connect_and_register(server_config config, agents::tool_registry& registry) {
  auto c = connect(std::move(config));
  return run(add_tools(registry, c));
}

void server_host::close_all() {
  if (!state_->thread.joinable()) return;
  for (auto& c : state_->clients) {
    try {
      run_void(c->close());
    } catch (const std::exception& e) {
      state_->logger->warn("{}", e.what());
    }
  }
  state_->work.reset();
  state_->io.stop();
  state_->thread.join();
  state_->clients.clear();
}

}  // namespace switchboard::mcp
