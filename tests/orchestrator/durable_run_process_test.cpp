// Durable, exactly-once runs under injected faults across processes: a
// process killed right after each store write, processes racing to answer
// one question, an owner that died or stalled.
#include <switchboard/orchestrator/hub.hpp>

#include "durable_run_fixture.hpp"

namespace switchboard::orchestrator {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using namespace durable_testing;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::read_calls;

// ---------------------------------------------------------------- 1. SIGKILL after every write

// A process killed right after a write has no step in flight: the write
// that recorded a step's result came before the next agent call. So however
// a run + resume is cut, continuing it in new processes must end it with
// every agent called exactly as often as in an uninterrupted run.
TEST_F(durable_run, a_run_killed_right_after_any_store_write_continues_without_running_a_step_again) {
  auto reference = helper_process({"run", db_, counter("reference"), "reference", "0", "end"}).finish();
  ASSERT_TRUE(exited_with(reference.status, 0)) << reference.describe();
  EXPECT_EQ(field(reference.output, "status"), "completed");
  EXPECT_EQ(field(reference.output, "result"), "done with the answer");
  EXPECT_EQ(read_calls(counter("reference")), once_each);
  const int writes = std::stoi("0" + field(reference.output, "writes"));
  // create, a save after each of 5 steps, the pause, the claim, the answer, the end
  ASSERT_GE(writes, 8) << reference.output;

  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, "");
  hub reader{io_.get_executor(), registry, hub_opts()};

  for (int n = 1; n <= writes; ++n) {
    SCOPED_TRACE("killed right after store write " + std::to_string(n) + " of " + std::to_string(writes));
    const std::string id = "kill-" + std::to_string(n);
    const std::string calls = counter(id);
    helper_process first({"run", db_, calls, id, std::to_string(n), "end"});
    const pid_t dead = first.pid();
    auto killed = first.finish();
    ASSERT_TRUE(was_killed(killed.status)) << killed.describe();

    // Never stuck: paused, finished, interrupted, or running under the
    // dead process (which the next claim recognizes at once).
    auto cp = await(store_->load(id));
    ASSERT_TRUE(cp) << "the first write creates the run";
    ASSERT_THAT(cp->status, AnyOf(workflow_status::running, workflow_status::interrupted, workflow_status::awaiting_clarification, workflow_status::completed));
    if (cp->status == workflow_status::running) {
      EXPECT_THAT(cp->owner, HasSubstr(":" + std::to_string(dead) + ":"));
    }

    std::string trail = "after the kill: " + std::string(to_string(cp->status));
    bool needs_answer = false;  // a continue was refused: the run still waits for its answer
    for (int round = 0; round < 4; ++round) {
      cp = await(store_->load(id));
      ASSERT_TRUE(cp);
      if (cp->status == workflow_status::completed) break;
      std::vector<std::string> args;
      if (cp->status == workflow_status::awaiting_clarification || needs_answer) {
        args = {"answer", db_, calls, id, "the answer"};
      } else {
        ASSERT_THAT(cp->status, AnyOf(workflow_status::running, workflow_status::interrupted)) << trail;
        args = {"continue", db_, calls, id};
      }
      auto next = helper_process(args).finish();
      trail += "; " + args[0] + " -> " + field(next.output, "status") + field(next.output, "error");
      if (args[0] == "continue" && exited_with(next.status, exit_code_of(orchestrator_errc::answer_required))) {
        needs_answer = true;
        continue;
      }
      // The helper's lease is 30 s: only the dead-owner check lets this
      // claim through now; run_owned here means the run was stuck.
      ASSERT_TRUE(exited_with(next.status, 0)) << trail << "\n" << next.describe();
    }
    auto final_state = await(reader.find(id));
    ASSERT_TRUE(final_state);
    EXPECT_EQ(final_state->status, workflow_status::completed) << trail;
    ASSERT_TRUE(final_state->result) << trail;
    EXPECT_EQ(final_state->result->data.at("status"), "done with the answer") << trail;
    EXPECT_EQ(final_state->history("one").size(), 1u) << trail;
    EXPECT_EQ(final_state->clarification_answers, std::vector<std::string>{"the answer"}) << trail;
    EXPECT_EQ(read_calls(calls), once_each) << trail;
  }
}

