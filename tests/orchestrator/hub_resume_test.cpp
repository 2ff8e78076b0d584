// The hub's clarification pauses and resumes, and what it keeps in a
// checkpoint store: checkpoints after every step, retention, ids, a store
// that is slow.
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/stores/sqlite_store.hpp>

#include <switchboard/orchestrator/error.hpp>

#include "hub_test_fixture.hpp"

#include <sqlite3.h>

#include <filesystem>

namespace switchboard::orchestrator {
namespace {

using namespace hub_testing;
using ::testing::HasSubstr;
using testing::constant_agent;
using testing::fn_agent;
using testing::make_envelope;
namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;

// ---------------------------------------------------------------- clarification

TEST_F(hub_test, low_confidence_pauses_before_any_route) {
  add(constant_agent("a", {{"status", "ok"}}, 0.5));
  auto b = add(constant_agent("b"));
  workflow_builder wf{"flow"};
  wf.agent("a").route(condition::equals("/status", "ok"), "b").otherwise("done");
  wf.agent("b").otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::awaiting_clarification);
  EXPECT_EQ(b->calls(), 0);
  ASSERT_TRUE(s.clarification);
  EXPECT_EQ(s.clarification->node, "a");
  EXPECT_EQ(s.clarification->agent, "a");
  EXPECT_EQ(s.clarification->round, 1);
  EXPECT_THAT(s.clarification->question, HasSubstr("done"));  // built from the explanation
  EXPECT_THAT(s.clarification->question, HasSubstr("because the test says so"));  // and the reasoning
  EXPECT_FALSE(s.id.empty());
  EXPECT_EQ(s.audit.back().condition, "clarification: confidence 0.50 < 0.70");
}

TEST_F(hub_test, the_agents_own_question_is_preferred) {
  add(constant_agent("a", {{"clarification_question", "Which Tuesday?"}}, 0.2));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("done");
  wf.end("done");
  EXPECT_EQ(run(wf).clarification->question, "Which Tuesday?");
}

TEST_F(hub_test, thresholds_can_be_overridden_per_workflow_and_node_or_switched_off) {
  add(constant_agent("a", {}, 0.5));
  add(constant_agent("b", {}, 0.1));
  workflow_builder node_level{"flow"};
  node_level.agent("a").clarification_threshold(0.4).otherwise("done");
  node_level.end("done");
  EXPECT_EQ(run(node_level).status, workflow_status::completed);

  workflow_builder stricter{"flow"};
  stricter.clarification_threshold(0.3).agent("a").clarification_threshold(0.6).otherwise("done");
  stricter.end("done");
  EXPECT_EQ(run(stricter).status, workflow_status::awaiting_clarification);

  workflow_builder workflow_level{"flow"};
  workflow_level.clarification_threshold(0.45).agent("a").otherwise("done");
  workflow_level.end("done");
  EXPECT_EQ(run(workflow_level).status, workflow_status::completed);

  workflow_builder opted_out{"flow"};
  opted_out.agent("b").no_clarification().otherwise("done");
  opted_out.end("done");
  EXPECT_EQ(run(opted_out).status, workflow_status::completed);
}

TEST_F(hub_test, resume_reruns_the_unsure_agent_with_the_answer) {
  auto a = add(unsure_until_answered("a"));
  add(constant_agent("b"));
  workflow_builder wf{"flow"};
  wf.agent("a").route(condition::equals("/status", "Tuesday 3pm"), "b").otherwise("done");
  wf.agent("b").otherwise("done");
  wf.end("done");
  auto paused = run(wf);
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);
  EXPECT_THAT(paused.clarification->question, HasSubstr("I cannot tell which day you mean."));

