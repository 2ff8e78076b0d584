// The conformance suite's second half: who owns a run. Claims, fencing,
// leases, dead owners and racing claimants (see
// checkpoint_store_conformance.hpp for how a backend joins).
#pragma once

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

namespace switchboard::orchestrator::testing {

// ---------------------------------------------------------------- claim

TEST_P(checkpoint_store_conformance, claim_of_a_paused_run_bumps_the_fence_and_sets_the_owner) {
  const checkpoint paused = paused_run("wf", 3);
  ASSERT_EQ(paused.fence, 1);

  const auto before = std::chrono::system_clock::now();
  const checkpoint claimed = run_now(store_->claim([] {
    claim_request request = claim_for("wf", "worker-b", workflow_status::awaiting_clarification, 3);
    request.lease = 20s;
    return request;
  }()));
  const auto after = std::chrono::system_clock::now();
  EXPECT_EQ(claimed.workflow_id, "wf");
  EXPECT_EQ(claimed.workflow_name, "family_scheduler");
  EXPECT_EQ(claimed.status, workflow_status::running);
  EXPECT_EQ(claimed.step, 3);
  EXPECT_EQ(claimed.owner, "worker-b");
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(claimed.state_json, paused.state_json);
  EXPECT_EQ(claimed.journal, paused.journal);
  EXPECT_GE(claimed.lease_expires, before + 20s);
  EXPECT_LE(claimed.lease_expires, after + 20s);

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, workflow_status::running);
  EXPECT_EQ(loaded->owner, "worker-b");
  EXPECT_EQ(loaded->fence, 2);
  EXPECT_EQ(loaded->lease_expires, claimed.lease_expires);

  // The new owner saves with the fence it was handed.
  run_now(store_->save(next_step(claimed, 4, workflow_status::completed, R"({"done":true})", {"answered"})));
  EXPECT_EQ(load("wf")->status, workflow_status::completed);
}

TEST_P(checkpoint_store_conformance, a_second_claim_is_refused_naming_the_owner) {
  paused_run("wf", 3);
  run_now(store_->claim(claim_for("wf", "worker-b", workflow_status::awaiting_clarification, 3)));

  for (const workflow_status expected : {workflow_status::awaiting_clarification, workflow_status::interrupted}) {
    const std::optional<claim_error> refused = claim_refusal(store_->claim(claim_for("wf", "worker-c", expected, 3)));
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(reason_name(refused->why()), "owned") << expected;
    EXPECT_THAT(refused->what(),
                ::testing::HasSubstr("workflow 'wf' is being resumed by another process (owner worker-b"));
    ASSERT_TRUE(refused->current().has_value());
    EXPECT_EQ(refused->current()->owner, "worker-b");
    EXPECT_EQ(refused->current()->fence, 2);
  }

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->owner, "worker-b");
  EXPECT_EQ(loaded->fence, 2);
}

TEST_P(checkpoint_store_conformance, a_claim_in_an_unexpected_status_or_step_changes_nothing) {
  const checkpoint paused = paused_run("wf", 3);

  const std::optional<claim_error> wrong_status =
      claim_refusal(store_->claim(claim_for("wf", "worker-b", workflow_status::interrupted)));
  ASSERT_TRUE(wrong_status.has_value());
  EXPECT_EQ(reason_name(wrong_status->why()), "wrong_status");
  EXPECT_THAT(wrong_status->what(), ::testing::HasSubstr("is awaiting_clarification, not interrupted"));
  ASSERT_TRUE(wrong_status->current().has_value());
  EXPECT_EQ(wrong_status->current()->status, workflow_status::awaiting_clarification);

  const std::optional<claim_error> moved_on =
      claim_refusal(store_->claim(claim_for("wf", "worker-b", workflow_status::awaiting_clarification, 2)));
  ASSERT_TRUE(moved_on.has_value());
  EXPECT_EQ(reason_name(moved_on->why()), "step_changed");
  EXPECT_THAT(moved_on->what(), ::testing::HasSubstr("moved on"));
  ASSERT_TRUE(moved_on->current().has_value());
  EXPECT_EQ(moved_on->current()->step, 3);

  const std::optional<claim_error> missing = claim_refusal(store_->claim(claim_for("no-such-run", "worker-b")));
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(reason_name(missing->why()), "not_found");
  EXPECT_FALSE(missing->current().has_value());

  EXPECT_THAT(refusal_message(store_->claim(claim_for("wf", ""))), ::testing::HasSubstr("empty owner"));

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(loaded->owner, "");
  EXPECT_EQ(loaded->fence, 1);
  EXPECT_EQ(loaded->step, 3);
  EXPECT_EQ(loaded->lease_expires, system_time{});
  EXPECT_EQ(loaded->updated_at, paused.updated_at);
  EXPECT_FALSE(load("no-such-run").has_value());
}

