#include <switchboard/orchestrator/hub.hpp>

#include <switchboard/models/model_error.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/orchestrator/error.hpp>

#include "hub_test_fixture.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <stdexcept>

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

// ---------------------------------------------------------------- routing

TEST_F(hub_test, routes_are_tried_in_order_and_the_first_match_wins) {
  add(constant_agent("a", {{"status", "b"}, {"score", 5}}));
  auto b_agent = add(constant_agent("b"));
  auto x_agent = add(constant_agent("x"));
  workflow_builder wf{"flow"};
  wf.agent("a")
      .route(condition::equals("/status", "x"), "x")
      .route(condition::compare("/score", comparison::gt, 1), "b")
      .route(condition::equals("/status", "b"), "x")
      .otherwise("x");
  wf.agent("b").otherwise("done");
  wf.agent("x").otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(b_agent->calls(), 1);
  EXPECT_EQ(x_agent->calls(), 0);
  ASSERT_EQ(s.audit.size(), 2u);
  EXPECT_EQ(s.audit[0].agent, "a");
  EXPECT_EQ(s.audit[0].route, "b");
  EXPECT_EQ(s.audit[0].condition, "/score > 1");
  EXPECT_EQ(s.audit[1].route, "done");
  EXPECT_EQ(s.audit[1].condition, "otherwise");
  EXPECT_EQ(observer_->routes(), (std::vector<std::string>{"a->b", "b->done"}));
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->explanation, "done");
}

TEST_F(hub_test, otherwise_catches_what_no_condition_matched) {
  add(constant_agent("a", {{"status", "unknown"}}));
  add(constant_agent("b"));
  workflow_builder wf{"flow"};
  wf.agent("a").route(condition::in("/status", {"x", "y"}), "done").otherwise("b");
  wf.agent("b").otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(s.audit[0].route, "b");
}

TEST_F(hub_test, no_matching_route_fails_with_a_record_listing_the_routes) {
  add(constant_agent("a", {{"status", "z"}}));
  workflow_builder wf{"flow"};
  wf.agent("a").route(condition::equals("/status", "x"), "done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::failed);
  ASSERT_NE(s.first_error(), nullptr);
  EXPECT_EQ(s.first_error()->type, "no_route");
  EXPECT_THAT(s.first_error()->message, HasSubstr("node 'a': no route matched"));
  EXPECT_THAT(s.first_error()->message, HasSubstr(R"(/status == "x")"));
}

TEST_F(hub_test, cycles_are_stopped_by_the_step_bound) {
  auto a = add(constant_agent("a", {{"status", "again"}}));
  add(constant_agent("b"));
  workflow_builder wf{"flow"};
  wf.max_steps(5);
  wf.agent("a").route(condition::equals("/status", "again"), "b").otherwise("done");
  wf.agent("b").otherwise("a");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::failed);
  EXPECT_EQ(s.step, 5);
  EXPECT_EQ(a->calls(), 3);
  EXPECT_EQ(s.history("a").size(), 3u);
  EXPECT_EQ(s.first_error()->type, "step_limit");
  EXPECT_THAT(s.first_error()->message, HasSubstr("after 5 steps (max_steps 5)"));
}

TEST_F(hub_test, a_fail_node_fails_the_workflow_with_its_message) {
  add(constant_agent("a", {{"status", "bad"}}));
  workflow_builder wf{"flow"};
  wf.agent("a").route(condition::equals("/status", "bad"), "oops").otherwise("done");
  wf.fail("oops", "the request cannot be scheduled");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::failed);
  EXPECT_EQ(s.first_error()->type, "failed_by_definition");
  EXPECT_THAT(s.first_error()->message, HasSubstr("the request cannot be scheduled"));
}

// ---------------------------------------------------------------- failures, retries, timeouts

TEST_F(hub_test, retryable_errors_are_retried_until_success) {
  auto flaky = add(std::make_shared<fn_agent>("a", [](agents::agent_context&, int call) {
    if (call < 3) throw models::model_error(models::model_errc::http_status, "HTTP 503", 503, "busy", true);
    return make_envelope({{"status", "ok"}});
  }));
  workflow_builder wf{"flow"};
  wf.agent("a").retry(testing::retries(3, 1ms)).otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(flaky->calls(), 3);
  EXPECT_EQ(s.audit[0].attempts, 3);
}

