#include <switchboard/orchestrator/workflow_file.hpp>

#include <switchboard/orchestrator/error.hpp>

#include "orchestrator_test_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace switchboard::orchestrator {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr const char* full_file = R"({
  "name": "scheduling",
  "entry": "parse",
  "clarification_threshold": 0.6,
  "max_steps": 20,
  "max_clarification_rounds": 2,
  "schemas": ["schemas"],
  "plugins": ["libcalendar.so", {"name": "rooms", "config": {"data": "data/rooms.json", "limit": 3}}],
  "prompts": ["prompts", "../shared/prompts"],
  "nodes": {
    "parse": {
      "type": "agent", "agent": "a",
      "timeout_ms": 500,
      "retry": {"max_attempts": 3, "backoff_ms": 10, "backoff_multiplier": 1.5},
      "clarification_threshold": 0.8,
      "on_error": "oops",
      "routes": [
        {"when": {"path": "/status", "equals": "ok"}, "to": "both"},
        {"when": {"all": [{"path": "/score", "gt": 3}, {"not": {"path": "/items", "non_empty": true}}]}, "to": "pick"},
        {"when": {"any": [{"confidence": {"lt": 0.9}}, {"path": "/status", "in": ["x", "y"]}]}, "to": "ask"},
        {"when": "otherwise", "to": "done"}
      ]
    },
    "both": {"type": "parallel", "agents": ["a", "b"], "cancel_rest_on_failure": true,
             "routes": [{"when": "otherwise", "to": "sum"}]},
    "pick": {"type": "coordinator", "candidates": ["a", "b"], "default_agent": "b",
             "instructions": "prefer a", "clarify_on_low_confidence": false,
             "routes": [{"when": {"path": "/status", "exists": true}, "to": "sum"}, {"when": "otherwise", "to": "done"}]},
    "sum": {"type": "synthesis", "routes": [{"when": "otherwise", "to": "done"}]},
    "ask": {"type": "clarify"},
    "oops": {"type": "fail", "message": "parsing failed"},
    "done": {"type": "end"}
  }
})";

workflow_definition builder_equivalent() {
  workflow_builder b{"scheduling"};
  b.clarification_threshold(0.6).max_steps(20).max_clarification_rounds(2);
  b.agent("parse", "a")
      .timeout(std::chrono::milliseconds{500})
      .retry({3, std::chrono::milliseconds{10}, 1.5})
      .clarification_threshold(0.8)
      .on_error("oops")
      .route(condition::equals("/status", "ok"), "both")
      .route(condition::all({condition::compare("/score", comparison::gt, 3),
                             condition::negate(condition::non_empty("/items"))}),
             "pick")
      .route(condition::any({condition::confidence(comparison::lt, 0.9), condition::in("/status", {"x", "y"})}), "ask")
      .otherwise("done");
  b.parallel("both", {"a", "b"}).cancel_rest_on_failure().otherwise("sum");
  b.coordinator("pick", testing::coordinate({"a", "b"}, "b", {}, "prefer a"))
      .no_clarification()
      .route(condition::exists("/status"), "sum")
      .otherwise("done");
  b.synthesis("sum").otherwise("done");
  b.clarify("ask");
  b.fail("oops", "parsing failed");
  b.end("done");
  auto d = b.definition();
  d.schema_dirs = {"schemas"};
  d.plugins = {{"libcalendar.so", {}},
               {"rooms", boost::json::object{{"data", "data/rooms.json"}, {"limit", 3}}}};
  d.prompt_dirs = {"prompts", "../shared/prompts"};
  return d;
}

void expect_same(const workflow_definition& a, const workflow_definition& b) {
  EXPECT_EQ(to_json(a), to_json(b));
}

std::string file_error(std::string_view text) {
  try {
    parse_workflow_text(text, "flow.json");
  } catch (const orchestrator_error& e) {
    EXPECT_EQ(e.errc(), orchestrator_errc::invalid_workflow_file);
    return e.what();
  }
  ADD_FAILURE() << "the file was accepted";
  return {};
}

