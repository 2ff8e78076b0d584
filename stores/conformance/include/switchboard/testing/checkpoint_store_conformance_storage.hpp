// The storage part of the store conformance suite (included by
// checkpoint_store_conformance.hpp, which says how a backend joins): round
// trips, saves, creation, journals, listing and paging, pruning, completion
// on the awaiting executor.
#pragma once

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

namespace switchboard::orchestrator::testing {

// ---------------------------------------------------------------- round trips

TEST_P(checkpoint_store_conformance, load_returns_what_create_stored) {
  save_request cp = new_run("wf-1", "worker-a",
                          R"({"input":"Soccer for Maya \"Saturday\" 2-4pm","note":"caf\u00e9 – ünïcode ✓"})",
                          {R"({"record":1})", "ünïcode ✓"});
  cp.workflow_name = "scheduling";
  const auto before = std::chrono::system_clock::now();
  run_now(store_->create(cp, 30s));
  const auto after = std::chrono::system_clock::now();

  const std::optional<checkpoint> loaded = load("wf-1");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->workflow_id, "wf-1");
  EXPECT_EQ(loaded->workflow_name, "scheduling");
  EXPECT_EQ(loaded->status, workflow_status::running);
  EXPECT_EQ(loaded->step, 0);
  EXPECT_EQ(loaded->state_json, cp.state_json);
  EXPECT_EQ(loaded->journal, cp.journal);
  EXPECT_EQ(loaded->owner, "worker-a");
  EXPECT_EQ(loaded->fence, 1);
  EXPECT_GE(loaded->lease_expires, before + 30s);
  EXPECT_LE(loaded->lease_expires, after + 30s);
  EXPECT_GE(loaded->updated_at, before);
  EXPECT_LE(loaded->updated_at, after);
}

TEST_P(checkpoint_store_conformance, load_returns_what_save_stored) {
  const save_request run = new_run("wf-1");
  run_now(store_->create(run, long_lease));
  const auto before = std::chrono::system_clock::now();
  run_now(store_->save(next_step(run, 3, workflow_status::awaiting_clarification, R"({"question":"Which Saturday?"})",
                                 {"step 1", "step 2", "step 3"})));
  const auto after = std::chrono::system_clock::now();

  const std::optional<checkpoint> loaded = load("wf-1");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(loaded->step, 3);
  EXPECT_EQ(loaded->state_json, R"({"question":"Which Saturday?"})");
  EXPECT_EQ(loaded->journal, (std::vector<std::string>{"step 1", "step 2", "step 3"}));
  // A paused run has no owner and no lease; its fence stays.
  EXPECT_EQ(loaded->owner, "");
  EXPECT_EQ(loaded->lease_expires, system_time{});
  EXPECT_EQ(loaded->fence, 1);
  EXPECT_GE(loaded->updated_at, before);
  EXPECT_LE(loaded->updated_at, after);
}

TEST_P(checkpoint_store_conformance, large_state_round_trips_unchanged) {
  std::string state = "{\"log\":[";
  for (int i = 0; i < 20000; ++i) {
    state += (i == 0 ? "" : ",") + std::string("\"step ") + std::to_string(i) + "\"";
  }
  state += "]}";
  const std::string record(1 << 20, 'r');
  const save_request run = new_run("big", "worker-a", state, {record});
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, workflow_status::running, state + " ", {record + "2"})));
  const std::optional<checkpoint> loaded = load("big");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->state_json, state + " ");
  ASSERT_EQ(loaded->journal.size(), 2u);
  EXPECT_EQ(loaded->journal[0], record);
  EXPECT_EQ(loaded->journal[1], record + "2");
}

TEST_P(checkpoint_store_conformance, ids_are_data_not_syntax) {
  const std::vector<std::string> ids{"it's", "a\"b", "'; DROP TABLE runs; --", "ünïcødé/🙂", "with space", "%_*"};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    run_now(store_->create(new_run(ids[i], "owner " + ids[i], "{\"i\":" + std::to_string(i) + "}",
                                   {"record of " + ids[i]}),
                           long_lease));
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::optional<checkpoint> loaded = load(ids[i]);
    ASSERT_TRUE(loaded.has_value()) << ids[i];
    EXPECT_EQ(loaded->state_json, "{\"i\":" + std::to_string(i) + "}");
    EXPECT_EQ(loaded->journal, std::vector<std::string>{"record of " + ids[i]});
    EXPECT_EQ(loaded->owner, "owner " + ids[i]);
  }
  EXPECT_EQ(list_ids(), std::vector<std::string>(ids.rbegin(), ids.rend())) << "most recently saved first";
  EXPECT_EQ(run_now(store_->renew("owner %_*", long_lease)), 1u);  // no pattern matching on owners either
}

