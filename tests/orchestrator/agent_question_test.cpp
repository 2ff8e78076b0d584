// An agent that cannot answer before the user does (a remote agent whose
// task asks for input) throws agents::clarification_required: the run
// pauses for clarification, the step uncounted and its journal kept, and
// the same step runs again with the answer, in this or another hub. A
// group's member whose tool calls wait for approval pauses its group too.
#include <switchboard/orchestrator/hub.hpp>

#include "durable_run_fixture.hpp"

#include <switchboard/agents/tool_journal.hpp>

namespace switchboard::orchestrator {
namespace {

namespace json = boost::json;
using namespace durable_testing;
using testing::make_envelope;
using ::testing::AllOf;

// The first call records that it asked, then asks; a call that finds its
// record and an answer answers with both. Asks again while `always_asks`.
class asking_agent final : public agents::agent {
 public:
  explicit asking_agent(std::string name, bool always_asks = false)
      : name_(std::move(name)), always_asks_(always_asks) {}
  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "asks before it answers"; }
  std::string output_schema() const override { return "test.output@1"; }
  bool uses_tools() const noexcept override { return true; }

  asio::awaitable<protocol::envelope> run(agents::agent_context& context) override {
    ++calls;
    const auto records = context.journal ? context.journal->records() : std::vector<json::object>{};
    if (records.empty() || always_asks_) {
      co_await context.journal->append(asked_record());
      throw agents::clarification_required("Which room, " + name_ + "?");
    }
    co_return answer(records.size(), context.clarification_answers.back());
  }

  std::atomic<int> calls{0};

 private:
  static json::object asked_record() { return json::object{{"kind", "asked"}}; }
  protocol::envelope answer(std::size_t records, const std::string& answer) const {
    return make_envelope(json::object{{"status", answer + " after " + std::to_string(records) + " record(s)"}});
  }

  std::string name_;
  bool always_asks_;
};

class agent_questions : public durable_run {
 protected:
  std::shared_ptr<const compiled_workflow> one_agent(agents::agent_registry& registry, bool always_asks = false) {
    registry.add(std::make_shared<asking_agent>("remote", always_asks));
    workflow_builder b{"asking"};
    b.agent("remote").otherwise("done");
    b.end("done");
    return b.compile(registry);
  }
  workflow_state start(hub& h, std::shared_ptr<const compiled_workflow> workflow, const std::string& id) {
    run_options run;
    run.workflow_id = id;
    return await(h.run(std::move(workflow), json::value{{"request", "a room"}}, run));
  }
  workflow_state answer(hub& h, std::shared_ptr<const compiled_workflow> workflow, const std::string& id,
                        std::string text) {
    resume_options o;
    o.answer = std::move(text);
    return await(h.resume(std::move(workflow), id, o));
  }
};

TEST_F(agent_questions, the_run_pauses_uncounted_with_the_agents_journal_kept) {
  agents::agent_registry registry(testing::test_schemas());
  hub h{io_.get_executor(), registry, hub_opts()};
  const auto paused = start(h, one_agent(registry), "asks");
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);
  ASSERT_TRUE(paused.clarification);
  EXPECT_EQ(paused.clarification->question, "Which room, remote?");
  EXPECT_EQ(paused.clarification->agent, "remote");
  EXPECT_EQ(paused.clarification->node, "remote");
  EXPECT_EQ(paused.step, 0);          // the step did not run through
  EXPECT_TRUE(paused.audit.empty());  // nor was it recorded as a step
  const auto stored = await(h.find("asks"));
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->tool_records.size(), 1u);
  EXPECT_EQ(stored->tool_records[0].at("kind"), "asked");
}

TEST_F(agent_questions, another_hub_runs_the_same_step_again_with_its_journal_and_the_answer) {
  {
    agents::agent_registry registry(testing::test_schemas());
    hub h{io_.get_executor(), registry, hub_opts()};
    ASSERT_EQ(start(h, one_agent(registry), "across").status, workflow_status::awaiting_clarification);
  }
  agents::agent_registry registry(testing::test_schemas());
  hub other{io_.get_executor(), registry, hub_opts()};
  const auto done = answer(other, one_agent(registry), "across", "the blue room");
  ASSERT_EQ(done.status, workflow_status::completed) << (done.first_error() ? done.first_error()->message : "");
  ASSERT_TRUE(done.result);
  // The step found what its first run recorded: one record, and the answer.
  EXPECT_EQ(done.result->data.at("status"), "the blue room after 1 record(s)");
  EXPECT_EQ(done.step, 1);
  ASSERT_EQ(done.audit.size(), 1u);
  EXPECT_EQ(done.audit[0].agent, "remote");
  const auto stored = await(other.find("across"));
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->tool_records.empty());  // done with once the step ran through
}