TEST(workflow_file, parses_every_field_like_the_builder) {
  auto parsed = parse_workflow_text(full_file, "flow.json");
  expect_same(parsed, builder_equivalent());
  EXPECT_EQ(parsed.plugins, builder_equivalent().plugins);
  EXPECT_EQ(parsed.schema_dirs, std::vector<std::string>{"schemas"});
  EXPECT_EQ(parsed.prompt_dirs, (std::vector<std::string>{"prompts", "../shared/prompts"}));
  EXPECT_EQ(parsed.nodes[0].routes[1].when, builder_equivalent().nodes[0].routes[1].when);
  EXPECT_EQ(parsed.nodes[2].coordinator.model_role, "coordinator");
}

TEST(workflow_file, to_json_round_trips) {
  auto d = builder_equivalent();
  auto again = parse_workflow(to_json(d), "<json>");
  expect_same(d, again);
  for (std::size_t i = 0; i < d.nodes.size(); ++i) EXPECT_EQ(d.nodes[i].routes, again.nodes[i].routes);
}

TEST(workflow_file, the_parsed_file_compiles) {
  agents::agent_registry registry(testing::test_schemas());
  registry.add(testing::constant_agent("a"));
  registry.add(testing::constant_agent("b"));
  EXPECT_NO_THROW(compile(parse_workflow_text(full_file, "flow.json"), registry));
}

TEST(workflow_file, entry_defaults_to_the_first_node) {
  auto d = parse_workflow_text(R"({"name": "x", "nodes": {"first": {"type": "agent", "routes": [
                                     {"when": "otherwise", "to": "end"}]}, "end": {"type": "end"}}})",
                               "x.json");
  EXPECT_EQ(d.entry, "first");
  EXPECT_EQ(d.nodes[0].agent, "first");  // agent defaults to the node name
}

TEST(workflow_file, malformed_json_names_file_line_and_column) {
  auto message = file_error("{\n  \"name\": \"x\",\n  \"nodes\": {,}\n}");
  EXPECT_THAT(message, HasSubstr("flow.json: line 3, column"));
  EXPECT_THAT(message, HasSubstr("not valid JSON"));
}

TEST(workflow_file, unknown_condition_key_names_node_and_path) {
  auto message = file_error(R"({"name": "x", "nodes": {"parse": {"type": "agent", "routes": [
      {"when": {"path": "/status", "equals": "a"}, "to": "done"},
      {"when": {"path": "/status", "eqals": "a"}, "to": "done"}]}, "done": {"type": "end"}}})");
  EXPECT_THAT(message, HasSubstr("flow.json: node 'parse': /nodes/parse/routes/1/when: unknown condition key 'eqals'"));
}

TEST(workflow_file, reports_each_kind_of_mistake) {
  EXPECT_THAT(file_error(R"({"nodes": {}})"), HasSubstr("flow.json: /: missing required key 'name'"));
  EXPECT_THAT(file_error(R"({"name": "x", "nodes": {"a": {"type": "robot"}}})"),
              HasSubstr("node 'a': /nodes/a/type: unknown node type 'robot'"));
  EXPECT_THAT(file_error(R"({"name": "x", "nodes": {"a": {"type": "agent", "rotues": []}}})"),
              HasSubstr("node 'a': /nodes/a: unknown key 'rotues'"));
  EXPECT_THAT(file_error(R"({"name": "x", "max_steps": "ten", "nodes": {"a": {"type": "end"}}})"),
              HasSubstr("/max_steps: expected an integer, got a string"));
  EXPECT_THAT(file_error(R"({"name": "x", "entry": "b", "nodes": {"a": {"type": "end"}}})"),
              HasSubstr("/entry: names node 'b', which is not defined under /nodes"));
  EXPECT_THAT(file_error(R"({"name": "x", "nodes": {"a": {"type": "agent", "routes": [{"when": "always", "to": "a"}]}}})"),
              HasSubstr("/nodes/a/routes/0/when: expected a condition object or \"otherwise\""));
  EXPECT_THAT(file_error(R"({"name": "x", "nodes": {"a": {"type": "agent", "routes": [{"when": "otherwise", "to": "zz"}]}}})"),
              HasSubstr("node 'a': /nodes/a/routes/0/to: unknown node 'zz'"));
  EXPECT_THAT(file_error(R"({"name": "x", "nodes": {"a": {"type": "agent", "routes": [
                              {"when": {"confidence": {"above": 1}}, "to": "a"}]}}})"),
              HasSubstr("/nodes/a/routes/0/when/confidence: unknown comparison 'above'"));
  EXPECT_THAT(file_error(R"({"name": "x", "nodes": {"a": {"type": "agent", "routes": [
                              {"when": {"path": "/s", "equals": 1, "gt": 2}, "to": "a"}]}}})"),
              HasSubstr("a condition tests one thing"));
  EXPECT_THAT(file_error(R"({"name": "x", "nodes": {"a": {"type": "parallel", "agents": ["p", 3]}}})"),
              HasSubstr("/nodes/a/agents/1: expected a string, got a number"));
  EXPECT_THAT(file_error(R"({"name": "x", "nodes": {"a": {"type": "coordinator"}}})"),
              HasSubstr("node 'a': /nodes/a: missing required key 'default_agent'"));
}