// ---------------------------------------------------------------- save

TEST_P(checkpoint_store_conformance, save_with_newer_step_replaces_the_head) {
  const save_request run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, workflow_status::running, R"({"v":1})")));
  run_now(store_->save(next_step(run, 2, workflow_status::completed, R"({"v":2})")));

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 2);
  EXPECT_EQ(loaded->status, workflow_status::completed);
  EXPECT_EQ(loaded->state_json, R"({"v":2})");
  EXPECT_EQ(loaded->owner, "");
  EXPECT_EQ(list_ids(), std::vector<std::string>{"wf"});
}

TEST_P(checkpoint_store_conformance, save_with_equal_step_replaces) {
  const save_request run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 4, workflow_status::running, R"({"v":1})")));
  run_now(store_->save(next_step(run, 4, workflow_status::awaiting_clarification, R"({"v":2})")));

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(loaded->state_json, R"({"v":2})");
}

TEST_P(checkpoint_store_conformance, stale_step_is_refused_and_keeps_newer_state) {
  const save_request run = new_run("wf-stale");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 5, workflow_status::running, R"({"v":5})", {"five"})));

  const std::string message = refusal_message(store_->save(next_step(run, 3, workflow_status::completed, R"({"v":3})", {"three"})));
  EXPECT_THAT(message, ::testing::HasSubstr("wf-stale"));
  EXPECT_THAT(message, ::testing::HasSubstr("step 3"));
  EXPECT_THAT(message, ::testing::HasSubstr("stored step 5"));

  const std::optional<checkpoint> loaded = load("wf-stale");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 5);
  EXPECT_EQ(loaded->status, workflow_status::running);
  EXPECT_EQ(loaded->state_json, R"({"v":5})");
  EXPECT_EQ(loaded->journal, std::vector<std::string>{"five"});
  EXPECT_EQ(loaded->owner, "worker-a");
}

TEST_P(checkpoint_store_conformance, malformed_checkpoints_are_refused_with_the_reason) {
  auto expect_refused = [&](const save_request& cp, const std::string& reason) {
    EXPECT_THAT(refusal_message(store_->create(cp, long_lease)), ::testing::HasSubstr(reason)) << "create";
    EXPECT_THAT(refusal_message(store_->save(cp)), ::testing::HasSubstr(reason)) << "save";
  };
  expect_refused(new_run(""), "empty workflow_id");
  save_request no_name = new_run("wf-no-name");
  no_name.workflow_name.clear();
  expect_refused(no_name, "empty workflow_name");
  save_request negative = new_run("wf-negative");
  negative.step = -1;
  expect_refused(negative, "negative step -1");

  // What only a new run must have.
  save_request paused = new_run("wf-paused");
  paused.status = workflow_status::awaiting_clarification;
  EXPECT_THAT(refusal_message(store_->create(paused, long_lease)),
              ::testing::HasSubstr("must start as running, not awaiting_clarification"));
  EXPECT_THAT(refusal_message(store_->create(new_run("wf-no-owner", ""), long_lease)),
              ::testing::HasSubstr("empty owner"));

  EXPECT_TRUE(list_ids().empty());
  EXPECT_FALSE(load("wf-paused").has_value());

  // A malformed save of a stored run changes nothing.
  const save_request run = new_run("wf");
  run_now(store_->create(run, long_lease));
  save_request bad = next_step(run, 1, workflow_status::running, R"({"v":"bad"})", {"bad"});
  bad.workflow_name.clear();
  EXPECT_THAT(refusal_message(store_->save(bad)), ::testing::HasSubstr("empty workflow_name"));
  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 0);
  EXPECT_EQ(loaded->state_json, run.state_json);
  EXPECT_TRUE(loaded->journal.empty());
}