// What an attempt answered with (its model's text, its ladder's attempts,
// its prompt version) is on record only for the attempt that counts.
TEST_F(hub_test, a_retried_step_records_only_the_last_attempts_answer) {
  auto flaky = add(std::make_shared<fn_agent>("a", [](agents::agent_context& context, int call) {
    if (call == 1) {
      context.raw_text = "the first attempt's text";
      context.used_prompt_version = "a.v1";
      context.model_attempts.push_back(json::object{{"rung", "direct"}});
      auto busy = make_envelope({{"status", "busy"}});
      busy.error = protocol::error_record{"busy", "try again", true, ""};
      return busy;
    }
    return make_envelope({{"status", "ok"}});
  }));
  workflow_builder wf{"flow"};
  wf.agent("a").retry(testing::retries(2, 1ms)).otherwise("done");
  wf.end("done");
  auto s = run(wf);
  ASSERT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
  EXPECT_EQ(flaky->calls(), 2);
  ASSERT_EQ(s.audit.size(), 1u);
  EXPECT_EQ(s.audit[0].attempts, 2);
  EXPECT_EQ(s.audit[0].raw_text, "");
  EXPECT_EQ(s.audit[0].prompt_version, "");
  EXPECT_TRUE(s.audit[0].model_attempts.empty());
}

TEST_F(hub_test, retries_stop_at_max_attempts_and_non_retryable_errors_are_not_retried) {
  auto always = add(std::make_shared<fn_agent>("a", [](agents::agent_context&, int) -> protocol::envelope {
    throw models::model_error(models::model_errc::http_status, "HTTP 503", 503, "busy", true);
  }));
  auto fatal = add(std::make_shared<fn_agent>("b", [](agents::agent_context&, int) -> protocol::envelope {
    throw models::model_error(models::model_errc::http_status, "HTTP 401", 401, "bad key", false);
  }));
  workflow_builder wf{"flow"};
  wf.agent("a").retry(testing::retries(2)).otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::failed);
  EXPECT_EQ(always->calls(), 2);
  EXPECT_EQ(s.first_error()->type, "http_status");
  EXPECT_EQ(s.first_error()->agent, "a");
  EXPECT_TRUE(s.first_error()->retryable);

  workflow_builder wf2{"flow2"};
  wf2.agent("b").retry(testing::retries(5)).otherwise("done");
  wf2.end("done");
  auto s2 = run(wf2);
  EXPECT_EQ(s2.status, workflow_status::failed);
  EXPECT_EQ(fatal->calls(), 1);
  EXPECT_THAT(s2.first_error()->message, HasSubstr("agent 'b'"));
  EXPECT_EQ(hub_->metrics().failures("http_status"), 2u);
}

TEST_F(hub_test, a_node_timeout_cancels_the_agent_and_can_be_retried) {
  auto slow = add(constant_agent("a", {}, 0.9, 10s));
  workflow_builder wf{"flow"};
  wf.agent("a").timeout(20ms).retry(testing::retries(2)).otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::failed);
  EXPECT_EQ(slow->calls(), 2);
  EXPECT_EQ(s.first_error()->type, "timeout");
  EXPECT_THAT(s.first_error()->message, HasSubstr("did not answer within 20 ms at node 'a'"));
}

TEST_F(hub_test, on_error_routes_a_failed_step) {
  add(std::make_shared<fn_agent>("a", [](agents::agent_context&, int) -> protocol::envelope {
    throw std::runtime_error("database down");
  }));
  auto fallback = add(constant_agent("b"));
  workflow_builder wf{"flow"};
  wf.agent("a").on_error("b").otherwise("done");
  wf.agent("b").otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(fallback->calls(), 1);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].type, "agent_exception");
  EXPECT_THAT(s.errors[0].message, HasSubstr("agent 'a' threw: database down"));
  EXPECT_EQ(s.audit[0].route, "b");
  EXPECT_EQ(s.audit[0].condition, "on_error");
}