TEST(workflow_file, loads_from_disk_and_names_a_missing_file) {
  auto path = std::filesystem::temp_directory_path() / "switchboard_workflow_file_test.json";
  {
    std::ofstream out(path);
    out << full_file;
  }
  EXPECT_EQ(load_workflow_file(path).name, "scheduling");
  std::filesystem::remove(path);
  try {
    load_workflow_file(path);
    FAIL() << "a missing file was accepted";
  } catch (const orchestrator_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("switchboard_workflow_file_test.json: cannot open the workflow file"));
  }
}

}  // namespace
}  // namespace switchboard::orchestrator

namespace switchboard::orchestrator {
namespace {

TEST(workflow_file, a_malformed_plugin_entry_is_named) {
  auto with_plugins = [](std::string plugins) {
    return R"({"name": "w", "plugins": )" + plugins + R"(, "nodes": {"done": {"type": "end"}}})";
  };
  EXPECT_THAT(file_error(with_plugins(R"("lib.so")")), HasSubstr("flow.json: /plugins: expected an array"));
  EXPECT_THAT(file_error(with_plugins(R"([{"name": "x", "confg": {}}])")),
              HasSubstr("/plugins/0: unknown key 'confg'"));
  EXPECT_THAT(file_error(with_plugins(R"([{"name": "x", "config": []}])")),
              HasSubstr("/plugins/0/config: expected an object, got an array"));
  EXPECT_THAT(file_error(with_plugins(R"([7])")), HasSubstr("/plugins/0: expected an object, got a number"));
  EXPECT_THAT(file_error(with_plugins(R"([""])")), HasSubstr("/plugins/0: a plugin needs a name"));
  EXPECT_THAT(file_error(R"({"name": "w", "schemas": "schemas", "nodes": {"done": {"type": "end"}}})"),
              HasSubstr("/schemas: expected an array of strings"));
}

TEST(workflow_file, mcp_servers_are_read_sorted_and_written_back) {
  const auto d = parse_workflow_text(R"({"name": "w",
    "mcp_servers": {"remote": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer t"}},
                    "files": {"command": ["npx", "server-files", "/tmp"], "env": {"DEBUG": "1"}}},
    "nodes": {"done": {"type": "end"}}})",
                                     "flow.json");
  ASSERT_EQ(d.mcp_servers.size(), 2u);
  EXPECT_EQ(d.mcp_servers[0].name, "files");
  EXPECT_EQ(d.mcp_servers[0].command, (std::vector<std::string>{"npx", "server-files", "/tmp"}));
  EXPECT_EQ(d.mcp_servers[0].env.at("DEBUG"), "1");
  EXPECT_EQ(d.mcp_servers[1].url, "https://example.test/mcp");
  EXPECT_EQ(d.mcp_servers[1].headers.at("Authorization"), "Bearer t");
  const auto again = parse_workflow_text(boost::json::serialize(to_json(d)), "again.json");
  ASSERT_EQ(again.mcp_servers.size(), 2u);
  EXPECT_EQ(again.mcp_servers[0].command, d.mcp_servers[0].command);
  EXPECT_EQ(again.mcp_servers[1].url, d.mcp_servers[1].url);
}

