// Deadlines hold whatever the agent does: an agent that ignores cancellation,
// one that swallows it, one that blocks its thread (on the workflow's strand
// or opted into the hub's pool). The step fails with `timeout`, the hub does
// not wait for the agent, and an answer that comes later is never recorded.
// No test times the hub: the agents misbehave for 60 s, run_until() gives up
// after 30 s, and an agent that has not returned shows the run did not wait.
#include <switchboard/orchestrator/hub.hpp>

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include "orchestrator_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include <thread>

namespace switchboard::orchestrator {
namespace {

using ::testing::HasSubstr;
using testing::constant_agent;
using testing::make_envelope;
namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

enum class misbehaviour {
  deaf,          // awaits a timer through an empty cancellation slot: never sees the cancellation
  stubborn,      // sees operation_aborted and goes back to waiting
  blocks_thread  // sleeps on its thread
};

// Misbehaves for `takes` on its first `slow_calls` calls, then answers at once.
class misbehaving_agent final : public agents::agent {
 public:
  misbehaving_agent(std::string name, misbehaviour how, std::chrono::milliseconds takes, int slow_calls = 1000,
                    bool declares_blocking = false)
      : name_(std::move(name)), how_(how), takes_(takes), slow_calls_(slow_calls), declares_(declares_blocking) {}

  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "an agent that ignores its deadline"; }
  std::string output_schema() const override { return "test.output@1"; }
  bool blocks_thread() const noexcept override { return declares_; }

  asio::awaitable<protocol::envelope> run(agents::agent_context&) override {
    const int call = ++calls_;
    thread_ = std::this_thread::get_id();
    if (call <= slow_calls_) co_await misbehave();
    ++returned_;
    co_return make_envelope({{"status", call <= slow_calls_ ? "late" : "prompt"}});
  }

  int calls() const noexcept { return calls_; }
  int returned() const noexcept { return returned_; }
  std::thread::id thread() const { return thread_; }

 private:
  asio::awaitable<void> misbehave() {
    const auto until = steady::now() + takes_;
    if (how_ == misbehaviour::blocks_thread) {
      std::this_thread::sleep_for(takes_);
      co_return;
    }
    asio::steady_timer timer(co_await asio::this_coro::executor, until);
    if (how_ == misbehaviour::deaf) {
      co_await timer.async_wait(asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable));
      co_return;
    }
    co_await asio::this_coro::throw_if_cancelled(false);
    while (steady::now() < until) co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  std::string name_;
  misbehaviour how_;
  std::chrono::milliseconds takes_;
  int slow_calls_;
  bool declares_;
  std::atomic<int> calls_{0};
  std::atomic<int> returned_{0};
  std::atomic<std::thread::id> thread_{};
};

class silent_observer final : public observer {
 public:
  void on_event(const event&) noexcept override {}
};

class deadline_test : public ::testing::Test {
 protected:
  template <class... Args>
  std::shared_ptr<misbehaving_agent> add_misbehaving(Args&&... args) {
    auto a = std::make_shared<misbehaving_agent>(std::forward<Args>(args)...);
    registry_.add(a);
    return a;
  }

  hub& make_hub(std::shared_ptr<checkpoint_store> store = nullptr, std::size_t blocking_threads = 4) {
    auto options = testing::options(std::move(store), {}, std::make_shared<spdlog::logger>("deadline-test"));
    options.blocking_threads = blocking_threads;
    hub_ = std::make_unique<hub>(io_.get_executor(), registry_, std::move(options));
    return *hub_;
  }

  // Drives the io_context on this thread until `done()`; agents the hub
  // gave up may still hold work, so io_context::run() would wait for them.
  template <class Done>
  void run_until(Done done, std::chrono::seconds bound = 30s) {
    const auto give_up_at = steady::now() + bound;
    io_.restart();
    while (!done() && steady::now() < give_up_at) io_.run_one_for(20ms);
    ASSERT_TRUE(done()) << "still not done after " << bound.count() << " s";
  }

  workflow_state run(const workflow_builder& b, json::value input = json::object{}) {
    if (!hub_) make_hub();
    auto handle = hub_->start(b.compile(registry_), std::move(input));
    run_until([&] { return handle.done(); });
    if (!handle.done()) return {};  // failed above; wait() would never return
    return handle.wait();
  }