// ---------------------------------------------------------------- 2. racing resumes

// Processes that answer one question at the same moment: exactly one wins
// and runs the rest of the workflow with its answer; the others are refused
// with a clear error; nothing after the pause runs twice.
TEST_F(durable_run, of_processes_racing_to_answer_one_question_exactly_one_wins) {
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, "");
  hub reader{io_.get_executor(), registry, hub_opts()};
  const std::vector<int> refusals{exit_code_of(orchestrator_errc::run_owned),
                                  exit_code_of(orchestrator_errc::not_awaiting_clarification),
                                  exit_code_of(orchestrator_errc::run_moved_on)};
  std::map<std::string, int> refusal_kinds;

  for (int round = 0; round < 100 && !HasFailure(); ++round) {
    const int racers = 2 + round % 7;
    SCOPED_TRACE("round " + std::to_string(round) + ", " + std::to_string(racers) + " racers");
    const std::string id = "race-" + std::to_string(round);
    const std::string calls = counter(id);
    auto paused = helper_process({"run", db_, calls, id, "0", "pause"}).finish();
    ASSERT_TRUE(exited_with(paused.status, 0)) << paused.describe();
    ASSERT_EQ(field(paused.output, "status"), "awaiting_clarification");

    // Each racer sets up its hub, prints "ready" and waits for the end of
    // its stdin: closing the pipe's last write end starts them all at once.
    int go[2];
    ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
    std::vector<std::unique_ptr<helper_process>> processes;
    for (int i = 0; i < racers; ++i) {
      processes.push_back(std::make_unique<helper_process>(
          std::vector<std::string>{"answer", db_, calls, id, "answer-" + std::to_string(i), "wait"}, go[0]));
    }
    ::close(go[0]);
    bool all_ready = true;
    for (auto& p : processes) all_ready = p->read_line() == "ready" && all_ready;
    ::close(go[1]);
    ASSERT_TRUE(all_ready);

    int winner = -1;
    auto outcomes = finish_all(processes);
    for (int i = 0; i < racers; ++i) {
      const auto& o = outcomes[i];
      if (exited_with(o.status, 0)) {
        EXPECT_EQ(winner, -1) << "racers " << winner << " and " << i << " both resumed the run";
        winner = i;
        EXPECT_EQ(field(o.output, "status"), "completed") << o.describe();
        EXPECT_EQ(field(o.output, "result"), "done with answer-" + std::to_string(i)) << o.describe();
      } else {
        const bool refused = WIFEXITED(o.status) && std::find(refusals.begin(), refusals.end(),
                                                              WEXITSTATUS(o.status)) != refusals.end();
        EXPECT_TRUE(refused) << "racer " << i << ": " << o.describe();
        const auto error = field(o.output, "error");
        EXPECT_THAT(error, HasSubstr(id)) << "the refusal names the run";
        ++refusal_kinds[error.substr(0, error.find(':'))];
      }
    }
    ASSERT_NE(winner, -1) << "nobody resumed the run";
    auto final_state = await(reader.find(id));
    ASSERT_TRUE(final_state);
    EXPECT_EQ(final_state->status, workflow_status::completed);
    ASSERT_TRUE(final_state->result);
    EXPECT_EQ(final_state->result->data.at("status"), json::value("done with answer-" + std::to_string(winner)));
    EXPECT_EQ(final_state->clarification_answers, std::vector<std::string>{"answer-" + std::to_string(winner)});
    EXPECT_EQ(read_calls(calls), once_each);
  }
  std::string kinds;
  for (const auto& [kind, count] : refusal_kinds) kinds += kind + " " + std::to_string(count) + "  ";
  RecordProperty("refusals", kinds);
}

// What a racing process can see: load() answers what the run looked like
// a moment ago (here: once, a snapshot taken earlier); all else is the store.
class stale_once_store final : public forwarding_checkpoint_store {
 public:
  stale_once_store(std::shared_ptr<checkpoint_store> inner, checkpoint stale)
      : forwarding_checkpoint_store(std::move(inner)), stale_(std::move(stale)) {}

  asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    if (stale_ && workflow_id == stale_->workflow_id) {
      auto snapshot = std::move(stale_);
      stale_.reset();
      co_return snapshot;
    }
    co_return co_await inner().load(std::move(workflow_id));
  }

 private:
  std::optional<checkpoint> stale_;
};

// The race above, made deterministic: a resume read the run while its
// owner was still working on it; by the time it checks the owner, the owner
// has paused (or finished) the run and exited. That run was never
// interrupted: the answer must not be refused with "continue it without an
// answer" (answer_required); the run moved on since it was read.
TEST_F(durable_run, a_resume_that_read_the_run_before_its_owner_moved_on_is_not_told_it_was_interrupted) {
  const auto calls = counter("stale");
  // A run whose owner died right after creating it ...
  auto killed = helper_process({"run", db_, calls, "stale", "1", "end"}).finish();
  ASSERT_TRUE(was_killed(killed.status)) << killed.describe();
  auto stale = await(store_->load("stale"));
  ASSERT_TRUE(stale);
  ASSERT_EQ(stale->status, workflow_status::running);
  // ... was continued by another process, which paused it and exited.
  auto continued = helper_process({"continue", db_, calls, "stale"}).finish();
  ASSERT_TRUE(exited_with(continued.status, 0)) << continued.describe();
  ASSERT_EQ(field(continued.output, "status"), "awaiting_clarification");

  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls);
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry,
        testing::options(std::make_shared<stale_once_store>(store_, *stale), {}, silent())};
  try {
    auto s = await(h.resume(workflow, "stale", answer("the answer")));
    EXPECT_EQ(s.status, workflow_status::completed);  // taking the answer after a fresh read is fine too
  } catch (const orchestrator_error& e) {
    EXPECT_THAT(e.errc(), AnyOf(orchestrator_errc::run_moved_on, orchestrator_errc::not_awaiting_clarification))
        << to_string(e.errc()) << ": " << e.what();
  }
  auto cp = await(store_->load("stale"));
  ASSERT_TRUE(cp);
  EXPECT_THAT(cp->status, AnyOf(workflow_status::awaiting_clarification, workflow_status::completed));
}

// ---------------------------------------------------------------- 3. dead owner, expired lease

