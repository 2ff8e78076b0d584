// hub::update_stored_run: a person's answer in place of a node's agent.
// It is checked like an agent's (schema, route), recorded as a step, and the
// run continues from where the node's routes lead; a refused update leaves
// the stored run exactly as it was.
#include <switchboard/orchestrator/hub.hpp>

#include <switchboard/orchestrator/error.hpp>

#include "hub_test_fixture.hpp"

namespace switchboard::orchestrator {
namespace {

using namespace hub_testing;

class state_update_test : public hub_test {
 protected:
  // "a" is unsure until answered, then routes on its status: "Tuesday" to
  // "b", anything else ends.
  workflow_builder paused_flow() {
    a_ = add(unsure_until_answered("a"));
    b_ = add(constant_agent("b", {{"status", "booked"}}));
    workflow_builder wf{"flow"};
    wf.agent("a").route(condition::equals("/status", "Tuesday"), "b").otherwise("done");
    wf.agent("b").otherwise("done");
    wf.end("done");
    return wf;
  }

  workflow_state update(const workflow_builder& wf, const std::string& id, state_update u) {
    return sync(hub_->update_stored_run(wf.compile(registry_), id, std::move(u)));
  }

  orchestrator_error refused_update(const workflow_builder& wf, const std::string& id, state_update u) {
    try {
      update(wf, id, std::move(u));
    } catch (const orchestrator_error& e) {
      return e;
    }
    ADD_FAILURE() << "the update was accepted";
    return orchestrator_error(orchestrator_errc::invalid_update, "accepted");
  }

  workflow_state continued(const workflow_builder& wf, const std::string& id) {
    return sync(hub_->resume(wf.compile(registry_), id, resume_options{}));
  }

  workflow_state stored(const std::string& id) {
    auto s = sync(hub_->find(id));
    if (!s) throw std::runtime_error("no stored run " + id);
    return std::move(*s);
  }

  std::shared_ptr<fn_agent> a_;
  std::shared_ptr<fn_agent> b_;
};

TEST_F(state_update_test, an_answer_set_for_the_unsure_node_routes_on_without_running_its_agent) {
  const auto wf = paused_flow();
  const auto paused = run(wf);
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);

  const auto updated = update(wf, paused.id, testing::answer_for("", {{"status", "Tuesday"}}));
  EXPECT_EQ(updated.status, workflow_status::interrupted);
  EXPECT_EQ(updated.next_node, "b");
  EXPECT_FALSE(updated.clarification);
  EXPECT_EQ(updated.step, paused.step + 1);
  ASSERT_EQ(updated.audit.size(), paused.audit.size() + 1);
  EXPECT_EQ(updated.audit.back().node, "a");
  EXPECT_EQ(updated.audit.back().route, "b");
  EXPECT_THAT(updated.audit.back().note, HasSubstr("the agent did not run"));
  ASSERT_NE(updated.latest("a"), nullptr);
  EXPECT_EQ(updated.latest("a")->data.at("status"), "Tuesday");
  EXPECT_DOUBLE_EQ(updated.latest("a")->confidence, 1.0);
  EXPECT_EQ(stored(paused.id).next_node, "b");  // saved, not only returned