  auto s = resume(wf, paused.id, "Tuesday 3pm");
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(s.id, paused.id);
  EXPECT_EQ(a->calls(), 2);
  EXPECT_EQ(s.history("a").size(), 2u);
  EXPECT_EQ(s.clarification_answers, std::vector<std::string>{"Tuesday 3pm"});
  EXPECT_FALSE(s.clarification);
  EXPECT_EQ(s.audit.size(), 3u);  // a (unsure), a (answered), b
  EXPECT_EQ(s.audit[1].route, "b");
  auto kinds = observer_->kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), event_kind::paused), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), event_kind::resumed), kinds.end());
  EXPECT_DOUBLE_EQ(hub_->metrics().clarification_rate(), 1.0);
}

TEST_F(hub_test, an_explicit_clarify_node_pauses_and_resume_reruns_the_previous_node) {
  auto a = add(std::make_shared<fn_agent>("a", [](agents::agent_context& c, int) {
    if (c.clarification_answers.empty()) return make_envelope({{"status", "need_more"}}, 0.95);
    return make_envelope({{"status", "ok"}}, 0.95);
  }));
  workflow_builder wf{"flow"};
  wf.agent("a").route(condition::equals("/status", "need_more"), "ask").otherwise("done");
  wf.clarify("ask");
  wf.end("done");
  auto paused = run(wf);
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);
  EXPECT_EQ(paused.clarification->node, "a");
  auto s = resume(wf, paused.id, "more details");
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(a->calls(), 2);
}

TEST_F(hub_test, clarification_rounds_are_bounded) {
  add(constant_agent("a", {}, 0.2));
  workflow_builder wf{"flow"};
  wf.max_clarification_rounds(2).agent("a").otherwise("done");
  wf.end("done");
  auto s = run(wf);
  ASSERT_EQ(s.status, workflow_status::awaiting_clarification);
  s = resume(wf, s.id, "first");
  ASSERT_EQ(s.status, workflow_status::awaiting_clarification);
  EXPECT_EQ(s.clarification->round, 2);
  s = resume(wf, s.id, "second");
  EXPECT_EQ(s.status, workflow_status::failed);
  EXPECT_EQ(s.first_error()->type, "clarification_limit");
  EXPECT_THAT(s.first_error()->message, HasSubstr("after 2 round(s)"));
}

TEST_F(hub_test, resume_of_an_unknown_id_is_a_clear_error) {
  add(constant_agent("a"));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("done");
  wf.end("done");
  make_hub();
  try {
    resume(wf, "wf-nope", "answer");
    FAIL() << "resumed an unknown workflow";
  } catch (const orchestrator_error& e) {
    EXPECT_EQ(e.errc(), orchestrator_errc::unknown_workflow);
    EXPECT_THAT(e.what(), HasSubstr("no workflow with id 'wf-nope'"));
  }
}

TEST_F(hub_test, resume_of_a_completed_workflow_is_a_clear_error) {
  add(constant_agent("a"));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("done");
  wf.end("done");
  make_hub(testing::options(make_in_memory_checkpoint_store()));
  auto s = run(wf);
  ASSERT_EQ(s.status, workflow_status::completed);
  try {
    resume(wf, s.id, "answer");
    FAIL() << "resumed a completed workflow";
  } catch (const orchestrator_error& e) {
    EXPECT_EQ(e.errc(), orchestrator_errc::not_awaiting_clarification);
    EXPECT_THAT(e.what(), HasSubstr("is completed; only a workflow awaiting clarification or approval, or interrupted, can be resumed"));
  }
  // Without awaiting: the handle's wait() rethrows the refusal.
  auto handle = hub_->start_resume(wf.compile(registry_), s.id, "x");
  io_.restart();
  io_.run();
  EXPECT_THROW(handle.wait(), orchestrator_error);
}

TEST_F(hub_test, resume_with_another_definition_is_refused) {
  add(constant_agent("a", {}, 0.1));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("done");
  wf.end("done");
  workflow_builder other{"other"};
  other.agent("a").otherwise("done");
  other.end("done");
  make_hub(testing::options(make_in_memory_checkpoint_store()));
  auto s = run(wf);
  try {
    resume(other, s.id, "x");
    FAIL() << "resumed with another definition";
  } catch (const orchestrator_error& e) {
    EXPECT_EQ(e.errc(), orchestrator_errc::workflow_mismatch);
  }
}