TEST_P(checkpoint_store_conformance, a_finished_run_cannot_be_claimed) {
  const save_request run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 2, workflow_status::completed, "{}")));
  for (const workflow_status expected : {workflow_status::interrupted, workflow_status::awaiting_clarification}) {
    const std::optional<claim_error> refused = claim_refusal(store_->claim(claim_for("wf", "worker-b", expected)));
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(reason_name(refused->why()), "wrong_status");
    EXPECT_THAT(refused->what(), ::testing::HasSubstr("is completed"));
  }
  EXPECT_EQ(load("wf")->fence, 1);
}

// ---------------------------------------------------------------- fencing

TEST_P(checkpoint_store_conformance, a_save_with_a_stale_fence_is_refused_and_changes_nothing) {
  const save_request run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, workflow_status::running, R"({"by":"a"})", {"a1"})));

  // worker-b takes the run over (worker-a is known to be dead), fence 2.
  claim_request takeover = claim_for("wf", "worker-b", workflow_status::interrupted);
  takeover.dead_owner = "worker-a";
  const checkpoint claimed = run_now(store_->claim(takeover));
  ASSERT_EQ(claimed.fence, 2);

  // worker-a was not dead after all: its save carries fence 1.
  const std::optional<claim_error> refused =
      claim_refusal(store_->save(next_step(run, 2, workflow_status::completed, R"({"by":"a"})", {"a2"})));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(reason_name(refused->why()), "stale_fence");
  EXPECT_THAT(refused->what(), ::testing::HasSubstr("fencing number 1"));
  ASSERT_TRUE(refused->current().has_value());
  EXPECT_EQ(refused->current()->owner, "worker-b");
  EXPECT_EQ(refused->current()->fence, 2);

  // Guessing the new fence does not help another owner either.
  save_request guessed = next_step(run, 2, workflow_status::completed, R"({"by":"a"})", {"a2"});
  guessed.fence = 2;
  const std::optional<claim_error> guessed_refused = claim_refusal(store_->save(guessed));
  ASSERT_TRUE(guessed_refused.has_value());
  EXPECT_EQ(reason_name(guessed_refused->why()), "stale_fence");

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, workflow_status::running);
  EXPECT_EQ(loaded->step, 1);
  EXPECT_EQ(loaded->state_json, R"({"by":"a"})");
  EXPECT_EQ(loaded->journal, std::vector<std::string>{"a1"});
  EXPECT_EQ(loaded->owner, "worker-b");
  EXPECT_EQ(loaded->fence, 2);

  // The new owner's save lands.
  run_now(store_->save(next_step(claimed, 2, workflow_status::completed, R"({"by":"b"})", {"b2"})));
  EXPECT_EQ(load("wf")->journal, (std::vector<std::string>{"a1", "b2"}));
}