  workflow_state stored(const std::string& id) {
    auto future = asio::co_spawn(io_, hub_->find(id), asio::use_future);
    run_until([&] { return future.wait_for(0s) == std::future_status::ready; });
    if (future.wait_for(0s) != std::future_status::ready) return {};
    return future.get().value_or(workflow_state{});
  }

  // Declared first, destroyed last: a call the hub gave up may still be
  // suspended in its agent when the io_context goes.
  agents::agent_registry registry_{testing::test_schemas()};
  asio::io_context io_;
  std::unique_ptr<hub> hub_;
};

workflow_builder with_fallback(const std::string& agent, std::chrono::milliseconds timeout) {
  workflow_builder wf{"deadline"};
  wf.agent(agent).timeout(timeout).on_error("fallback").otherwise("done");
  wf.agent("fallback").otherwise("done");
  wf.end("done");
  return wf;
}

void expect_timed_out_to_fallback(const workflow_state& s, const std::string& agent) {
  EXPECT_EQ(s.status, workflow_status::completed);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].type, "timeout");
  EXPECT_EQ(s.errors[0].agent, agent);
  EXPECT_THAT(s.errors[0].message, HasSubstr("did not answer within 200 ms at node '" + agent + "'"));
  ASSERT_EQ(s.audit.size(), 2u);
  EXPECT_EQ(s.audit[0].condition, "on_error");
  EXPECT_EQ(s.audit[0].route, "fallback");
  EXPECT_EQ(s.latest(agent), nullptr) << "a late answer was recorded";
  EXPECT_NE(s.latest("fallback"), nullptr);
}

// ---------------------------------------------------------------- agents that ignore cancellation

TEST_F(deadline_test, an_agent_deaf_to_cancellation_times_out_on_time_and_the_run_follows_on_error) {
  auto deaf = add_misbehaving("deaf", misbehaviour::deaf, 60s);
  registry_.add(constant_agent("fallback"));
  auto s = run(with_fallback("deaf", 200ms));
  expect_timed_out_to_fallback(s, "deaf");
  EXPECT_EQ(deaf->returned(), 0);  // still waiting: the hub did not wait for it
}

TEST_F(deadline_test, an_agent_that_swallows_cancellation_times_out_and_without_on_error_the_run_fails) {
  auto stubborn = add_misbehaving("stubborn", misbehaviour::stubborn, 60s);
  workflow_builder wf{"deadline"};
  wf.agent("stubborn").timeout(200ms).otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::failed);
  EXPECT_EQ(s.first_error()->type, "timeout");
  EXPECT_TRUE(s.first_error()->retryable);
  EXPECT_EQ(s.audit[0].condition, "failed: timeout");
  EXPECT_EQ(s.latest("stubborn"), nullptr);
  EXPECT_EQ(stubborn->returned(), 0);
}

TEST_F(deadline_test, a_late_answer_that_arrives_after_the_run_moved_on_is_dropped) {
  auto late = add_misbehaving("late", misbehaviour::stubborn, 1500ms);
  registry_.add(constant_agent("fallback"));
  make_hub(make_in_memory_checkpoint_store());
  auto s = run(with_fallback("late", 200ms));
  expect_timed_out_to_fallback(s, "late");
  ASSERT_EQ(late->returned(), 0) << "the run waited for the agent";
  run_until([&] { return late->returned() == 1; });  // the late answer comes
  io_.poll();
  const auto after = stored(s.id);
  expect_timed_out_to_fallback(after, "late");
  EXPECT_EQ(after.step, s.step);
  EXPECT_EQ(hub_->metrics().agent("late").ok, 0u);
  EXPECT_EQ(hub_->metrics().failures("timeout"), 1u);
}

TEST_F(deadline_test, a_timed_out_attempt_is_retried_and_the_retry_answers) {
  auto stubborn = add_misbehaving("stubborn", misbehaviour::deaf, 60s, /*slow_calls=*/1);
  workflow_builder wf{"deadline"};
  wf.agent("stubborn").timeout(200ms).retry(testing::retries(2)).otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(stubborn->calls(), 2);
  EXPECT_EQ(s.audit[0].attempts, 2);
  EXPECT_EQ(s.latest("stubborn")->data.at("status").as_string(), "prompt");
  EXPECT_EQ(s.history("stubborn").size(), 1u);
}