TEST_F(hub_test, error_envelopes_and_invalid_envelopes_fail_the_step) {
  add(std::make_shared<fn_agent>("a", [](agents::agent_context&, int) {
    return protocol::make_error_envelope({"upstream_unavailable", "calendar API down", false, ""},
                                         "The calendar could not be read.");
  }));
  add(constant_agent("b", {{"status", 5}}));  // the schema says string
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::failed);
  EXPECT_EQ(s.first_error()->type, "upstream_unavailable");
  EXPECT_EQ(s.first_error()->agent, "a");

  workflow_builder wf2{"flow2"};
  wf2.agent("b").otherwise("done");
  wf2.end("done");
  auto s2 = run(wf2);
  EXPECT_EQ(s2.status, workflow_status::failed);
  EXPECT_EQ(s2.first_error()->type, "invalid_envelope");
  EXPECT_THAT(s2.first_error()->message, HasSubstr("/data/status"));
}

// ---------------------------------------------------------------- parallel groups

TEST_F(hub_test, a_parallel_group_runs_concurrently_and_stores_each_output) {
  add(constant_agent("a", {{"status", "from a"}}, 0.9, 30ms));
  add(constant_agent("b", {{"status", "from b"}}, 0.8, 30ms));
  workflow_builder wf{"flow"};
  wf.parallel("both", {"a", "b"}).route(condition::equals("/b/status", "from b"), "done").otherwise("oops");
  wf.end("done");
  wf.fail("oops", "wrong route");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(s.latest("a")->data.at("status"), "from a");
  EXPECT_EQ(s.latest("b")->data.at("status"), "from b");
  EXPECT_EQ(s.step, 1);
  ASSERT_TRUE(s.result);
  EXPECT_DOUBLE_EQ(s.result->confidence, 0.8);  // the group's lowest
  EXPECT_EQ(s.result->data.at("a").at("status"), "from a");
  EXPECT_EQ(s.audit.back().node, "both");
  EXPECT_EQ(s.audit.back().route, "done");
}

TEST_F(hub_test, a_failing_member_cancels_the_rest_when_configured) {
  add(std::make_shared<fn_agent>("a", [](agents::agent_context&, int) -> protocol::envelope {
    throw std::runtime_error("boom");
  }, 5ms));
  auto slow = add(constant_agent("b", {}, 0.9, 30s));
  workflow_builder wf{"flow"};
  wf.parallel("both", {"a", "b"}).cancel_rest_on_failure().otherwise("done");
  wf.end("done");
  auto s = run(wf);  // would take 30 s if b were not cancelled
  EXPECT_EQ(s.status, workflow_status::failed);
  EXPECT_EQ(s.first_error()->type, "cancelled");
  EXPECT_EQ(s.first_error()->agent, "b");
  EXPECT_THAT(s.first_error()->message, HasSubstr("because agent 'a' failed"));
  EXPECT_EQ(s.errors.back().type, "agent_exception");
  EXPECT_THAT(s.errors.back().message, HasSubstr("parallel group 'both'"));
  EXPECT_EQ(s.latest("b"), nullptr);
}

TEST_F(hub_test, without_cancel_rest_the_group_finishes_and_keeps_successes) {
  add(std::make_shared<fn_agent>("a", [](agents::agent_context&, int) -> protocol::envelope {
    throw std::runtime_error("boom");
  }));
  add(constant_agent("b", {{"status", "fine"}}, 0.9, 10ms));
  workflow_builder wf{"flow"};
  wf.parallel("both", {"a", "b"}).otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::failed);
  ASSERT_NE(s.latest("b"), nullptr);
  EXPECT_EQ(s.latest("b")->data.at("status"), "fine");
}

// ---------------------------------------------------------------- coordinator and synthesis

TEST_F(hub_test, the_coordinator_model_chooses_the_agent_and_passes_instructions) {
  auto model = std::make_shared<models::scripted_model>();
  model->push_text(R"({"agent_name": "b", "additional_instructions": "focus on mornings"})", {12, 8});
  agents::model_set models;
  models.add("coordinator", model);
  std::string seen_instructions;
  add(constant_agent("a"));
  add(std::make_shared<fn_agent>("b", [&](agents::agent_context& c, int) {
    seen_instructions = c.additional_instructions;
    return make_envelope({{"status", "b ran"}});
  }));
  workflow_builder wf{"flow"};
  wf.coordinator("pick", testing::coordinate({"a", "b"}, "a")).otherwise("sum");
  wf.synthesis("sum").otherwise("done");
  wf.end("done");
  make_hub(testing::options(nullptr, models));
  auto s = run(wf, json::object{{"request", "book a room"}});
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(seen_instructions, "focus on mornings");
  EXPECT_EQ(s.audit[0].agent, "b");
  EXPECT_EQ(s.audit[0].note, "coordinator chose 'b'");
  EXPECT_EQ(s.audit[0].tokens.total(), 20);
  EXPECT_TRUE(s.errors.empty());
  ASSERT_EQ(model->calls(), 1u);
  auto request = model->request(0);
  EXPECT_THAT(request.messages.back().content, HasSubstr("book a room"));
  // Deterministic synthesis: every latest output under outputs, explanations joined.
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->data.at("outputs").at("b").at("status"), "b ran");
  EXPECT_EQ(s.latest("sum")->data.at("answer"), "done");
}