TEST_F(agent_questions, a_member_of_a_group_that_asks_pauses_the_group) {
  agents::agent_registry registry(testing::test_schemas());
  registry.add(std::make_shared<asking_agent>("remote"));
  registry.add(testing::constant_agent("local", json::object{{"status", "ready"}}));
  workflow_builder b{"group"};
  b.parallel("both", {"remote", "local"}).otherwise("done");
  b.end("done");
  auto workflow = b.compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};
  const auto paused = start(h, workflow, "group");
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);
  EXPECT_EQ(paused.clarification->question, "Which room, remote?");
  EXPECT_EQ(paused.clarification->node, "both");
  EXPECT_EQ(paused.clarification->agent, "remote");  // the member that asked
  const auto done = answer(h, workflow, "group", "the red room");
  ASSERT_EQ(done.status, workflow_status::completed) << (done.first_error() ? done.first_error()->message : "");
  EXPECT_EQ(done.result->data.at("remote").at("status"), "the red room after 1 record(s)");
  EXPECT_EQ(done.result->data.at("local").at("status"), "ready");
}

// A member whose tool calls wait for approval pauses the whole group on
// them; the other members' answers are not kept (the step runs again).
TEST_F(agent_questions, a_member_of_a_group_whose_calls_wait_for_approval_pauses_the_group) {
  class approval_agent final : public agents::agent {
   public:
    std::string_view name() const noexcept override { return "booker"; }
    std::string_view description() const noexcept override { return "books once approved"; }
    std::string output_schema() const override { return "test.output@1"; }
    asio::awaitable<protocol::envelope> run(agents::agent_context&) override {
      agents::pending_tool_call call{"booker", 1, "call-1", "book", json::object{{"room", "red"}}, "Books a room."};
      throw agents::approval_required({std::move(call)});
      co_return protocol::envelope{};
    }
  };
  agents::agent_registry registry(testing::test_schemas());
  registry.add(std::make_shared<approval_agent>());
  registry.add(testing::constant_agent("local", json::object{{"status", "ready"}}));
  workflow_builder b{"group"};
  b.parallel("both", {"booker", "local"}).otherwise("done");
  b.end("done");
  hub h{io_.get_executor(), registry, hub_opts()};
  const auto paused = start(h, b.compile(registry), "approve");
  ASSERT_EQ(paused.status, workflow_status::awaiting_approval)
      << (paused.first_error() ? paused.first_error()->message : "");
  ASSERT_TRUE(paused.approval);
  EXPECT_EQ(paused.approval->node, "both");
  ASSERT_EQ(paused.approval->calls.size(), 1u);
  EXPECT_EQ(paused.approval->calls[0].agent, "booker");
  EXPECT_EQ(paused.approval->calls[0].tool, "book");
  EXPECT_EQ(paused.approval->calls[0].arguments, (json::object{{"room", "red"}}));
  EXPECT_EQ(paused.step, 0);  // uncounted
  EXPECT_TRUE(paused.outputs.empty());
}

TEST_F(agent_questions, two_members_asking_at_once_fail_the_step_naming_both) {
  agents::agent_registry registry(testing::test_schemas());
  registry.add(std::make_shared<asking_agent>("north"));
  registry.add(std::make_shared<asking_agent>("south"));
  workflow_builder b{"two"};
  b.parallel("both", {"north", "south"}).otherwise("done");
  b.end("done");
  auto workflow = b.compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};
  const auto s = start(h, workflow, "two");
  // One answer could not be told apart between them: never given to both.
  ASSERT_EQ(s.status, workflow_status::failed);
  ASSERT_TRUE(s.first_error());
  EXPECT_EQ(s.first_error()->type, "several_questions");
  EXPECT_THAT(s.first_error()->message, AllOf(HasSubstr("'north'"), HasSubstr("'south'"), HasSubstr("'both'")));
  EXPECT_FALSE(s.clarification);
}

TEST_F(agent_questions, an_agent_that_keeps_asking_stops_at_the_clarification_limit) {
  agents::agent_registry registry(testing::test_schemas());
  auto workflow = one_agent(registry, true);
  hub h{io_.get_executor(), registry, hub_opts()};
  auto s = start(h, workflow, "limit");
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(s.status, workflow_status::awaiting_clarification) << "round " << round;
    s = answer(h, workflow, "limit", "answer " + std::to_string(round));
  }
  ASSERT_EQ(s.status, workflow_status::failed);
  ASSERT_TRUE(s.first_error());
  EXPECT_EQ(s.first_error()->type, "clarification_limit");
  EXPECT_THAT(s.first_error()->message, HasSubstr("Which room, remote?"));
  const auto stored = await(h.find("limit"));
  EXPECT_TRUE(stored->tool_records.empty());
}

}  // namespace
}  // namespace switchboard::orchestrator