// ---------------------------------------------------------------- create

TEST_P(checkpoint_store_conformance, create_refuses_an_existing_id) {
  run_now(store_->create(new_run("wf", "worker-a", R"({"first":true})", {"first"}), long_lease));
  const std::optional<claim_error> refused =
      claim_refusal(store_->create(new_run("wf", "worker-b", R"({"second":true})", {"second"}), long_lease));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(reason_name(refused->why()), "exists");
  EXPECT_THAT(refused->what(), ::testing::HasSubstr("'wf' already exists"));
  ASSERT_TRUE(refused->current().has_value());
  EXPECT_EQ(refused->current()->owner, "worker-a");

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->state_json, R"({"first":true})");
  EXPECT_EQ(loaded->journal, std::vector<std::string>{"first"});
  EXPECT_EQ(loaded->owner, "worker-a");
  EXPECT_EQ(loaded->fence, 1);

  // Not even a finished run may be started again under its id.
  run_now(store_->save(next_step(new_run("wf"), 1, workflow_status::completed, "{}")));
  const std::optional<claim_error> again = claim_refusal(store_->create(new_run("wf", "worker-b"), long_lease));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(reason_name(again->why()), "exists");
  EXPECT_EQ(load("wf")->status, workflow_status::completed);
}

// ---------------------------------------------------------------- journal

TEST_P(checkpoint_store_conformance, journal_records_append_in_order_across_saves) {
  const save_request run = new_run("wf", "worker-a", R"({"head":0})", {"r1"});
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, workflow_status::running, R"({"head":1})", {"r2", "r3"})));
  run_now(store_->save(next_step(run, 2, workflow_status::running, R"({"head":2})")));  // a step without records
  run_now(store_->save(next_step(run, 3, workflow_status::awaiting_clarification, R"({"head":3})", {"r4"})));

  const std::vector<std::string> all{"r1", "r2", "r3", "r4"};
  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->state_json, R"({"head":3})");
  EXPECT_EQ(loaded->journal, all);

  // The claimant gets the whole journal too, and its saves append after it.
  const checkpoint claimed = run_now(store_->claim(claim_for("wf", "worker-b")));
  EXPECT_EQ(claimed.journal, all);
  EXPECT_EQ(claimed.state_json, R"({"head":3})");
  run_now(store_->save(next_step(claimed, 4, workflow_status::completed, R"({"head":4})", {"r5"})));
  EXPECT_EQ(load("wf")->journal, (std::vector<std::string>{"r1", "r2", "r3", "r4", "r5"}));
}

// ---------------------------------------------------------------- list, erase, prune

TEST_P(checkpoint_store_conformance, list_filters_by_status_most_recently_saved_first) {
  std::vector<save_request> runs;
  for (const std::string id : {"a", "b", "c", "d"}) {
    runs.push_back(new_run(id));
    run_now(store_->create(runs.back(), long_lease));
  }
  run_now(store_->save(next_step(runs[1], 1, workflow_status::awaiting_clarification, "{}")));  // b
  run_now(store_->save(next_step(runs[3], 1, workflow_status::completed, "{}")));               // d
  run_now(store_->save(next_step(runs[0], 2, workflow_status::running, "{}")));                 // a is the most recent

  using ids = std::vector<std::string>;
  EXPECT_EQ(list_ids(), (ids{"a", "d", "b", "c"}));
  EXPECT_EQ(list_ids(workflow_status::running), (ids{"a", "c"}));
  EXPECT_EQ(list_ids(workflow_status::awaiting_clarification), (ids{"b"}));
  EXPECT_EQ(list_ids(workflow_status::completed), (ids{"d"}));
  EXPECT_TRUE(list_ids(workflow_status::failed).empty());
  EXPECT_TRUE(list_ids(workflow_status::interrupted).empty());

  const std::vector<run_summary> running = run_now(list_all(*store_, in_status(workflow_status::running)));
  ASSERT_EQ(running.size(), 2u);
  EXPECT_EQ(running[0].workflow_id, "a");
  EXPECT_EQ(running[0].workflow_name, "family_scheduler");
  EXPECT_EQ(running[0].status, workflow_status::running);
  EXPECT_EQ(running[0].step, 2);
  EXPECT_EQ(running[0].owner, "worker-a");
  EXPECT_EQ(running[0].fence, 1);
  EXPECT_EQ(running[0].lease_expires, load("a")->lease_expires);
  EXPECT_EQ(running[0].updated_at, load("a")->updated_at);

  run_now(store_->create(new_run("e"), short_lease));
  sleep_past_short_lease();
  EXPECT_EQ(list_ids(workflow_status::interrupted), (ids{"e"}));
  EXPECT_EQ(list_ids(workflow_status::running), (ids{"a", "c"}));
  EXPECT_EQ(list_ids(), (ids{"e", "a", "d", "b", "c"}));
}

