// The run-queue half of the store conformance suite (included by
// checkpoint_store_conformance.hpp): ready runs in enqueue order, racing
// claimants, a lapsed lease reclaimed, fenced done(). Skipped for a backend
// without a queue (checkpoint_store_backend::open_queue unset).
#pragma once

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

#include <switchboard/orchestrator/run_queue.hpp>

namespace switchboard::orchestrator::testing {

inline enqueue_request queued(std::string id, ready_reason why = ready_reason::new_run, std::string payload = "{}") {
  enqueue_request request;
  request.workflow_id = std::move(id);
  request.workflow_name = "family_scheduler";
  request.why = why;
  request.payload = std::move(payload);
  return request;
}

TEST_P(checkpoint_store_conformance, the_queue_hands_out_ready_runs_in_enqueue_order) {
  auto queue = open_queue();
  if (!queue) GTEST_SKIP() << "no run queue in this backend";
  EXPECT_FALSE(run_now(queue->claim_next("worker-a", long_lease)).has_value()) << "an empty queue has nothing ready";
  run_now(queue->enqueue(queued("first", ready_reason::new_run, R"({"input":1})")));
  run_now(queue->enqueue(queued("second", ready_reason::resumed, R"({"answer":"Sunday"})")));
  EXPECT_EQ(reason_name(claim_refusal(queue->enqueue(queued("first")))->why()), "exists");
  EXPECT_EQ(run_now(queue->size()), 2u);

  const auto first = run_now(queue->claim_next("worker-a", long_lease));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->workflow_id, "first");
  EXPECT_EQ(first->workflow_name, "family_scheduler");
  EXPECT_EQ(first->why, ready_reason::new_run);
  EXPECT_EQ(first->payload, R"({"input":1})");
  EXPECT_EQ(first->owner, "worker-a");
  EXPECT_GT(first->fence, 0);
  EXPECT_EQ(first->previous_owner, "") << "nobody held it before";
  EXPECT_EQ(first->lease_expires, clock_.now() + long_lease) << "the lease ends by the queue's clock";

  const auto second = run_now(queue->claim_next("worker-b", long_lease));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->workflow_id, "second");
  EXPECT_EQ(second->why, ready_reason::resumed);
  EXPECT_EQ(second->payload, R"({"answer":"Sunday"})");
  EXPECT_FALSE(run_now(queue->claim_next("worker-c", long_lease)).has_value()) << "both are claimed";

  run_now(queue->done("first", first->fence));
  EXPECT_EQ(run_now(queue->size()), 1u);
  EXPECT_EQ(reason_name(claim_refusal(queue->done("first", first->fence))->why()), "not_found");
  EXPECT_THAT(refusal_message(queue->claim_next("", long_lease)), ::testing::HasSubstr("empty owner"));
}

TEST_P(checkpoint_store_conformance, a_lapsed_queue_lease_is_reclaimed_and_fences_out_the_old_claimant) {
  auto queue = open_queue();
  if (!queue) GTEST_SKIP() << "no run queue in this backend";
  run_now(queue->enqueue(queued("wf")));
  const auto first = run_now(queue->claim_next("worker-a", 10s));
  ASSERT_TRUE(first.has_value());
  clock_.advance(9s);
  EXPECT_FALSE(run_now(queue->claim_next("worker-b", 10s)).has_value()) << "the lease still runs";
  EXPECT_EQ(run_now(queue->renew("worker-a", 10s)), 1u);
  clock_.advance(9s);
  EXPECT_FALSE(run_now(queue->claim_next("worker-b", 10s)).has_value()) << "renewed, the lease still runs";

  clock_.advance(2s);  // worker-a stopped renewing: its lease lapsed
  const auto second = run_now(queue->claim_next("worker-b", 10s));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->workflow_id, "wf");
  EXPECT_EQ(second->why, ready_reason::lease_lapsed);
  EXPECT_EQ(second->owner, "worker-b");
  EXPECT_EQ(second->previous_owner, "worker-a");
  EXPECT_GT(second->fence, first->fence);
  EXPECT_EQ(run_now(queue->renew("worker-a", 10s)), 0u) << "worker-a holds nothing now";

  EXPECT_EQ(reason_name(claim_refusal(queue->done("wf", first->fence))->why()), "stale_fence");
  EXPECT_EQ(run_now(queue->size()), 1u) << "a stale done() changes nothing";
  run_now(queue->done("wf", second->fence));
  EXPECT_EQ(run_now(queue->size()), 0u);
}

// A run done and enqueued again starts from a new row: its fences still
// count up, so a claimant from before cannot pass for the new one.
TEST_P(checkpoint_store_conformance, a_run_enqueued_again_never_gets_a_fence_it_had) {
  auto queue = open_queue();
  if (!queue) GTEST_SKIP() << "no run queue in this backend";
  std::int64_t last = 0;
  for (int round = 0; round < 3; ++round) {
    run_now(queue->enqueue(queued("thread")));
    const auto claimed = run_now(queue->claim_next("worker-a", 10s));
    ASSERT_TRUE(claimed.has_value());
    EXPECT_GT(claimed->fence, last) << "round " << round;
    EXPECT_EQ(claimed->previous_owner, "") << "a new row: nobody held it";
    EXPECT_EQ(claimed->why, ready_reason::new_run);
    last = claimed->fence;
    run_now(queue->done("thread", claimed->fence));
  }
  run_now(queue->enqueue(queued("other")));
  const auto other = run_now(queue->claim_next("worker-b", 10s));
  ASSERT_TRUE(other.has_value());
  EXPECT_GT(other->fence, last) << "one count for the whole queue";
}

TEST_P(checkpoint_store_conformance, racing_queue_claimants_each_get_a_different_run) {
  auto queue = open_queue();
  if (!queue) GTEST_SKIP() << "no run queue in this backend";
  constexpr int thread_count = 8;
  constexpr int run_count = 5;  // fewer runs than claimants: some get none
  for (int i = 0; i < run_count; ++i) run_now(queue->enqueue(queued("run-" + std::to_string(i))));
  std::latch start(thread_count);
  std::vector<std::optional<queued_run>> claimed(thread_count);
  std::vector<std::string> errors(thread_count);
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        claimed[t] = run_now(queue->claim_next("claimant-" + std::to_string(t), long_lease));
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<std::string> ids;
  for (int t = 0; t < thread_count; ++t) {
    EXPECT_EQ(errors[t], "") << "claimant " << t;
    if (claimed[t]) ids.push_back(claimed[t]->workflow_id);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"run-0", "run-1", "run-2", "run-3", "run-4"}))
      << "every run claimed exactly once";
}

}  // namespace switchboard::orchestrator::testing