TEST_P(checkpoint_store_conformance, a_save_that_is_not_running_releases_the_run) {
  const save_request run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, workflow_status::awaiting_clarification, R"({"question":"?"})")));
  std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->owner, "");
  EXPECT_EQ(loaded->lease_expires, system_time{});
  EXPECT_EQ(loaded->fence, 1);

  // Released: the old owner's fence no longer writes.
  const std::optional<claim_error> after_release =
      claim_refusal(store_->save(next_step(run, 2, workflow_status::running, R"({"late":true})", {"late"})));
  ASSERT_TRUE(after_release.has_value());
  EXPECT_EQ(reason_name(after_release->why()), "stale_fence");
  EXPECT_EQ(load("wf")->step, 1);
  EXPECT_EQ(load("wf")->status, workflow_status::awaiting_clarification);

  // A shutdown releases a run as interrupted; the next claimant continues it.
  const checkpoint claimed = run_now(store_->claim(claim_for("wf", "worker-b", workflow_status::awaiting_clarification, 1)));
  ASSERT_EQ(claimed.fence, 2);
  run_now(store_->save(next_step(claimed, 2, workflow_status::interrupted, R"({"stopped":true})")));
  loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, workflow_status::interrupted);
  EXPECT_EQ(loaded->owner, "");
  EXPECT_EQ(list_ids(workflow_status::interrupted), std::vector<std::string>{"wf"});
  EXPECT_TRUE(list_ids(workflow_status::running).empty());
  EXPECT_EQ(reason_name(claim_refusal(store_->save(next_step(claimed, 3, workflow_status::running, "{}")))->why()), "stale_fence");

  const checkpoint continued = run_now(store_->claim(claim_for("wf", "worker-c", workflow_status::interrupted, 2)));
  EXPECT_EQ(continued.fence, 3);
  EXPECT_EQ(continued.owner, "worker-c");
  EXPECT_EQ(continued.state_json, R"({"stopped":true})");
}

// A running save replaces the head, not the lease: a lease renewed since the
// owner claimed the run survives a save carrying the claim's older lease.
TEST_P(checkpoint_store_conformance, a_running_save_keeps_the_stored_lease) {
  paused_run("wf", 1);
  const checkpoint claimed = run_now(store_->claim(claim_for("wf", "worker-b")));
  const auto renewed_at = std::chrono::system_clock::now();
  ASSERT_EQ(run_now(store_->renew("worker-b", long_lease)), 1u);

  run_now(store_->save(next_step(claimed, 2, workflow_status::running, R"({"v":2})")));
  run_now(store_->save(next_step(claimed, 3, workflow_status::running, R"({"v":3})")));

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, workflow_status::running);
  EXPECT_EQ(loaded->owner, "worker-b");
  EXPECT_GE(loaded->lease_expires, renewed_at + long_lease);
  EXPECT_EQ(list_ids(workflow_status::running), std::vector<std::string>{"wf"});
}

// ---------------------------------------------------------------- leases

TEST_P(checkpoint_store_conformance, an_expired_lease_makes_a_running_run_interrupted) {
  run_now(store_->create(new_run("wf", "worker-a", R"({"v":1})"), short_lease));
  sleep_past_short_lease();

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, workflow_status::interrupted);
  EXPECT_EQ(list_ids(workflow_status::interrupted), std::vector<std::string>{"wf"});
  EXPECT_TRUE(list_ids(workflow_status::running).empty());
  const std::vector<run_summary> all = run_now(list_all(*store_));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, workflow_status::interrupted);

  const std::optional<claim_error> not_paused = claim_refusal(store_->claim(claim_for("wf", "worker-b")));
  ASSERT_TRUE(not_paused.has_value());
  EXPECT_EQ(reason_name(not_paused->why()), "wrong_status");

  const checkpoint claimed = run_now(store_->claim(claim_for("wf", "worker-b", workflow_status::interrupted, 0)));
  EXPECT_EQ(claimed.status, workflow_status::running);
  EXPECT_EQ(claimed.owner, "worker-b");
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(claimed.state_json, R"({"v":1})");
  EXPECT_EQ(list_ids(workflow_status::running), std::vector<std::string>{"wf"});
  EXPECT_TRUE(list_ids(workflow_status::interrupted).empty());
  // The old owner lost it: renewing finds nothing of its own.
  EXPECT_EQ(run_now(store_->renew("worker-a", long_lease)), 0u);
}