TEST_P(checkpoint_store_conformance, list_pages_with_a_cursor_and_filters_by_workflow_name) {
  for (int i = 0; i < 7; ++i) {
    save_request run = new_run("r" + std::to_string(i));
    if (i % 2 == 1) run.workflow_name = "other";
    run_now(store_->create(run, long_lease));
  }
  using ids = std::vector<std::string>;
  list_request request;
  request.limit = 3;
  run_page page = run_now(store_->list(request));
  EXPECT_EQ(ids_of(page.runs), (ids{"r6", "r5", "r4"}));
  ASSERT_FALSE(page.next_cursor.empty());
  request.cursor = page.next_cursor;
  page = run_now(store_->list(request));
  EXPECT_EQ(ids_of(page.runs), (ids{"r3", "r2", "r1"}));
  ASSERT_FALSE(page.next_cursor.empty());
  request.cursor = page.next_cursor;
  page = run_now(store_->list(request));
  EXPECT_EQ(ids_of(page.runs), (ids{"r0"}));
  EXPECT_TRUE(page.next_cursor.empty()) << "the last page says so";

  // A page exactly as long as what is left is the last one.
  list_request others;
  others.workflow_name = "other";
  others.limit = 3;
  page = run_now(store_->list(others));
  EXPECT_EQ(ids_of(page.runs), (ids{"r5", "r3", "r1"}));
  EXPECT_TRUE(page.next_cursor.empty());
  others.limit = 2;
  EXPECT_EQ(ids_of(run_now(list_all(*store_, others))), (ids{"r5", "r3", "r1"})) << "every page read";

  list_request bad;
  bad.cursor = "not a cursor";
  EXPECT_THAT(refusal_message(store_->list(bad)), ::testing::HasSubstr("not a cursor"));
}

TEST_P(checkpoint_store_conformance, erase_removes_only_that_workflow) {
  run_now(store_->create(new_run("keep", "worker-a", "{}", {"kept"}), long_lease));
  run_now(store_->create(new_run("drop", "worker-a", "{}", {"dropped"}), long_lease));  // owned, running

  EXPECT_TRUE(run_now(store_->erase("drop")));
  EXPECT_FALSE(load("drop").has_value());
  EXPECT_EQ(load("keep")->journal, std::vector<std::string>{"kept"});
  EXPECT_EQ(list_ids(), std::vector<std::string>{"keep"});
  EXPECT_FALSE(run_now(store_->erase("drop")));

  // An erased run leaves nothing behind: a new run under its id starts clean.
  run_now(store_->create(new_run("drop", "worker-b"), long_lease));
  const std::optional<checkpoint> loaded = load("drop");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 0);
  EXPECT_EQ(loaded->fence, 1);
  EXPECT_EQ(loaded->owner, "worker-b");
  EXPECT_TRUE(loaded->journal.empty());
}

TEST_P(checkpoint_store_conformance, unknown_id_is_absent) {
  EXPECT_FALSE(load("never-saved").has_value());
  EXPECT_FALSE(run_now(store_->erase("never-saved")));
  EXPECT_TRUE(list_ids().empty());
  EXPECT_TRUE(list_ids(workflow_status::running).empty());
  EXPECT_THAT(refusal_message(store_->save(new_run("never-saved"))),
              ::testing::AllOf(::testing::HasSubstr("never-saved"), ::testing::HasSubstr("create it first")));
  EXPECT_FALSE(load("never-saved").has_value());

  run_now(store_->create(new_run("saved"), long_lease));
  EXPECT_FALSE(load("save").has_value());  // no prefix matching
  EXPECT_FALSE(load("").has_value());
}

