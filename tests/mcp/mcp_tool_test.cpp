// MCP tools in the tool registry: names, flags from annotations, calls
// through the agents::tool interface, errors mapped for the model, and the
// server host that set-up code uses.
#include <switchboard/mcp/mcp_tool.hpp>

#include "mcp_peers.hpp"

#include <boost/json/parse.hpp>
#include <spdlog/spdlog.h>

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace sb = switchboard::agents;
namespace sbm = switchboard::mcp;
using namespace switchboard::test::mcp;
using namespace std::chrono_literals;

sb::tool_result call(sb::tool& t, std::string_view args) {
  return run([](sb::tool& t, json::value a) -> asio::awaitable<sb::tool_result> {
    sb::tool_context context{.logger = spdlog::default_logger()};
    co_return co_await t.call(context, a);
  }(t, json::parse(args)));
}

TEST(McpTool, RegistersTheServersToolsUnderItsPrefixWithFlagsFromAnnotations) {
  require_peers();
  sbm::server_host host;
  {
    sb::tool_registry registry;
    const auto warnings = host.connect_and_register(misbehaving(), registry);
    EXPECT_TRUE(warnings.empty());
    ASSERT_TRUE(registry.contains("mcp:bad/echo"));
    const auto infos = registry.list();
    const auto info = [&](std::string_view name) { return *std::ranges::find(infos, name, &sb::tool_info::name); };
    EXPECT_EQ(info("mcp:bad/echo").origin, "mcp:bad");
    EXPECT_TRUE(info("mcp:bad/echo").idempotent);           // readOnlyHint
    EXPECT_FALSE(info("mcp:bad/echo").needs_approval);
    EXPECT_TRUE(info("mcp:bad/delete_all").needs_approval);  // destructiveHint
    EXPECT_FALSE(info("mcp:bad/delete_all").idempotent);
    EXPECT_FALSE(info("mcp:bad/slow").needs_approval);       // no hints: no flags

    auto& echo = registry.at("mcp:bad/echo");
    const auto ok = call(echo, R"({"text":"hi"})");
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok.value(), json::parse(R"({"echoed":"hi"})"));  // structuredContent wins over text
    const auto failed = call(registry.at("mcp:bad/fails"), "{}");
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.error().code, "tool_error");
    EXPECT_NE(failed.error().message.find("the tool failed on purpose"), std::string::npos);
  }
}

TEST(McpTool, ErrorsBecomeToolErrorsForTheModel) {
  require_peers();
  sbm::server_host host;
  sb::tool_registry registry;
  auto config = misbehaving();
  config.request_timeout = 3s;  // for every request (initialize too); `slow` never answers
  config.needs_approval = true;
  host.connect_and_register(config, registry);
  EXPECT_TRUE(registry.at("mcp:bad/echo").needs_approval());  // the configuration overrides hints
  const auto timeout = call(registry.at("mcp:bad/slow"), "{}");
  ASSERT_FALSE(timeout.ok());
  EXPECT_EQ(timeout.error().code, "timeout");
  EXPECT_TRUE(timeout.error().retryable);
  const auto crash = call(registry.at("mcp:bad/crash"), "{}");
  ASSERT_FALSE(crash.ok());
  EXPECT_EQ(crash.error().code, "unavailable");
  EXPECT_NE(crash.error().message.find("MCP server 'bad'"), std::string::npos) << crash.error().message;
}

TEST(McpTool, TheReferenceServersSchemasCompileAndValidateArguments) {
  require_peers();
  sbm::server_host host;
  sb::tool_registry registry;
  const auto warnings = host.connect_and_register(everything_stdio(), registry);
  for (const auto& w : warnings) ADD_FAILURE() << w;
  ASSERT_TRUE(registry.contains("mcp:everything/get-sum"));
  EXPECT_TRUE(registry.validate_arguments("mcp:everything/get-sum", R"({"a":1,"b":2})").ok());
  EXPECT_FALSE(registry.validate_arguments("mcp:everything/get-sum", R"({"a":"one","b":2})").ok());
  const auto r = call(registry.at("mcp:everything/get-sum"), R"({"a":20,"b":22})");
  ASSERT_TRUE(r.ok());
  EXPECT_NE(std::string(r.value().as_string()).find("42"), std::string::npos);
}

TEST(McpTool, ServerHostStopsItsServers) {
  require_peers();
  {
    sbm::server_host host;
    sb::tool_registry registry;
    host.connect_and_register(misbehaving(), registry);
    host.connect_and_register(everything_stdio(), registry);
    EXPECT_FALSE(no_children_left());
    host.close_all();
  }
  EXPECT_TRUE(no_children_left());
}

}  // namespace