  const auto done = continued(wf, paused.id);
  EXPECT_EQ(done.status, workflow_status::completed);
  EXPECT_EQ(a_->calls(), 1);  // only the first, unsure call
  EXPECT_EQ(b_->calls(), 1);
  EXPECT_EQ(done.result->data.at("status"), "booked");
}

TEST_F(state_update_test, an_answer_the_agents_schema_refuses_names_the_field_and_changes_nothing) {
  const auto wf = paused_flow();
  const auto paused = run(wf);
  const auto e = refused_update(wf, paused.id, testing::answer_for("a", {{"score", "high"}}));
  EXPECT_EQ(e.code(), make_error_code(orchestrator_errc::invalid_update));
  EXPECT_THAT(e.what(), HasSubstr("/data/score"));
  EXPECT_THAT(e.what(), HasSubstr("agent 'a'"));
  EXPECT_THAT(e.what(), HasSubstr("test.output@1"));
  const auto after = stored(paused.id);
  EXPECT_EQ(after.status, workflow_status::awaiting_clarification);
  EXPECT_EQ(after.step, paused.step);
  EXPECT_EQ(after.audit.size(), paused.audit.size());
  // The question still stands and can be answered.
  EXPECT_EQ(resume(wf, paused.id, "Tuesday").status, workflow_status::completed);
}

TEST_F(state_update_test, only_an_agent_node_of_the_workflow_can_be_answered_for) {
  const auto wf = paused_flow();
  const auto paused = run(wf);
  const auto unknown = refused_update(wf, paused.id, testing::answer_for("nowhere", {}));
  EXPECT_EQ(unknown.code(), make_error_code(orchestrator_errc::invalid_update));
  EXPECT_THAT(unknown.what(), HasSubstr("no node 'nowhere'"));
  const auto end = refused_update(wf, paused.id, testing::answer_for("done", {}));
  EXPECT_THAT(end.what(), HasSubstr("node 'done' is an end node"));
  EXPECT_EQ(stored(paused.id).status, workflow_status::awaiting_clarification);
}

TEST_F(state_update_test, an_answer_no_route_takes_is_refused_with_the_routes) {
  a_ = add(unsure_until_answered("a"));
  workflow_builder wf{"flow"};
  wf.agent("a").route(condition::equals("/status", "Tuesday"), "done");
  wf.end("done");
  const auto paused = run(wf);
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);
  const auto e = refused_update(wf, paused.id, testing::answer_for("a", {{"status", "Friday"}}));
  EXPECT_EQ(e.code(), make_error_code(orchestrator_errc::invalid_update));
  EXPECT_THAT(e.what(), HasSubstr("no route matches"));
  EXPECT_THAT(e.what(), HasSubstr("/status"));
}

TEST_F(state_update_test, a_finished_run_is_not_updated) {
  make_hub(testing::options(make_in_memory_checkpoint_store()));  // keeps finished runs
  const auto wf = paused_flow();
  const auto paused = run(wf);
  ASSERT_EQ(resume(wf, paused.id, "Friday").status, workflow_status::completed);
  const auto e = refused_update(wf, paused.id, testing::answer_for("a", {{"status", "Tuesday"}}));
  EXPECT_EQ(e.code(), make_error_code(orchestrator_errc::not_awaiting_clarification));
  EXPECT_THAT(e.what(), HasSubstr("completed"));
  EXPECT_EQ(b_->calls(), 0);
}

TEST_F(state_update_test, an_update_made_for_a_step_the_run_has_left_is_refused) {
  const auto wf = paused_flow();
  const auto paused = run(wf);
  const auto e = refused_update(
      wf, paused.id, testing::answer_for("a", {{"status", "Tuesday"}}, paused.step - 1));
  EXPECT_EQ(e.code(), make_error_code(orchestrator_errc::run_moved_on));
  EXPECT_THAT(e.what(), HasSubstr("update:"));
  EXPECT_EQ(stored(paused.id).status, workflow_status::awaiting_clarification);
  EXPECT_EQ(update(wf, paused.id, testing::answer_for("a", {{"status", "Tuesday"}}, paused.step))
                .next_node,
            "b");
}

TEST_F(state_update_test, an_unknown_run_is_named) {
  const auto wf = paused_flow();
  make_hub();
  const auto e = refused_update(wf, "no-such-run", testing::answer_for("a", {}));
  EXPECT_EQ(e.code(), make_error_code(orchestrator_errc::unknown_workflow));
  EXPECT_THAT(e.what(), HasSubstr("no-such-run"));
}

}  // namespace
}  // namespace switchboard::orchestrator