TEST_F(hub_test, a_failing_coordinator_falls_back_to_the_default_agent_and_says_why) {
  auto model = std::make_shared<models::scripted_model>();
  for (int i = 0; i < 3; ++i) model->push_text(R"({"agent_name": "nobody"})");
  agents::model_set models;
  models.add("default", model);
  auto a = add(constant_agent("a"));
  add(constant_agent("b"));
  workflow_builder wf{"flow"};
  wf.coordinator("pick", testing::coordinate({"a", "b"}, "a")).otherwise("done");
  wf.end("done");
  make_hub(testing::options(nullptr, models));
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(a->calls(), 1);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].type, "coordinator_failed");
  EXPECT_THAT(s.errors[0].message, HasSubstr("coordinator node 'pick'"));
  EXPECT_THAT(s.errors[0].message, HasSubstr("using default agent 'a'"));
  EXPECT_THAT(s.audit[0].note, HasSubstr("default agent 'a' used"));
}

TEST_F(hub_test, a_coordinator_without_a_model_uses_the_default_agent) {
  auto a = add(constant_agent("a"));
  workflow_builder wf{"flow"};
  wf.coordinator("pick", testing::coordinate({}, "a")).otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(a->calls(), 1);
  EXPECT_THAT(s.errors.at(0).message, HasSubstr("no model for role 'coordinator'"));
}

TEST_F(hub_test, a_deterministic_router_works_without_a_model) {
  add(constant_agent("a"));
  auto b = add(constant_agent("b"));
  workflow_builder wf{"flow"};
  wf.coordinator("pick", testing::coordinate({}, "a", [](const json::value& input, const agents::agent_outputs&) {
        return protocol::coordination_request{std::string(input.at("want").as_string()), "be brief"};
      }))
      .otherwise("done");
  wf.end("done");
  auto s = run(wf, json::object{{"want", "b"}});
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(b->calls(), 1);
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(s.audit[0].note, "router chose 'b'");

  auto s2 = run(wf, json::object{{"want", "zzz"}});
  EXPECT_EQ(s2.status, workflow_status::completed);
  EXPECT_THAT(s2.errors.at(0).message, HasSubstr("router chose 'zzz', which is not a candidate"));
}

TEST_F(hub_test, synthesis_by_model_writes_the_final_answer) {
  auto model = std::make_shared<models::scripted_model>();
  model->push_text(R"({"answer": "Tuesday 10:00 works", "explanation": "Both agreed.", "confidence": 0.85})");
  agents::model_set models;
  models.add("synthesis", model);
  add(constant_agent("a", {{"status", "free at 10"}}));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("sum");
  wf.synthesis("sum", testing::synthesis_by_model("synthesis")).otherwise("done");
  wf.end("done");
  make_hub(testing::options(nullptr, models));
  auto s = run(wf);
  ASSERT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
  EXPECT_EQ(s.result->data.at("answer"), "Tuesday 10:00 works");
  EXPECT_DOUBLE_EQ(s.result->confidence, 0.85);
  EXPECT_THAT(model->request(0).messages.back().content, HasSubstr("free at 10"));
}

// ---------------------------------------------------------------- handles, cancellation, concurrency

// Named coroutines taking their arguments by value, not capturing coroutine
// lambdas: nothing in the frame refers to a closure object that may die first.
asio::awaitable<workflow_state> await_first_then_cancel_second(workflow_handle first, workflow_handle second) {
  auto done = co_await first.async_wait();
  EXPECT_EQ(done.status, workflow_status::completed);
  second.cancel();
  co_return co_await second.async_wait();
}