TEST_F(hub_test, checkpoints_after_every_step_and_resumes_from_the_store) {
  auto store = make_in_memory_checkpoint_store();
  add(unsure_until_answered("a"));
  add(constant_agent("b"));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("b");
  wf.agent("b").otherwise("done");
  wf.end("done");
  make_hub(testing::options(store));
  auto paused = run(wf);
  auto cp = sync(store->load(paused.id));
  ASSERT_TRUE(cp);
  EXPECT_EQ(cp->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(cp->step, 1);
  EXPECT_EQ(sync(hub_->find(paused.id))->clarification->question, paused.clarification->question);

  // A second hub (same store) resumes it.
  hub second{io_.get_executor(), registry_, testing::options(store, {}, silent_logger())};
  auto s = sync(second.resume(wf.compile(registry_), paused.id, "Tuesday"));
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(sync(store->load(paused.id))->status, workflow_status::completed);
  EXPECT_EQ(sync(store->load(paused.id))->step, 3);
}

TEST_F(hub_test, retention_prunes_finished_runs_at_most_once_a_minute) {
  auto store = make_in_memory_checkpoint_store();
  add(constant_agent("a"));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("done");
  wf.end("done");
  auto options = testing::options(store);
  options.retention = std::chrono::seconds(0);
  make_hub(std::move(options));
  ASSERT_EQ(run(wf).status, workflow_status::completed);
  EXPECT_TRUE(sync(list_all(*store)).empty()) << "the finished run was not pruned";
  // Within the minute, the next finished run stays.
  const auto second = run(wf);
  const auto left = sync(list_all(*store));
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left.front().workflow_id, second.id);
}

TEST_F(hub_test, a_run_with_the_id_of_a_stored_run_fails_and_leaves_it_alone) {
  auto store = make_in_memory_checkpoint_store();
  add(unsure_until_answered("a"));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("done");
  wf.end("done");
  make_hub(testing::options(store));
  const auto paused = run(wf);
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);
  run_options same_id;
  same_id.workflow_id = paused.id;
  const auto clash = sync(hub_->run(wf.compile(registry_), json::object{}, same_id));
  EXPECT_EQ(clash.status, workflow_status::failed);
  ASSERT_NE(clash.first_error(), nullptr);
  EXPECT_EQ(clash.first_error()->type, "run_exists");
  const auto stored = sync(store->load(paused.id));
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(sync(hub_->resume(wf.compile(registry_), paused.id, "Tuesday")).status, workflow_status::completed);
}

// Another process holds the database's write lock: the run's first save
// waits in the store's thread, and the hub's own thread goes on serving
// others (here a timer, which then lets the lock go).
TEST_F(hub_test, a_slow_store_never_blocks_the_hubs_thread) {
  const auto dir = std::filesystem::temp_directory_path() / ("sb-slow-store-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto db = dir / "runs.db";
  auto store = stores::make_sqlite_checkpoint_store(db);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);

  add(constant_agent("a"));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("done");
  wf.end("done");
  make_hub(testing::options(store));
  auto handle = hub_->start(wf.compile(registry_), json::object{});
  bool run_done_when_timer_fired = true;
  asio::steady_timer timer(io_, std::chrono::milliseconds(50));
  timer.async_wait([&](boost::system::error_code) {
    run_done_when_timer_fired = handle.done();
    sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  });
  io_.restart();
  io_.run();
  EXPECT_FALSE(run_done_when_timer_fired) << "the run should still wait for the locked store";
  EXPECT_EQ(handle.wait().status, workflow_status::completed);
  sqlite3_close(other);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchboard::orchestrator