TEST_P(checkpoint_store_conformance, a_live_lease_is_not_interrupted) {
  run_now(store_->create(new_run("wf"), long_lease));
  EXPECT_EQ(load("wf")->status, workflow_status::running);
  EXPECT_TRUE(list_ids(workflow_status::interrupted).empty());
  const std::optional<claim_error> refused = claim_refusal(store_->claim(claim_for("wf", "worker-b", workflow_status::interrupted)));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(reason_name(refused->why()), "owned");
}

TEST_P(checkpoint_store_conformance, a_dead_owner_is_taken_over_before_its_lease_expires) {
  const save_request run = new_run("wf");
  run_now(store_->create(run, long_lease));

  claim_request takeover = claim_for("wf", "worker-b", workflow_status::interrupted);
  takeover.dead_owner = "worker-c";  // someone else died, not worker-a
  const std::optional<claim_error> refused = claim_refusal(store_->claim(takeover));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(reason_name(refused->why()), "owned");
  EXPECT_EQ(load("wf")->fence, 1);

  takeover.dead_owner = "worker-a";
  takeover.expected_status = workflow_status::awaiting_clarification;  // a dead owner's run is interrupted, not paused
  const std::optional<claim_error> not_paused = claim_refusal(store_->claim(takeover));
  ASSERT_TRUE(not_paused.has_value());
  EXPECT_EQ(reason_name(not_paused->why()), "wrong_status");

  takeover.expected_status = workflow_status::interrupted;
  const checkpoint claimed = run_now(store_->claim(takeover));
  EXPECT_EQ(claimed.owner, "worker-b");
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(claimed.status, workflow_status::running);
  EXPECT_EQ(reason_name(claim_refusal(store_->save(next_step(run, 1, workflow_status::running, "{}")))->why()), "stale_fence");
}

// An owner whose save failed with an outcome it cannot know gives the run
// up: it reads as interrupted at its last save, is renewed no more, and
// anyone may claim it; the old owner's late save is refused.
TEST_P(checkpoint_store_conformance, a_run_given_up_is_interrupted_at_its_last_save_and_claimable) {
  const save_request run = new_run("wf", "worker-a", R"({"v":1})", {"r1"});
  run_now(store_->create(run, long_lease));
  EXPECT_FALSE(run_now(store_->release("wf", "worker-b", 1)));     // not its owner
  EXPECT_FALSE(run_now(store_->release("wf", "worker-a", 2)));     // not its fence
  EXPECT_FALSE(run_now(store_->release("unknown", "worker-a", 1)));
  EXPECT_EQ(load("wf")->status, workflow_status::running);

  EXPECT_TRUE(run_now(store_->release("wf", "worker-a", 1)));
  const std::optional<checkpoint> released = load("wf");
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->status, workflow_status::interrupted);
  EXPECT_EQ(released->owner, "");
  EXPECT_EQ(released->fence, 1);
  EXPECT_EQ(released->state_json, R"({"v":1})");
  EXPECT_EQ(released->journal, std::vector<std::string>{"r1"});
  EXPECT_EQ(list_ids(workflow_status::interrupted), std::vector<std::string>{"wf"});
  EXPECT_EQ(run_now(store_->renew("worker-a", long_lease)), 0u);
  EXPECT_EQ(load("wf")->status, workflow_status::interrupted);
  EXPECT_FALSE(run_now(store_->release("wf", "worker-a", 1)));     // once
  const std::optional<claim_error> late = claim_refusal(store_->save(next_step(run, 1, workflow_status::completed, "{}")));
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(reason_name(late->why()), "stale_fence");

  const checkpoint claimed = run_now(store_->claim(claim_for("wf", "worker-b", workflow_status::interrupted, 0)));
  EXPECT_EQ(claimed.owner, "worker-b");
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(claimed.state_json, R"({"v":1})");

  // A save that landed and ended the run leaves nothing to give up.
  const save_request done = new_run("done");
  run_now(store_->create(done, long_lease));
  run_now(store_->save(next_step(done, 1, workflow_status::completed, R"({"end":true})")));
  EXPECT_FALSE(run_now(store_->release("done", "worker-a", 1)));
  EXPECT_EQ(load("done")->status, workflow_status::completed);
}