TEST(workflow_file, a_malformed_mcp_server_entry_is_named) {
  auto with_servers = [](std::string servers) {
    return R"({"name": "w", "mcp_servers": )" + servers + R"(, "nodes": {"done": {"type": "end"}}})";
  };
  EXPECT_THAT(file_error(with_servers(R"(["files"])")), HasSubstr("flow.json: /mcp_servers: expected an object"));
  EXPECT_THAT(file_error(with_servers(R"({"files": {"command": [7]}})")), HasSubstr("/mcp_servers/files"));
  EXPECT_THAT(file_error(with_servers(R"({"files": {}})")), HasSubstr("/mcp_servers/files"));
  EXPECT_THAT(file_error(with_servers(R"({"both": {"command": ["x"], "url": "https://a.test"}})")),
              HasSubstr("/mcp_servers/both"));
}

TEST(workflow_file, a2a_agents_are_read_sorted_and_written_back) {
  const auto d = parse_workflow_text(R"({"name": "w",
    "a2a_agents": {"weather": {"card": "https://agents.test/.well-known/agent-card.json",
                               "output_schema": "weather.output@2", "headers": {"Authorization": "Bearer t"},
                               "timeout_ms": 5000, "poll_ms": 250},
                   "booker": {"url": "http://127.0.0.1:9/a2a", "output_schema": "booking.output@1",
                              "description": "books rooms"}},
    "nodes": {"done": {"type": "end"}}})",
                                     "flow.json");
  ASSERT_EQ(d.a2a_agents.size(), 2u);
  EXPECT_EQ(d.a2a_agents[0].name, "booker");
  EXPECT_EQ(d.a2a_agents[0].url, "http://127.0.0.1:9/a2a");
  EXPECT_EQ(d.a2a_agents[0].description, "books rooms");
  EXPECT_EQ(d.a2a_agents[1].card_url, "https://agents.test/.well-known/agent-card.json");
  EXPECT_EQ(d.a2a_agents[1].output_schema, "weather.output@2");
  EXPECT_EQ(d.a2a_agents[1].headers.at("Authorization"), "Bearer t");
  EXPECT_EQ(d.a2a_agents[1].request_timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(d.a2a_agents[1].poll_interval, std::chrono::milliseconds(250));
  const auto again = parse_workflow_text(boost::json::serialize(to_json(d)), "again.json");
  ASSERT_EQ(again.a2a_agents.size(), 2u);
  EXPECT_EQ(again.a2a_agents[0].url, d.a2a_agents[0].url);
  EXPECT_EQ(again.a2a_agents[1].card_url, d.a2a_agents[1].card_url);
  EXPECT_EQ(again.a2a_agents[1].poll_interval, d.a2a_agents[1].poll_interval);
  EXPECT_EQ(again.a2a_agents[1].headers, d.a2a_agents[1].headers);
}

TEST(workflow_file, a_malformed_a2a_agent_entry_is_named) {
  auto with_agents = [](std::string agents) {
    return R"({"name": "w", "a2a_agents": )" + agents + R"(, "nodes": {"done": {"type": "end"}}})";
  };
  EXPECT_THAT(file_error(with_agents(R"(["a"])")), HasSubstr("flow.json: /a2a_agents: expected an object"));
  EXPECT_THAT(file_error(with_agents(R"({"a": {"output_schema": "x@1"}})")),
              AllOf(HasSubstr("/a2a_agents/a"), HasSubstr("exactly one of \"card\"")));
  EXPECT_THAT(file_error(with_agents(R"({"a": {"url": "http://h.test/a2a"}})")),
              AllOf(HasSubstr("/a2a_agents/a"), HasSubstr("output_schema: is required")));
  EXPECT_THAT(file_error(with_agents(R"({"a": {"url": "http://h.test/a2a", "output_schema": "x"}})")),
              HasSubstr("output_schema: expected a schema as name@version"));
  EXPECT_THAT(file_error(with_agents(R"({"a": {"url": "ftp://h.test/a2a", "output_schema": "x@1"}})")),
              HasSubstr("url: must use http or https"));
  EXPECT_THAT(file_error(with_agents(R"({"a": {"url": "http://u:p@h.test/a2a", "output_schema": "x@1"}})")),
              HasSubstr("must not carry credentials"));
  EXPECT_THAT(file_error(with_agents(R"({"a": {"url": "http://h.test/", "output_schema": "x@1", "rul": 1}})")),
              HasSubstr("rul: unknown key"));
  EXPECT_THAT(file_error(with_agents(R"({"a b": {"url": "http://h.test/", "output_schema": "x@1"}})")),
              HasSubstr("an agent name must be"));
  EXPECT_THAT(file_error(with_agents(R"({"a": {"url": "http://h.test/", "output_schema": "x@1", "poll_ms": 0}})")),
              HasSubstr("poll_ms: expected a positive integer"));
}

}  // namespace
}  // namespace switchboard::orchestrator
