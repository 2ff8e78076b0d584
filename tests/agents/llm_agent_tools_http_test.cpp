// The tool loop inside llm_agent, both wire formats (OpenAI, Anthropic) end
// to end against the loopback model server: a parallel tool round then a
// final answer, and invalid arguments sent back as an error result.
#include "tool_loop_fixture.hpp"

namespace switchboard::agents {
namespace {

using namespace tool_loop_test;

// --- both wire formats over HTTP ----------------------------------------------

enum class wire { openai, anthropic };

struct ToolLoopOverHttp : ::testing::TestWithParam<wire> {
  loopback_model_server server;
  asio::io_context io;  // outlives the model: it keeps idle connections on it
  std::shared_ptr<protocol::schema_registry> schemas = agent_test::test_schemas();
  tool_registry tools;
  std::shared_ptr<probe_tool> lookup = std::make_shared<probe_tool>("lookup", 100ms);
  agent_test::context_holder holder;
  std::shared_ptr<llm_agent> agent;

  ToolLoopOverHttp() {
    tools.add(lookup);
    tools.add(std::make_shared<probe_tool>("slow"));
    tools.add(std::make_shared<probe_tool>("broken"));
    llm_agent_options options;
    options.tools = &tools;
    agent = std::make_shared<llm_agent>(std::vector{prompt_file::parse(tools_prompt, "planner.v1.json")}, schemas,
                                        options);
    if (GetParam() == wire::openai) {
      openai_options o;
      o.http.base_url = server.base_url() + "/v1";
      o.http.retry.max_attempts = 1;
      o.model = "gpt-test";
      holder.models.add("default", std::make_shared<openai_model>(o));
    } else {
      anthropic_options o;
      o.http.base_url = server.base_url();
      o.http.retry.max_attempts = 1;
      o.api_key = "sk-test";
      o.model = "claude-test";
      holder.models.add("default", std::make_shared<anthropic_model>(o));
    }
    holder.input = json::parse(R"({"request": "Plan the design review"})");
  }
  ~ToolLoopOverHttp() override { holder.models = model_set{}; }

  protocol::envelope run(agent_context& context) {
    auto result = asio::co_spawn(io, agent->run(context), asio::use_future);
    io.restart();
    io.run();
    return result.get();
  }
  json::value body(std::size_t i) const { return server.requests().at(i).json(); }
};

TEST_P(ToolLoopOverHttp, ParallelToolRoundThenFinalAnswer) {
  server.enqueue(server_action::tool_calls(
      {{"c1", "lookup", R"({"date": "2026-11-24"})"}, {"c2", "lookup", R"({"date": "2026-11-25"})"}}));
  server.enqueue(server_action::reply(std::string(good_answer)));
  auto context = holder.make();
  const auto out = run(context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  ASSERT_EQ(lookup->calls.size(), 2u);
  EXPECT_EQ(lookup->calls[0].at("date"), "2026-11-24");
  EXPECT_EQ(lookup->max_in_flight, 2);
  ASSERT_EQ(server.request_count(), 2u);

  const auto first = body(0);
  const auto& offered = first.at("tools").as_array();
  ASSERT_EQ(offered.size(), 3u);
  const std::string second = json::serialize(body(1).at("messages"));
  if (GetParam() == wire::openai) {
    EXPECT_EQ(offered[0].at("function").at("name"), "lookup");
    EXPECT_THAT(second, AllOf(HasSubstr(R"("tool_calls")"), HasSubstr(R"("tool_call_id":"c1")"),
                              HasSubstr(R"("tool_call_id":"c2")"), HasSubstr("standup")));
  } else {
    EXPECT_EQ(offered[0].at("name"), "lookup");
    EXPECT_THAT(second, AllOf(HasSubstr(R"("tool_use")"), HasSubstr(R"("tool_use_id":"c1")"),
                              HasSubstr(R"("tool_use_id":"c2")"), HasSubstr("standup")));
  }
  EXPECT_EQ(context.tool_calls.size(), 2u);
}

TEST_P(ToolLoopOverHttp, InvalidArgumentsGoBackAsAnErrorResult) {
  server.enqueue(server_action::tool_calls({{"c1", "lookup", R"({"day": "Tuesday"})"}}));
  server.enqueue(server_action::reply(std::string(good_answer)));
  auto context = holder.make();
  const auto out = run(context);
  ASSERT_FALSE(out.failed()) << out.reasoning;
  EXPECT_TRUE(lookup->calls.empty());
  const std::string second = json::serialize(body(1).at("messages"));
  EXPECT_THAT(second, HasSubstr("invalid_arguments"));
  if (GetParam() == wire::anthropic) {
    EXPECT_THAT(second, HasSubstr(R"("is_error":true)"));
  }
}

INSTANTIATE_TEST_SUITE_P(Wire, ToolLoopOverHttp, ::testing::Values(wire::openai, wire::anthropic),
                         [](const auto& info) { return info.param == wire::openai ? "OpenAI" : "Anthropic"; });

}  // namespace
}  // namespace switchboard::agents