TEST_P(checkpoint_store_conformance, prune_removes_only_finished_runs_older_than_the_cutoff) {
  auto finish = [&](const std::string& id, workflow_status status) {
    const save_request run = new_run(id, "worker-a", "{}", {"record of " + id});
    run_now(store_->create(run, long_lease));
    run_now(store_->save(next_step(run, 1, status, "{}", {"last of " + id})));
  };
  finish("completed-old", workflow_status::completed);
  finish("failed-old", workflow_status::failed);
  finish("cancelled-old", workflow_status::cancelled);
  finish("released-old", workflow_status::interrupted);
  paused_run("paused-old", 1);
  run_now(store_->create(new_run("running-old"), long_lease));
  run_now(store_->create(new_run("expired-old"), short_lease));
  sleep_past_short_lease();  // also orders the cutoff after every save above
  const system_time cutoff = std::chrono::system_clock::now();
  std::this_thread::sleep_for(2ms);
  finish("completed-new", workflow_status::completed);

  EXPECT_EQ(run_now(store_->prune(cutoff)), 3u);
  for (const std::string id : {"completed-old", "failed-old", "cancelled-old"}) {
    EXPECT_FALSE(load(id).has_value()) << id;
  }
  EXPECT_EQ(list_ids(), (std::vector<std::string>{"completed-new", "expired-old", "running-old", "paused-old",
                                                  "released-old"}));
  EXPECT_EQ(load("completed-new")->journal, (std::vector<std::string>{"record of completed-new",
                                                                      "last of completed-new"}));
  EXPECT_EQ(run_now(store_->prune(cutoff)), 0u);

  // A pruned id is free again, with no journal left over.
  run_now(store_->create(new_run("completed-old"), long_lease));
  EXPECT_TRUE(load("completed-old")->journal.empty());

  EXPECT_EQ(run_now(store_->prune(std::chrono::system_clock::now() + 1h)), 1u);
  EXPECT_FALSE(load("completed-new").has_value());
  EXPECT_EQ(list_ids().size(), 5u);
}

// ---------------------------------------------------------------- completion

// Every operation resumes the awaiting coroutine on its own executor, also
// when it fails, whatever thread the store does its work on.
TEST_P(checkpoint_store_conformance, operations_complete_on_the_awaiting_executor) {
  boost::asio::io_context io;  // run by this thread only
  const std::thread::id this_thread = std::this_thread::get_id();
  std::vector<std::thread::id> resumed_on;
  auto note = [&] { resumed_on.push_back(std::this_thread::get_id()); };
  auto done = boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        // Arguments are built before each co_await: g++ 12 rejects string
        // literals inside a co_await expression ("array used as initializer").
        const save_request run = new_run("wf");
        const save_request paused = next_step(run, 1, workflow_status::awaiting_clarification, "{}", {"r"});
        const claim_request claim = claim_for("wf", "worker-b");
        const claim_request late_claim = claim_for("wf", "worker-c");
        const std::string id = "wf";
        const std::string owner = "worker-b";
        const list_request everything;
        co_await store_->create(run, long_lease);
        note();
        co_await store_->save(paused);
        note();
        (void)co_await store_->claim(claim);
        note();
        (void)co_await store_->renew(owner, long_lease);
        note();
        (void)co_await store_->load(id);
        note();
        (void)co_await store_->list(everything);
        note();
        (void)co_await store_->prune(system_time{});
        note();
        (void)co_await store_->erase(id);
        note();
        try {
          (void)co_await store_->claim(late_claim);
        } catch (const claim_error&) {
          note();
        }
        try {
          co_await store_->save(run);
        } catch (const checkpoint_error&) {
          note();
        }
      },
      boost::asio::use_future);
  io.run();
  done.get();
  ASSERT_EQ(resumed_on.size(), 10u);
  for (std::size_t i = 0; i < resumed_on.size(); ++i) {
    EXPECT_EQ(resumed_on[i], this_thread) << "operation " << i;
  }
}

}  // namespace switchboard::orchestrator::testing