// The owner process dies with a step in flight (SIGKILL): on this host its
// run is continued at once, without waiting for its 30 s lease; the step in
// flight runs again (its result was never recorded), the saved one does not.
TEST_F(durable_run, a_run_whose_owner_process_died_is_continued_at_once) {
  const auto calls = counter("dead-owner");
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls);
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  helper_process owner({"run", db_, calls, "dead-owner", "0", "end", "block-two"});
  ASSERT_EQ(owner.read_line(), "blocking");
  auto cp = await(store_->load("dead-owner"));
  ASSERT_TRUE(cp);
  EXPECT_EQ(cp->status, workflow_status::running);
  EXPECT_EQ(cp->step, 1) << "step 1 (one) is saved, step 2 (two) is in flight";
  EXPECT_THAT(cp->owner, HasSubstr(":" + std::to_string(owner.pid()) + ":"));

  // While its owner lives, the run is refused, naming the owner.
  auto live = refused_resume(h, workflow, "dead-owner", resume_options{});
  EXPECT_EQ(live.errc(), orchestrator_errc::run_owned) << live.what();
  EXPECT_THAT(live.what(), HasSubstr(cp->owner));

  owner.kill_now();
  EXPECT_TRUE(was_killed(owner.reap()));
  cp = await(store_->load("dead-owner"));
  ASSERT_TRUE(cp);
  EXPECT_THAT(cp->status, AnyOf(workflow_status::running, workflow_status::interrupted));

  auto s = await(h.resume(workflow, "dead-owner", resume_options{}));
  EXPECT_EQ(s.status, workflow_status::awaiting_clarification) << (s.first_error() ? s.first_error()->message : "");
  EXPECT_EQ(s.history("one").size(), 1u);
  s = await(h.resume(workflow, "dead-owner", answer("the answer")));
  EXPECT_EQ(s.status, workflow_status::completed);
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->data.at("status"), "done with the answer");
  EXPECT_EQ(read_calls(calls), (calls_t{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", 2}}));
}

// Another host's owner stalls (a frozen process, a partition): its run is
// refused while its lease holds, continued once it expired, and the stalled
// owner, when it wakes up, can no longer save over the new owner's run.
TEST_F(durable_run, a_run_abandoned_by_another_host_is_continued_once_its_lease_expired) {
  const auto calls = counter("abandoned");
  std::atomic<bool> two_in_flight{false};
  asio::steady_timer* stalled = nullptr;  // the first call of "two", on io_a
  testing::durable_hooks hooks;
  hooks.hold_two = [&](int call) -> asio::awaitable<void> {
    if (call != 1) co_return;
    asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
    stalled = &timer;
    two_in_flight = true;
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));  // woken: answers normally
    stalled = nullptr;
  };
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls, std::move(hooks));
  auto workflow = testing::durable_workflow().compile(registry);

  // The other host's hub, on an io_context this test runs by hand.
  asio::io_context io_a;
  auto other_options = hub_opts();
  other_options.owner_id = "other-host:1:1";
  other_options.lease = 50ms;
  hub other{io_a.get_executor(), registry, other_options};
  auto stalled_run = other.start(workflow, durable_input(), with_id("abandoned"));
  while (!two_in_flight && io_a.run_one() > 0) {
  }
  ASSERT_TRUE(two_in_flight);
  // From here io_a does not run: the other host's hub is frozen.

  hub h{io_.get_executor(), registry, hub_opts()};
  // While the lease holds (renewed here as the frozen owner would, so the
  // test does not depend on how fast it runs), the run is refused.
  EXPECT_EQ(await(store_->renew("other-host:1:1", 10min)), 1u);
  auto owned = refused_resume(h, workflow, "abandoned", resume_options{});
  EXPECT_EQ(owned.errc(), orchestrator_errc::run_owned) << owned.what();
  EXPECT_THAT(owned.what(), HasSubstr("other-host:1:1"));

  // Its last renewal was for 50 ms; then it stopped.
  EXPECT_EQ(await(store_->renew("other-host:1:1", 50ms)), 1u);
  std::this_thread::sleep_for(100ms);
  auto cp = await(store_->load("abandoned"));
  ASSERT_TRUE(cp);
  EXPECT_EQ(cp->status, workflow_status::interrupted) << "a running run whose lease expired reads as interrupted";
  const auto stale_fence = cp->fence;

  auto s = await(h.resume(workflow, "abandoned", resume_options{}));
  EXPECT_EQ(s.status, workflow_status::awaiting_clarification) << (s.first_error() ? s.first_error()->message : "");
  s = await(h.resume(workflow, "abandoned", answer("the answer")));
  ASSERT_EQ(s.status, workflow_status::completed);
  auto finished = await(store_->load("abandoned"));
  ASSERT_TRUE(finished);
  EXPECT_GT(finished->fence, stale_fence);

  // The frozen owner wakes up: "two" answers, but the save of its step
  // carries the old fence and is refused; the stored run is untouched.
  asio::post(io_a, [&] {
    if (stalled) stalled->cancel();
  });
  io_a.run();
  ASSERT_TRUE(stalled_run.done());
  auto woken = stalled_run.wait();
  EXPECT_EQ(woken.status, workflow_status::failed);
  ASSERT_TRUE(woken.first_error());
  EXPECT_EQ(woken.first_error()->type, "lost_ownership") << woken.first_error()->message;
  auto after = await(store_->load("abandoned"));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, workflow_status::completed);
  EXPECT_EQ(after->step, finished->step);
  EXPECT_EQ(after->fence, finished->fence);
  EXPECT_EQ(after->state_json, finished->state_json);
  EXPECT_EQ(after->journal, finished->journal);
  EXPECT_EQ(read_calls(calls), (calls_t{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", 2}}));
}

}  // namespace
}  // namespace switchboard::orchestrator