TEST_P(checkpoint_store_conformance, renew_extends_only_the_owners_running_runs) {
  run_now(store_->create(new_run("a-1"), 30s));
  run_now(store_->create(new_run("a-2"), 30s));
  paused_run("a-paused", 1);                                    // worker-a released it
  run_now(store_->create(new_run("b-1", "worker-b"), 30s));
  const checkpoint b_before = *load("b-1");

  const auto before = std::chrono::system_clock::now();
  EXPECT_EQ(run_now(store_->renew("worker-a", long_lease)), 2u);
  for (const std::string id : {"a-1", "a-2"}) {
    const std::optional<checkpoint> loaded = load(id);
    ASSERT_TRUE(loaded.has_value());
    EXPECT_GE(loaded->lease_expires, before + long_lease) << id;
    EXPECT_EQ(loaded->fence, 1) << id;
  }
  EXPECT_EQ(load("a-paused")->lease_expires, system_time{});
  EXPECT_EQ(load("a-paused")->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(load("b-1")->lease_expires, b_before.lease_expires);

  EXPECT_EQ(run_now(store_->renew("worker-z", long_lease)), 0u);
  EXPECT_EQ(run_now(store_->renew("worker-b", long_lease)), 1u);

  // A renewed short lease no longer expires.
  run_now(store_->create(new_run("c-1", "worker-c"), short_lease));
  EXPECT_EQ(run_now(store_->renew("worker-c", long_lease)), 1u);
  sleep_past_short_lease();
  EXPECT_EQ(load("c-1")->status, workflow_status::running);
}

// ---------------------------------------------------------------- concurrency

TEST_P(checkpoint_store_conformance, concurrent_saves_from_threads_all_land) {
  constexpr int thread_count = 6;
  constexpr int workflows_per_thread = 20;
  constexpr int steps_per_workflow = 5;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      try {
        std::vector<save_request> runs;
        for (int w = 0; w < workflows_per_thread; ++w) {
          runs.push_back(new_run("t" + std::to_string(t) + "-w" + std::to_string(w), "thread-" + std::to_string(t)));
          run_now(store_->create(runs.back(), long_lease));
        }
        for (int step = 1; step <= steps_per_workflow; ++step) {
          for (const auto& run : runs) {
            run_now(store_->save(next_step(run, step, step == steps_per_workflow ? workflow_status::completed : workflow_status::running,
                                           "{\"step\":" + std::to_string(step) + "}", {std::to_string(step)})));
            if (!run_now(store_->load(run.workflow_id)).has_value()) {
              ++failures;
            }
          }
        }
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(list_ids(workflow_status::completed).size(), std::size_t{thread_count * workflows_per_thread});
  const std::vector<std::string> journal{"1", "2", "3", "4", "5"};
  for (int t = 0; t < thread_count; ++t) {
    for (int w = 0; w < workflows_per_thread; ++w) {
      const std::optional<checkpoint> loaded = load("t" + std::to_string(t) + "-w" + std::to_string(w));
      ASSERT_TRUE(loaded.has_value());
      EXPECT_EQ(loaded->step, steps_per_workflow);
      EXPECT_EQ(loaded->state_json, "{\"step\":" + std::to_string(steps_per_workflow) + "}");
      EXPECT_EQ(loaded->journal, journal);
    }
  }
}

// Racing writers of one owner on one run: each save either lands or is
// refused as stale, the highest step wins, and only the saves that landed
// left records, in the order they landed.
TEST_P(checkpoint_store_conformance, racing_writers_on_one_workflow_keep_the_highest_step) {
  constexpr int thread_count = 4;
  constexpr int saves_per_thread = 50;
  const save_request run = new_run("shared");
  run_now(store_->create(run, long_lease));
  std::atomic<int> landed{0};
  std::atomic<int> unexpected_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < saves_per_thread; ++i) {
        const int step = i * thread_count + t;
        try {
          run_now(store_->save(next_step(run, step, workflow_status::running, "{\"step\":" + std::to_string(step) + "}",
                                         {std::to_string(step)})));
          ++landed;
        } catch (const claim_error&) {
          ++unexpected_errors;
        } catch (const checkpoint_error& e) {
          if (std::string(e.what()).find("stale") == std::string::npos) {
            ++unexpected_errors;
          }
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(unexpected_errors.load(), 0);
  const std::optional<checkpoint> loaded = load("shared");
  ASSERT_TRUE(loaded.has_value());
  constexpr int highest = (saves_per_thread - 1) * thread_count + thread_count - 1;
  EXPECT_EQ(loaded->step, highest);
  EXPECT_EQ(loaded->state_json, "{\"step\":" + std::to_string(highest) + "}");
  ASSERT_EQ(loaded->journal.size(), static_cast<std::size_t>(landed.load()));
  for (std::size_t i = 1; i < loaded->journal.size(); ++i) {
    EXPECT_LT(std::stoi(loaded->journal[i - 1]), std::stoi(loaded->journal[i])) << "record " << i;
  }
  EXPECT_EQ(loaded->journal.back(), std::to_string(highest));
}

// Threads racing to claim one paused run, round after round: exactly one
// wins each round, every other gets a claim_error, and the fence goes up by
// exactly one.
TEST_P(checkpoint_store_conformance, racing_claims_have_exactly_one_winner) {
  constexpr int thread_count = 8;
  constexpr int rounds = 10;
  checkpoint run = paused_run("contested", 0);
  for (int round = 0; round < rounds; ++round) {
    const std::int64_t fence_before = load("contested")->fence;
    std::latch start(thread_count);
    std::vector<std::optional<checkpoint>> won(thread_count);
    std::vector<std::string> refusals(thread_count);
    std::vector<std::thread> threads;
    for (int t = 0; t < thread_count; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        try {
          won[t] = run_now(store_->claim(claim_for("contested", "claimant-" + std::to_string(t),
                                                   workflow_status::awaiting_clarification, round)));
        } catch (const claim_error& e) {
          refusals[t] = reason_name(e.why());
        } catch (const std::exception& e) {
          refusals[t] = std::string("unexpected: ") + e.what();
        }
      });
    }
    for (auto& thread : threads) {
      thread.join();
    }
    int winners = 0;
    std::string winner;
    for (int t = 0; t < thread_count; ++t) {
      if (won[t]) {
        ++winners;
        winner = won[t]->owner;
        EXPECT_EQ(won[t]->owner, "claimant-" + std::to_string(t));
        EXPECT_EQ(won[t]->fence, fence_before + 1);
        run = *won[t];
      } else {
        EXPECT_THAT(refusals[t], ::testing::AnyOf("owned", "wrong_status", "step_changed")) << "round " << round;
      }
    }
    ASSERT_EQ(winners, 1) << "round " << round;
    const std::optional<checkpoint> loaded = load("contested");
    ASSERT_TRUE(loaded.has_value());
    EXPECT_EQ(loaded->fence, fence_before + 1);
    EXPECT_EQ(loaded->owner, winner);
    EXPECT_EQ(loaded->status, workflow_status::running);
    // The winner answers and pauses again for the next round.
    run_now(store_->save(next_step(run, round + 1, workflow_status::awaiting_clarification, "{}", {winner})));
  }
  EXPECT_EQ(load("contested")->fence, 1 + rounds);
  EXPECT_EQ(load("contested")->journal.size(), std::size_t{1 + rounds});
}


}  // namespace switchboard::orchestrator::testing