asio::awaitable<std::variant<workflow_state, std::monostate>> run_racing_a_timer(
    hub& h, std::shared_ptr<const compiled_workflow> workflow, std::chrono::milliseconds limit) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, limit);
  auto run = h.run(std::move(workflow), json::object{});
  auto expired = timer.async_wait(asio::use_awaitable);
  co_return co_await (std::move(run) || std::move(expired));
}

TEST_F(hub_test, start_returns_a_handle_that_can_be_awaited_or_cancelled) {
  add(constant_agent("fast"));
  add(constant_agent("slow", {}, 0.9, 30s));
  workflow_builder quick{"quick"};
  quick.agent("fast").otherwise("done");
  quick.end("done");
  workflow_builder stuck{"stuck"};
  stuck.agent("slow").otherwise("done");
  stuck.end("done");
  auto& h = make_hub();
  auto done = h.start(quick.compile(registry_), json::object{});
  auto cancelled = h.start(stuck.compile(registry_), json::object{}, {.workflow_id = "my-id"});
  EXPECT_EQ(cancelled.id(), "my-id");
  auto waited = sync(await_first_then_cancel_second(done, cancelled));
  EXPECT_TRUE(done.done());
  EXPECT_EQ(waited.status, workflow_status::cancelled);
  EXPECT_EQ(waited.first_error()->type, "cancelled");
  cancelled.cancel();  // no-op once done
}

asio::awaitable<workflow_state> await_done_then_read(workflow_handle handle) {
  co_await handle.async_done();
  EXPECT_TRUE(handle.done());
  co_return handle.result();
}

// A run of one 20 ms step, started and not awaited.
class handle_test : public hub_test {
 protected:
  workflow_handle start_one_short_step() {
    add(constant_agent("slow", {{"status", "free at 10"}}, 0.9, 20ms));
    workflow_builder wf{"flow"};
    wf.agent("slow").otherwise("done");
    wf.end("done");
    return make_hub().start(wf.compile(registry_), json::object{});
  }
};

TEST_F(handle_test, a_handle_says_when_the_run_is_done_and_then_gives_its_state) {
  auto handle = start_one_short_step();
  EXPECT_THROW(handle.result(), std::logic_error);  // still running: no state to give yet
  auto state = sync(await_done_then_read(handle));
  EXPECT_EQ(state.status, workflow_status::completed);
  EXPECT_EQ(state.latest("slow")->data.at("status"), "free at 10");
  EXPECT_EQ(handle.result().id, state.id);  // as often as asked
}

TEST_F(handle_test, a_handle_calls_back_on_the_bound_executor_once_the_run_stopped_even_when_asked_afterwards) {
  auto handle = start_one_short_step();
  auto strand = asio::make_strand(io_);
  std::vector<std::string> calls;
  // Move-only, as a caller's state handed to the callback is.
  auto state_seen = std::make_unique<workflow_status>(workflow_status::running);
  handle.on_done(asio::bind_executor(strand, [&, seen = std::move(state_seen)]() mutable {
    EXPECT_TRUE(strand.running_in_this_thread());
    *seen = handle.result().status;
    calls.push_back(std::string("first: ") + std::string(to_string(*seen)));
  }));
  EXPECT_TRUE(calls.empty());  // still running
  io_.restart();
  io_.run();
  ASSERT_TRUE(handle.done());
  EXPECT_EQ(calls, std::vector<std::string>{"first: completed"});

  // Asked once the run stopped: posted, never called inline.
  handle.on_done(asio::bind_executor(strand, [&] { calls.push_back("later"); }));
  EXPECT_EQ(calls.size(), 1u);
  io_.restart();
  io_.run();
  EXPECT_EQ(calls, (std::vector<std::string>{"first: completed", "later"}));
}

TEST_F(hub_test, cancelling_the_awaiting_coroutine_cancels_the_workflow) {
  add(constant_agent("slow", {}, 0.9, 30s));
  workflow_builder wf{"flow"};
  wf.agent("slow").otherwise("done");
  wf.end("done");
  auto& h = make_hub();
  auto compiled = wf.compile(registry_);
  auto result = sync(run_racing_a_timer(h, compiled, 20ms));
  EXPECT_EQ(result.index(), 1u);  // the timer won; the run was cancelled and awaited
  EXPECT_EQ(hub_->metrics().collect().empty(), false);
}