TEST_F(deadline_test, cancelling_a_run_does_not_wait_for_an_agent_deaf_to_cancellation_under_a_deadline) {
  auto deaf = add_misbehaving("deaf", misbehaviour::deaf, 60s);
  workflow_builder wf{"far_deadline"};
  wf.agent("deaf").timeout(50s).otherwise("done");
  wf.end("done");
  make_hub();
  auto handle = hub_->start(wf.compile(registry_), json::object{});
  run_until([&] { return deaf->calls() == 1; });
  handle.cancel();
  run_until([&] { return handle.done(); });
  ASSERT_TRUE(handle.done());
  EXPECT_EQ(deaf->returned(), 0);  // still waiting: the run did not wait for it
  EXPECT_EQ(handle.wait().status, workflow_status::cancelled);
  EXPECT_EQ(handle.wait().latest("deaf"), nullptr);
}

TEST_F(deadline_test, an_io_context_destroyed_while_a_run_waits_for_an_agent_releases_the_run_and_the_hub) {
  auto deaf = add_misbehaving("deaf", misbehaviour::deaf, 60s);
  workflow_builder wf{"far_deadline"};
  wf.agent("deaf").timeout(50s).otherwise("done");
  wf.end("done");
  auto observer = std::make_shared<silent_observer>();
  {
    asio::io_context io;
    hub h{io.get_executor(), registry_, testing::options(nullptr)};
    h.add_observer(observer);
    auto handle = h.start(wf.compile(registry_), json::object{});
    while (deaf->calls() == 0 && io.run_one() > 0) {
    }
    ASSERT_EQ(deaf->calls(), 1);
  }
  // Had the run and the call held each other, the run would hold the hub
  // (and its observers) forever.
  EXPECT_EQ(observer.use_count(), 1);
}

// ---------------------------------------------------------------- checkpoints

TEST_F(deadline_test, a_checkpointed_timeout_is_recorded_as_failed_and_resume_never_sees_the_late_answer) {
  auto late = add_misbehaving("slow", misbehaviour::stubborn, 600ms, /*slow_calls=*/1);
  workflow_builder wf{"checkpointed"};
  wf.agent("slow").timeout(200ms).on_error("ask").otherwise("done");
  wf.clarify("ask");
  wf.end("done");
  make_hub(make_in_memory_checkpoint_store());
  auto paused = run(wf);
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);
  run_until([&] { return late->returned() == 1; });
  io_.poll();

  const auto saved = stored(paused.id);
  EXPECT_EQ(saved.status, workflow_status::awaiting_clarification);
  ASSERT_EQ(saved.errors.size(), 1u);
  EXPECT_EQ(saved.errors[0].type, "timeout");
  EXPECT_EQ(saved.audit[0].condition, "on_error");
  EXPECT_EQ(saved.latest("slow"), nullptr);

  auto future = asio::co_spawn(io_, hub_->resume(wf.compile(registry_), paused.id, "go on"), asio::use_future);
  run_until([&] { return future.wait_for(0s) == std::future_status::ready; });
  auto resumed = future.get();
  EXPECT_EQ(resumed.status, workflow_status::completed);
  ASSERT_EQ(resumed.history("slow").size(), 1u);
  EXPECT_EQ(resumed.latest("slow")->data.at("status").as_string(), "prompt");
  EXPECT_EQ(stored(paused.id).history("slow").size(), 1u);
}

// ---------------------------------------------------------------- agents that block their thread

TEST_F(deadline_test, an_agent_blocking_the_runs_thread_is_late_even_though_the_timer_could_not_fire) {
  auto blocker = add_misbehaving("blocker", misbehaviour::blocks_thread, 400ms);
  workflow_builder wf{"blocked"};
  wf.agent("blocker").timeout(50ms).otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(blocker->returned(), 1);  // it had to: it held the only thread
  EXPECT_EQ(s.status, workflow_status::failed);
  EXPECT_EQ(s.first_error()->type, "timeout");
  EXPECT_EQ(s.latest("blocker"), nullptr) << "a late answer was accepted as success";
}

