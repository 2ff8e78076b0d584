// Loading and compiling stay linear in the size of the workflow: a 200,000
// node chain loads and compiles (it did not finish in minutes when each route
// target was found by a scan), and a schema whose branches share definitions
// is checked without an exponential walk. No timing is asserted: a quadratic
// step would make these tests run for hours instead.
#include <switchboard/orchestrator/workflow_file.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/error.hpp>
#include <switchboard/orchestrator/workflow.hpp>

#include "orchestrator_test_support.hpp"

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace switchboard::orchestrator {
namespace {

using ::testing::HasSubstr;
namespace asio = boost::asio;
namespace json = boost::json;

// {"name": "chain", "nodes": {"n0": {agent, -> n1}, ..., "n<count-1>": {-> done}, "done": end}}
std::string chain_workflow(int count) {
  std::string text = R"({"name": "chain", "entry": "n0", "max_steps": 10, "nodes": {)";
  text.reserve(static_cast<std::size_t>(count) * 96);
  for (int i = 0; i < count; ++i) {
    const std::string next = i + 1 < count ? "n" + std::to_string(i + 1) : "done";
    text += "\"n" + std::to_string(i) + R"(": {"type": "agent", "agent": "step", "on_error": "done", )" +
            R"("routes": [{"when": "otherwise", "to": ")" + next + "\"}]},";
  }
  text += R"("done": {"type": "end"}}})";
  return text;
}

TEST(workflow_file_scale, a_chain_of_200000_nodes_loads_and_compiles) {
  constexpr int count = 200'000;
  agents::agent_registry registry(testing::test_schemas());
  registry.add(testing::constant_agent("step"));
  auto definition = parse_workflow_text(chain_workflow(count), "chain.json");
  ASSERT_EQ(definition.nodes.size(), static_cast<std::size_t>(count + 1));
  EXPECT_EQ(definition.nodes[count - 1].routes[0].target, "done");
  auto compiled = compile(std::move(definition), registry);
  EXPECT_EQ(compiled->definition().nodes.size(), static_cast<std::size_t>(count + 1));
  EXPECT_EQ(compiled->definition().entry, "n0");
}

TEST(workflow_file_scale, a_large_workflow_with_a_dangling_route_names_it) {
  auto text = chain_workflow(50'000);
  const auto at = text.find("\"to\": \"n40000\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 14, "\"to\": \"n99999\"");
  try {
    parse_workflow_text(text, "chain.json");
    FAIL() << "a route to an unknown node was accepted";
  } catch (const orchestrator_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("node 'n39999': /nodes/n39999/routes/0/to: unknown node 'n99999'"));
  }
}

// An output schema of `levels` definitions, each an anyOf of two references
// to the next: 2^levels paths to the last one, which declares `status`.
json::value branching_schema(int levels) {
  json::object defs;
  for (int i = 0; i < levels; ++i) {
    const std::string next = "#/$defs/d" + std::to_string(i + 1);
    defs["d" + std::to_string(i)] = json::object{{"anyOf", json::array{json::object{{"$ref", next}},
                                                                          json::object{{"$ref", next}}}}};
  }
  defs["d" + std::to_string(levels)] =
      json::object{{"type", "object"}, {"properties", json::object{{"status", json::object{{"type", "string"}}}}}};
  return json::object{{"$ref", "#/$defs/d0"}, {"$defs", std::move(defs)}};
}

class branching_agent final : public agents::agent {
 public:
  std::string_view name() const noexcept override { return "branching"; }
  std::string_view description() const noexcept override { return "declares a branching schema"; }
  std::string output_schema() const override { return "branching.output@1"; }
  asio::awaitable<protocol::envelope> run(agents::agent_context&) override { co_return protocol::envelope{}; }
};

TEST(workflow_file_scale, route_fields_are_checked_against_a_branching_schema_without_an_exponential_walk) {
  auto schemas = testing::test_schemas();
  schemas->add({"branching.output", 1}, branching_schema(30));
  agents::agent_registry registry(schemas);
  registry.add(std::make_shared<branching_agent>());
  auto flow = [](std::string pointer) {
    workflow_builder wf{"branching"};
    wf.agent("branching").route(condition::exists(std::move(pointer)), "done").otherwise("done");
    wf.end("done");
    return wf;
  };
  EXPECT_NO_THROW(flow("/status").compile(registry));
  try {
    flow("/missing").compile(registry);
    FAIL() << "a condition on an undeclared field was accepted";
  } catch (const orchestrator_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("reads data/missing but the output schema 'branching.output@1'"));
  }
}

}  // namespace
}  // namespace switchboard::orchestrator