TEST(hub_concurrency, thousands_of_workflows_on_a_pool_keep_their_state_apart) {
  agents::agent_registry registry(testing::test_schemas());
  // Each agent checks that the previous agent saw the same input, then
  // suspends on a timer so that thousands of workflows interleave.
  auto chained = [](std::string name, std::string previous) {
    return std::make_shared<fn_agent>(
        name,
        [previous](agents::agent_context& c, int) {
          auto n = c.input.at("n").as_int64();
          std::string mine = std::to_string(n);
          if (!previous.empty()) {
            const auto* before = c.outputs.latest(previous);
            if (!before || before->data.at("status").as_string() != mine) mine = "crossed";
          }
          return make_envelope({{"status", mine}});
        },
        std::chrono::milliseconds(1 + name.size() % 3));
  };
  registry.add(chained("a", ""));
  registry.add(chained("bb", "a"));
  registry.add(chained("ccc", "bb"));
  registry.add(chained("dddd", "ccc"));
  registry.add(constant_agent("stuck", {}, 0.9, 60s));
  workflow_builder wf{"chain"};
  wf.agent("a").otherwise("bb");
  wf.agent("bb").otherwise("ccc");
  wf.agent("ccc").otherwise("dddd");
  wf.agent("dddd").otherwise("done");
  wf.end("done");
  workflow_builder stuck{"stuck"};
  stuck.agent("stuck").otherwise("done");
  stuck.end("done");
  workflow_builder timed{"timed"};
  timed.agent("stuck").timeout(5ms).otherwise("done");
  timed.end("done");
  auto chain = wf.compile(registry);
  auto stuck_wf = stuck.compile(registry);
  auto timed_wf = timed.compile(registry);

  asio::thread_pool pool(2);
  hub h{pool.get_executor(), registry, testing::options(nullptr, {}, silent_logger())};
  constexpr int count = 3000;
  std::vector<workflow_handle> handles;
  std::vector<workflow_handle> to_cancel;
  std::vector<workflow_handle> to_time_out;
  handles.reserve(count);
  for (int i = 0; i < count; ++i) handles.push_back(h.start(chain, json::object{{"n", i}}));
  for (int i = 0; i < 200; ++i) to_cancel.push_back(h.start(stuck_wf, json::object{}));
  for (int i = 0; i < 200; ++i) to_time_out.push_back(h.start(timed_wf, json::object{}));
  for (auto& c : to_cancel) c.cancel();

  for (int i = 0; i < count; ++i) {
    auto s = handles[i].wait();
    ASSERT_EQ(s.status, workflow_status::completed) << i;
    ASSERT_EQ(s.latest("dddd")->data.at("status").as_string(), std::to_string(i)) << "state crossed in workflow " << i;
    ASSERT_EQ(s.audit.size(), 4u);
  }
  for (auto& c : to_cancel) EXPECT_EQ(c.wait().status, workflow_status::cancelled);
  for (auto& t : to_time_out) {
    auto s = t.wait();
    EXPECT_EQ(s.status, workflow_status::failed);
    EXPECT_EQ(s.first_error()->type, "timeout");
  }
  EXPECT_EQ(h.metrics().agent("a").ok, static_cast<std::uint64_t>(count));
  EXPECT_EQ(h.metrics().route_count("dddd", "done"), static_cast<std::uint64_t>(count));
  pool.join();
}

TEST_F(hub_test, metrics_are_exported_as_samples) {
  add(constant_agent("a"));
  workflow_builder wf{"flow"};
  wf.agent("a").otherwise("done");
  wf.end("done");
  run(wf);
  run(wf);
  auto samples = hub_->metrics().collect();
  auto find = [&](std::string_view name, std::map<std::string, std::string> labels) -> double {
    for (const auto& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    return -1;
  };
  EXPECT_EQ(find("switchboard_agent_calls_total", {{"agent", "a"}, {"outcome", "ok"}}), 2);
  EXPECT_EQ(find("switchboard_route_total", {{"node", "a"}, {"target", "done"}}), 2);
  EXPECT_EQ(find("switchboard_workflows_total", {{"status", "completed"}}), 2);
  EXPECT_EQ(find("switchboard_clarification_rate", {}), 0);
  auto kinds = observer_->kinds();
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), event_kind::workflow_started), 2);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), event_kind::step_completed), 2);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), event_kind::workflow_completed), 2);
}

}  // namespace
}  // namespace switchboard::orchestrator
