#include <switchboard/orchestrator/workflow.hpp>

#include <switchboard/orchestrator/error.hpp>

#include "orchestrator_test_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::orchestrator {
namespace {

using ::testing::HasSubstr;
using testing::constant_agent;

class workflow_compile : public ::testing::Test {
 protected:
  workflow_compile() : registry_(testing::test_schemas()) {
    for (auto name : {"a", "b", "c"}) registry_.add(constant_agent(name));
  }

  // The message compile() refuses `builder` with.
  std::string refusal(const workflow_builder& builder) {
    try {
      builder.compile(registry_);
    } catch (const orchestrator_error& e) {
      EXPECT_EQ(e.errc(), orchestrator_errc::invalid_workflow);
      return e.what();
    }
    ADD_FAILURE() << "compile() accepted the definition";
    return {};
  }

  agents::agent_registry registry_;
};

TEST_F(workflow_compile, accepts_a_valid_workflow_and_keeps_its_definition) {
  workflow_builder b{"flow"};
  b.agent("a").route(condition::equals("/status", "ok"), "b").otherwise("done");
  b.agent("b").otherwise("done");
  b.end("done");
  auto w = b.compile(registry_);
  EXPECT_EQ(w->name(), "flow");
  EXPECT_EQ(w->definition().entry, "a");  // first node by default
  EXPECT_EQ(w->definition().nodes.size(), 3u);
}

TEST_F(workflow_compile, refuses_an_unknown_agent_naming_the_node) {
  workflow_builder b{"flow"};
  b.agent("first", "nobody").otherwise("done");
  b.end("done");
  auto message = refusal(b);
  EXPECT_THAT(message, HasSubstr("node 'first'"));
  EXPECT_THAT(message, HasSubstr("unknown agent 'nobody'"));
  EXPECT_THAT(message, HasSubstr("registered: a, b, c"));
}

TEST_F(workflow_compile, refuses_an_unknown_route_target) {
  workflow_builder b{"flow"};
  b.agent("a").otherwise("nowhere");
  EXPECT_THAT(refusal(b), HasSubstr("node 'a': route 1 goes to unknown node 'nowhere'"));
}

TEST_F(workflow_compile, refuses_an_unreachable_node) {
  workflow_builder b{"flow"};
  b.agent("a").otherwise("done");
  b.agent("b").otherwise("done");
  b.end("done");
  EXPECT_THAT(refusal(b), HasSubstr("node 'b': unreachable from the entry node 'a'"));
}

TEST_F(workflow_compile, refuses_a_node_without_routes) {
  workflow_builder b{"flow"};
  b.agent("a");
  EXPECT_THAT(refusal(b), HasSubstr("node 'a': has no routes (no way out)"));
}

TEST_F(workflow_compile, refuses_a_cycle_with_no_way_out) {
  workflow_builder b{"flow"};
  b.agent("a").route(condition::equals("/status", "x"), "b").otherwise("done");
  b.agent("b").otherwise("c");
  b.agent("c").otherwise("b");
  b.end("done");
  EXPECT_THAT(refusal(b), HasSubstr("node 'b': no way out"));
}

TEST_F(workflow_compile, accepts_a_cycle_that_can_leave) {
  workflow_builder b{"flow"};
  b.agent("a").route(condition::equals("/status", "again"), "b").otherwise("done");
  b.agent("b").otherwise("a");
  b.end("done");
  EXPECT_NO_THROW(b.compile(registry_));
}

TEST_F(workflow_compile, refuses_a_condition_on_an_undeclared_field) {
  workflow_builder b{"flow"};
  b.agent("a").route(condition::all({condition::exists("/items/0/id"), condition::equals("/colour", "red")}), "done")
      .otherwise("done");
  b.end("done");
  auto message = refusal(b);
  EXPECT_THAT(message, HasSubstr("node 'a': route 1 reads data/colour"));
  EXPECT_THAT(message, HasSubstr("output schema 'test.output@1' of agent 'a' declares no such field"));
}

TEST_F(workflow_compile, walks_refs_items_and_nested_properties) {
  workflow_builder b{"flow"};
  b.agent("a")
      .route(condition::compare("/nested/value", comparison::gt, 1), "done")
      .route(condition::equals("/items/3/id", "x"), "done")
      .otherwise("done");
  b.end("done");
  EXPECT_NO_THROW(b.compile(registry_));

  workflow_builder bad{"flow"};
  bad.agent("a").route(condition::exists("/nested/other"), "done").otherwise("done");
  bad.end("done");
  EXPECT_THAT(refusal(bad), HasSubstr("reads data/nested/other"));
}

TEST_F(workflow_compile, group_conditions_name_the_member) {
  workflow_builder ok{"flow"};
  ok.parallel("both", {"a", "b"}).route(condition::equals("/a/status", "ok"), "done").otherwise("done");
  ok.end("done");
  EXPECT_NO_THROW(ok.compile(registry_));

  workflow_builder bad{"flow"};
  bad.parallel("both", {"a", "b"}).route(condition::equals("/c/status", "ok"), "done").otherwise("done");
  bad.end("done");
  EXPECT_THAT(refusal(bad), HasSubstr("'c' is not an agent of this parallel group"));
}

TEST_F(workflow_compile, refuses_otherwise_before_the_last_route) {
  workflow_builder b{"flow"};
  b.agent("a").otherwise("done").route(condition::exists("/status"), "done");
  b.end("done");
  EXPECT_THAT(refusal(b), HasSubstr("node 'a': route 1 is `otherwise` but is not the last route"));
}

TEST_F(workflow_compile, refuses_bad_settings) {
  workflow_builder threshold{"flow"};
  threshold.agent("a").clarification_threshold(1.5).otherwise("done");
  threshold.end("done");
  EXPECT_THAT(refusal(threshold), HasSubstr("node 'a': clarification_threshold must be within [0, 1]"));

  workflow_builder steps{"flow"};
  steps.max_steps(0).agent("a").otherwise("done");
  steps.end("done");
  EXPECT_THAT(refusal(steps), HasSubstr("max_steps must be at least 1"));

  workflow_builder twice{"flow"};
  twice.agent("a").otherwise("done");
  twice.end("done");
  twice.end("done");
  EXPECT_THAT(refusal(twice), HasSubstr("node 'done': defined twice"));

  workflow_builder entry{"flow"};
  entry.entry("ghost").agent("a").otherwise("done");
  entry.end("done");
  EXPECT_THAT(refusal(entry), HasSubstr("entry node 'ghost' does not exist"));

  workflow_builder terminal{"flow"};
  terminal.agent("a").otherwise("done");
  terminal.end("done").otherwise("a");
  EXPECT_THAT(refusal(terminal), HasSubstr("node 'done': end is a terminal node and cannot have routes"));
}

TEST_F(workflow_compile, coordinator_needs_a_known_default_among_candidates) {
  workflow_builder missing{"flow"};
  missing.coordinator("pick", testing::coordinate({"a", "b"}, "")).otherwise("done");
  missing.end("done");
  EXPECT_THAT(refusal(missing), HasSubstr("node 'pick': coordinator default_agent names no agent"));

  workflow_builder outside{"flow"};
  outside.coordinator("pick", testing::coordinate({"a", "b"}, "c")).otherwise("done");
  outside.end("done");
  EXPECT_THAT(refusal(outside), HasSubstr("default_agent 'c' is not among the candidates"));

  workflow_builder ok{"flow"};
  ok.coordinator("pick", testing::coordinate({}, "c")).otherwise("done");  // every registered agent
  ok.end("done");
  EXPECT_NO_THROW(ok.compile(registry_));
}

TEST_F(workflow_compile, node_builder_edits_an_existing_node) {
  workflow_builder b{"flow"};
  b.agent("a");
  b.end("done");
  b.node("a").otherwise("done").timeout(std::chrono::milliseconds{50});
  EXPECT_EQ(b.definition().nodes[0].routes.size(), 1u);
  EXPECT_EQ(b.definition().nodes[0].timeout, std::chrono::milliseconds{50});
  EXPECT_THROW(b.node("ghost"), orchestrator_error);
}

}  // namespace
}  // namespace switchboard::orchestrator