TEST_F(deadline_test, a_blocking_agent_on_the_pool_times_out_while_other_workflows_go_on) {
  auto sleeper =
      std::make_shared<misbehaving_agent>("sleeper", misbehaviour::blocks_thread, 2000ms);
  registry_.add(agents::run_on_thread_pool(sleeper));
  registry_.add(constant_agent("fallback"));
  for (const char* name : {"a", "b", "c", "d", "e"}) registry_.add(constant_agent(name, {}, 0.9, 20ms));
  workflow_builder chain{"chain"};
  chain.agent("a").otherwise("b");
  chain.agent("b").otherwise("c");
  chain.agent("c").otherwise("d");
  chain.agent("d").otherwise("e");
  chain.agent("e").otherwise("done");
  chain.end("done");
  make_hub(make_in_memory_checkpoint_store());

  auto blocked = hub_->start(with_fallback("sleeper", 200ms).compile(registry_), json::object{});
  auto other = hub_->start(chain.compile(registry_), json::object{});
  run_until([&] { return blocked.done() && other.done(); });
  EXPECT_EQ(sleeper->returned(), 0) << "the io_context thread waited for the blocking agent";
  EXPECT_NE(sleeper->thread(), std::this_thread::get_id());
  expect_timed_out_to_fallback(blocked.wait(), "sleeper");
  EXPECT_EQ(other.wait().status, workflow_status::completed);

  // The late result comes after the workflow ended, from the pool: dropped.
  const auto id = blocked.id();
  run_until([&] { return sleeper->returned() == 1; });
  io_.poll();
  expect_timed_out_to_fallback(stored(id), "sleeper");
  EXPECT_EQ(hub_->metrics().agent("sleeper").ok, 0u);
}

TEST_F(deadline_test, a_blocking_call_whose_deadline_passes_while_it_waits_for_a_pool_thread_never_starts) {
  auto sleeper = add_misbehaving("sleeper", misbehaviour::blocks_thread, 1000ms, 1000, /*declares_blocking=*/true);
  workflow_builder wf{"queued"};
  wf.agent("sleeper").timeout(200ms).otherwise("done");
  wf.end("done");
  make_hub(nullptr, /*blocking_threads=*/1);
  auto compiled = wf.compile(registry_);
  auto first = hub_->start(compiled, json::object{});
  auto second = hub_->start(compiled, json::object{});
  run_until([&] { return first.done() && second.done(); });
  EXPECT_EQ(first.wait().first_error()->type, "timeout");
  EXPECT_EQ(second.wait().first_error()->type, "timeout");
  run_until([&] { return sleeper->returned() == 1; });
  hub_.reset();  // joins the pool: the queued call is dropped, not run
  EXPECT_EQ(sleeper->calls(), 1);
}

TEST_F(deadline_test, a_blocking_agent_on_the_pool_that_answers_in_time_sees_its_context_and_is_recorded) {
  registry_.add(constant_agent("first", {{"status", "from first"}}));
  auto reader = std::make_shared<testing::fn_agent>("reader", [](agents::agent_context& c, int) {
    std::this_thread::sleep_for(20ms);
    const auto* first = c.outputs.latest("first");
    return make_envelope({{"status", first ? first->data.at("status") : json::value("none")},
                          {"items", json::array{{{"id", c.input.at("id")}}}}});
  });
  registry_.add(agents::run_on_thread_pool(reader));
  workflow_builder wf{"pooled"};
  wf.agent("first").otherwise("reader");
  wf.agent("reader").timeout(10s).otherwise("done");
  wf.end("done");
  auto s = run(wf, json::object{{"id", "x1"}});
  ASSERT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
  EXPECT_EQ(s.latest("reader")->data.at("status").as_string(), "from first");
  EXPECT_EQ(s.latest("reader")->data.at("items").at(0).at("id").as_string(), "x1");
}

TEST(thread_pool_agent, forwards_the_agent_and_declares_it_blocking) {
  auto inner = constant_agent("inner");
  EXPECT_FALSE(inner->blocks_thread());
  auto wrapped = agents::run_on_thread_pool(inner);
  EXPECT_TRUE(wrapped->blocks_thread());
  EXPECT_EQ(wrapped->name(), "inner");
  EXPECT_EQ(wrapped->description(), inner->description());
  EXPECT_EQ(wrapped->output_schema(), "test.output@1");
}

}  // namespace
}  // namespace switchboard::orchestrator
