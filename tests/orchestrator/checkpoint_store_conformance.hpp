// The conformance suite every checkpoint_store backend must pass.
//
// A backend joins by instantiating the value-parameterized suite with a
// checkpoint_store_backend (see checkpoint_store_test.cpp):
//
//   INSTANTIATE_TEST_SUITE_P(my_backend, checkpoint_store_conformance,
//                            ::testing::Values(checkpoint_store_backend{"my_backend", open_fn}),
//                            checkpoint_store_backend_name);
//
// Include this header in exactly one translation unit per test binary: it
// defines the tests.
//
// The suite drives the asynchronous API through run_now(), which runs one
// operation to completion on a private io_context of the calling thread, so
// most tests read as plain sequences of calls. Leases that must expire are a
// few milliseconds long and the test sleeps well past them before looking:
// the sleeps order events, nothing asserts how long anything took.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <latch>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace switchboard::orchestrator::testing {

using namespace std::chrono_literals;

struct checkpoint_store_backend {
  std::string name;
  // Opens the backend's store keeping its data under `scratch_dir`, a fresh
  // empty directory per test. Opening again with the same directory must
  // reach the same data when the backend is durable.
  std::function<std::shared_ptr<checkpoint_store>(const std::filesystem::path& scratch_dir)> open;
};

// gtest prints a backend by its name (in failure messages, --gtest_list_tests).
inline void PrintTo(const checkpoint_store_backend& backend, std::ostream* out) { *out << backend.name; }

inline std::string checkpoint_store_backend_name(
    const ::testing::TestParamInfo<checkpoint_store_backend>& info) {
  return info.param.name;
}

// A fresh directory under the system temp directory, removed by the destructor.
class scratch_directory {
 public:
  scratch_directory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "switchboard-checkpoint-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary directory from " + pattern);
    }
    path_ = pattern;
  }
  ~scratch_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_directory(const scratch_directory&) = delete;
  scratch_directory& operator=(const scratch_directory&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs `operation` to completion on a fresh io_context of this thread and
// returns its result, or rethrows what it threw. Safe to call from several
// threads at once (each has its own io_context).
template <class T>
T run_now(boost::asio::awaitable<T> operation) {
  boost::asio::io_context io;
  std::future<T> result = boost::asio::co_spawn(io, std::move(operation), boost::asio::use_future);
  io.run();
  return result.get();
}

inline std::string reason_name(claim_error::reason why) {
  switch (why) {
    case claim_error::reason::not_found: return "not_found";
    case claim_error::reason::owned: return "owned";
    case claim_error::reason::wrong_status: return "wrong_status";
    case claim_error::reason::step_changed: return "step_changed";
    case claim_error::reason::exists: return "exists";
    case claim_error::reason::stale_fence: return "stale_fence";
  }
  return "unknown reason";
}

// The claim_error `operation` throws. Fails the test (and returns nullopt)
// when it completes, or throws anything else.
template <class T>
std::optional<claim_error> claim_refusal(boost::asio::awaitable<T> operation) {
  try {
    run_now(std::move(operation));
  } catch (const claim_error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a claim_error, got: " << e.what();
    return std::nullopt;
  }
  ADD_FAILURE() << "expected a claim_error, the operation succeeded";
  return std::nullopt;
}

// The message of the checkpoint_error `operation` throws. Fails the test
// (and returns "") when it completes, or throws anything else.
template <class T>
std::string refusal_message(boost::asio::awaitable<T> operation) {
  try {
    run_now(std::move(operation));
  } catch (const checkpoint_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a checkpoint_error, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a checkpoint_error, the operation succeeded";
  return "";
}

inline constexpr std::chrono::milliseconds long_lease = std::chrono::hours(1);
// A lease that is over by the time the test looks again after
// sleep_past_short_lease().
inline constexpr std::chrono::milliseconds short_lease{5};
inline void sleep_past_short_lease() { std::this_thread::sleep_for(short_lease * 10); }

// A new run as its first owner hands it to create(): running, step 0, and
// the fencing number create() gives every new run.
inline checkpoint new_run(std::string id, std::string owner = "worker-a", std::string state_json = R"({"step":0})",
                          std::vector<std::string> journal = {}) {
  checkpoint cp;
  cp.workflow_id = std::move(id);
  cp.workflow_name = "family_scheduler";
  cp.status = "running";
  cp.step = 0;
  cp.state_json = std::move(state_json);
  cp.journal = std::move(journal);
  cp.owner = std::move(owner);
  cp.fence = 1;
  return cp;
}

// What the owner of `run` saves after taking it to `step`: same id, owner
// and fence, a new head and status, `journal` to append.
inline checkpoint next_step(checkpoint run, std::int64_t step, std::string status, std::string state_json,
                            std::vector<std::string> journal = {}) {
  run.step = step;
  run.status = std::move(status);
  run.state_json = std::move(state_json);
  run.journal = std::move(journal);
  return run;
}

inline claim_request claim_for(std::string id, std::string owner,
                               std::string expected_status = "awaiting_clarification",
                               std::optional<std::int64_t> expected_step = std::nullopt) {
  claim_request request;
  request.workflow_id = std::move(id);
  request.owner = std::move(owner);
  request.expected_status = std::move(expected_status);
  request.expected_step = expected_step;
  return request;
}

inline std::vector<std::string> ids_of(const std::vector<run_summary>& runs) {
  std::vector<std::string> ids;
  for (const auto& run : runs) ids.push_back(run.workflow_id);
  return ids;
}

class checkpoint_store_conformance : public ::testing::TestWithParam<checkpoint_store_backend> {
 protected:
  void SetUp() override { store_ = GetParam().open(scratch_.path()); }
  void TearDown() override { store_.reset(); }

  std::optional<checkpoint> load(const std::string& id) { return run_now(store_->load(id)); }
  std::vector<std::string> list_ids(const std::string& status = "") { return ids_of(run_now(store_->list(status))); }

  // Creates `id` as worker-a and pauses it for clarification at `step`;
  // returns the paused run as load() reports it.
  checkpoint paused_run(const std::string& id, std::int64_t step, std::string state_json = R"({"question":"?"})") {
    const checkpoint run = new_run(id);
    run_now(store_->create(run, long_lease));
    run_now(store_->save(next_step(run, step, "awaiting_clarification", std::move(state_json),
                                   {"paused at step " + std::to_string(step)})));
    return *load(id);
  }

  scratch_directory scratch_;
  std::shared_ptr<checkpoint_store> store_;
};

// ---------------------------------------------------------------- round trips

TEST_P(checkpoint_store_conformance, load_returns_what_create_stored) {
  checkpoint cp = new_run("wf-1", "worker-a",
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
  EXPECT_EQ(loaded->status, "running");
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
  const checkpoint run = new_run("wf-1");
  run_now(store_->create(run, long_lease));
  const auto before = std::chrono::system_clock::now();
  run_now(store_->save(next_step(run, 3, "awaiting_clarification", R"({"question":"Which Saturday?"})",
                                 {"step 1", "step 2", "step 3"})));
  const auto after = std::chrono::system_clock::now();

  const std::optional<checkpoint> loaded = load("wf-1");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "awaiting_clarification");
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
  const checkpoint run = new_run("big", "worker-a", state, {record});
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, "running", state + " ", {record + "2"})));
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
  EXPECT_EQ(list_ids(), ids);
  EXPECT_EQ(run_now(store_->renew("owner %_*", long_lease)), 1u);  // no pattern matching on owners either
}

// ---------------------------------------------------------------- save

TEST_P(checkpoint_store_conformance, save_with_newer_step_replaces_the_head) {
  const checkpoint run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, "running", R"({"v":1})")));
  run_now(store_->save(next_step(run, 2, "completed", R"({"v":2})")));

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 2);
  EXPECT_EQ(loaded->status, "completed");
  EXPECT_EQ(loaded->state_json, R"({"v":2})");
  EXPECT_EQ(loaded->owner, "");
  EXPECT_EQ(list_ids(), std::vector<std::string>{"wf"});
}

TEST_P(checkpoint_store_conformance, save_with_equal_step_replaces) {
  const checkpoint run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 4, "running", R"({"v":1})")));
  run_now(store_->save(next_step(run, 4, "awaiting_clarification", R"({"v":2})")));

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "awaiting_clarification");
  EXPECT_EQ(loaded->state_json, R"({"v":2})");
}

TEST_P(checkpoint_store_conformance, stale_step_is_refused_and_keeps_newer_state) {
  const checkpoint run = new_run("wf-stale");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 5, "running", R"({"v":5})", {"five"})));

  const std::string message = refusal_message(store_->save(next_step(run, 3, "completed", R"({"v":3})", {"three"})));
  EXPECT_THAT(message, ::testing::HasSubstr("wf-stale"));
  EXPECT_THAT(message, ::testing::HasSubstr("step 3"));
  EXPECT_THAT(message, ::testing::HasSubstr("stored step 5"));

  const std::optional<checkpoint> loaded = load("wf-stale");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 5);
  EXPECT_EQ(loaded->status, "running");
  EXPECT_EQ(loaded->state_json, R"({"v":5})");
  EXPECT_EQ(loaded->journal, std::vector<std::string>{"five"});
  EXPECT_EQ(loaded->owner, "worker-a");
}

TEST_P(checkpoint_store_conformance, malformed_checkpoints_are_refused_with_the_reason) {
  auto expect_refused = [&](const checkpoint& cp, const std::string& reason) {
    EXPECT_THAT(refusal_message(store_->create(cp, long_lease)), ::testing::HasSubstr(reason)) << "create";
    EXPECT_THAT(refusal_message(store_->save(cp)), ::testing::HasSubstr(reason)) << "save";
  };
  expect_refused(new_run(""), "empty workflow_id");
  checkpoint no_name = new_run("wf-no-name");
  no_name.workflow_name.clear();
  expect_refused(no_name, "empty workflow_name");
  checkpoint negative = new_run("wf-negative");
  negative.step = -1;
  expect_refused(negative, "negative step -1");
  checkpoint unknown_status = new_run("wf-status");
  unknown_status.status = "paused";
  expect_refused(unknown_status, "unknown status 'paused'");

  // What only a new run must have.
  checkpoint paused = new_run("wf-paused");
  paused.status = "awaiting_clarification";
  EXPECT_THAT(refusal_message(store_->create(paused, long_lease)),
              ::testing::HasSubstr("must start as running, not awaiting_clarification"));
  EXPECT_THAT(refusal_message(store_->create(new_run("wf-no-owner", ""), long_lease)),
              ::testing::HasSubstr("empty owner"));

  EXPECT_TRUE(list_ids().empty());
  EXPECT_FALSE(load("wf-status").has_value());
  EXPECT_FALSE(load("wf-paused").has_value());

  // A malformed save of a stored run changes nothing.
  const checkpoint run = new_run("wf");
  run_now(store_->create(run, long_lease));
  checkpoint bad = next_step(run, 1, "paused", R"({"v":"bad"})", {"bad"});
  EXPECT_THAT(refusal_message(store_->save(bad)), ::testing::HasSubstr("unknown status 'paused'"));
  bad.status = "running";
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
  run_now(store_->save(next_step(new_run("wf"), 1, "completed", "{}")));
  const std::optional<claim_error> again = claim_refusal(store_->create(new_run("wf", "worker-b"), long_lease));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(reason_name(again->why()), "exists");
  EXPECT_EQ(load("wf")->status, "completed");
}

// ---------------------------------------------------------------- journal

TEST_P(checkpoint_store_conformance, journal_records_append_in_order_across_saves) {
  const checkpoint run = new_run("wf", "worker-a", R"({"head":0})", {"r1"});
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, "running", R"({"head":1})", {"r2", "r3"})));
  run_now(store_->save(next_step(run, 2, "running", R"({"head":2})")));  // a step without records
  run_now(store_->save(next_step(run, 3, "awaiting_clarification", R"({"head":3})", {"r4"})));

  const std::vector<std::string> all{"r1", "r2", "r3", "r4"};
  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->state_json, R"({"head":3})");
  EXPECT_EQ(loaded->journal, all);

  // The claimant gets the whole journal too, and its saves append after it.
  const checkpoint claimed = run_now(store_->claim(claim_for("wf", "worker-b")));
  EXPECT_EQ(claimed.journal, all);
  EXPECT_EQ(claimed.state_json, R"({"head":3})");
  run_now(store_->save(next_step(claimed, 4, "completed", R"({"head":4})", {"r5"})));
  EXPECT_EQ(load("wf")->journal, (std::vector<std::string>{"r1", "r2", "r3", "r4", "r5"}));
}

// ---------------------------------------------------------------- claim

TEST_P(checkpoint_store_conformance, claim_of_a_paused_run_bumps_the_fence_and_sets_the_owner) {
  const checkpoint paused = paused_run("wf", 3);
  ASSERT_EQ(paused.fence, 1);

  const auto before = std::chrono::system_clock::now();
  const checkpoint claimed = run_now(store_->claim([] {
    claim_request request = claim_for("wf", "worker-b", "awaiting_clarification", 3);
    request.lease = 20s;
    return request;
  }()));
  const auto after = std::chrono::system_clock::now();
  EXPECT_EQ(claimed.workflow_id, "wf");
  EXPECT_EQ(claimed.workflow_name, "family_scheduler");
  EXPECT_EQ(claimed.status, "running");
  EXPECT_EQ(claimed.step, 3);
  EXPECT_EQ(claimed.owner, "worker-b");
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(claimed.state_json, paused.state_json);
  EXPECT_EQ(claimed.journal, paused.journal);
  EXPECT_GE(claimed.lease_expires, before + 20s);
  EXPECT_LE(claimed.lease_expires, after + 20s);

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "running");
  EXPECT_EQ(loaded->owner, "worker-b");
  EXPECT_EQ(loaded->fence, 2);
  EXPECT_EQ(loaded->lease_expires, claimed.lease_expires);

  // The new owner saves with the fence it was handed.
  run_now(store_->save(next_step(claimed, 4, "completed", R"({"done":true})", {"answered"})));
  EXPECT_EQ(load("wf")->status, "completed");
}

TEST_P(checkpoint_store_conformance, a_second_claim_is_refused_naming_the_owner) {
  paused_run("wf", 3);
  run_now(store_->claim(claim_for("wf", "worker-b", "awaiting_clarification", 3)));

  for (const std::string expected : {"awaiting_clarification", "interrupted"}) {
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
      claim_refusal(store_->claim(claim_for("wf", "worker-b", "interrupted")));
  ASSERT_TRUE(wrong_status.has_value());
  EXPECT_EQ(reason_name(wrong_status->why()), "wrong_status");
  EXPECT_THAT(wrong_status->what(), ::testing::HasSubstr("is awaiting_clarification, not interrupted"));
  ASSERT_TRUE(wrong_status->current().has_value());
  EXPECT_EQ(wrong_status->current()->status, "awaiting_clarification");

  const std::optional<claim_error> moved_on =
      claim_refusal(store_->claim(claim_for("wf", "worker-b", "awaiting_clarification", 2)));
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
  EXPECT_EQ(loaded->status, "awaiting_clarification");
  EXPECT_EQ(loaded->owner, "");
  EXPECT_EQ(loaded->fence, 1);
  EXPECT_EQ(loaded->step, 3);
  EXPECT_EQ(loaded->lease_expires, system_time{});
  EXPECT_EQ(loaded->updated_at, paused.updated_at);
  EXPECT_FALSE(load("no-such-run").has_value());
}

TEST_P(checkpoint_store_conformance, a_finished_run_cannot_be_claimed) {
  const checkpoint run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 2, "completed", "{}")));
  for (const std::string expected : {"interrupted", "awaiting_clarification"}) {
    const std::optional<claim_error> refused = claim_refusal(store_->claim(claim_for("wf", "worker-b", expected)));
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(reason_name(refused->why()), "wrong_status");
    EXPECT_THAT(refused->what(), ::testing::HasSubstr("is completed"));
  }
  EXPECT_EQ(load("wf")->fence, 1);
}

// ---------------------------------------------------------------- fencing

TEST_P(checkpoint_store_conformance, a_save_with_a_stale_fence_is_refused_and_changes_nothing) {
  const checkpoint run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, "running", R"({"by":"a"})", {"a1"})));

  // worker-b takes the run over (worker-a is known to be dead), fence 2.
  claim_request takeover = claim_for("wf", "worker-b", "interrupted");
  takeover.dead_owner = "worker-a";
  const checkpoint claimed = run_now(store_->claim(takeover));
  ASSERT_EQ(claimed.fence, 2);

  // worker-a was not dead after all: its save carries fence 1.
  const std::optional<claim_error> refused =
      claim_refusal(store_->save(next_step(run, 2, "completed", R"({"by":"a"})", {"a2"})));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(reason_name(refused->why()), "stale_fence");
  EXPECT_THAT(refused->what(), ::testing::HasSubstr("fencing number 1"));
  ASSERT_TRUE(refused->current().has_value());
  EXPECT_EQ(refused->current()->owner, "worker-b");
  EXPECT_EQ(refused->current()->fence, 2);

  // Guessing the new fence does not help another owner either.
  checkpoint guessed = next_step(run, 2, "completed", R"({"by":"a"})", {"a2"});
  guessed.fence = 2;
  const std::optional<claim_error> guessed_refused = claim_refusal(store_->save(guessed));
  ASSERT_TRUE(guessed_refused.has_value());
  EXPECT_EQ(reason_name(guessed_refused->why()), "stale_fence");

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "running");
  EXPECT_EQ(loaded->step, 1);
  EXPECT_EQ(loaded->state_json, R"({"by":"a"})");
  EXPECT_EQ(loaded->journal, std::vector<std::string>{"a1"});
  EXPECT_EQ(loaded->owner, "worker-b");
  EXPECT_EQ(loaded->fence, 2);

  // The new owner's save lands.
  run_now(store_->save(next_step(claimed, 2, "completed", R"({"by":"b"})", {"b2"})));
  EXPECT_EQ(load("wf")->journal, (std::vector<std::string>{"a1", "b2"}));
}

TEST_P(checkpoint_store_conformance, a_save_that_is_not_running_releases_the_run) {
  const checkpoint run = new_run("wf");
  run_now(store_->create(run, long_lease));
  run_now(store_->save(next_step(run, 1, "awaiting_clarification", R"({"question":"?"})")));
  std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->owner, "");
  EXPECT_EQ(loaded->lease_expires, system_time{});
  EXPECT_EQ(loaded->fence, 1);

  // Released: the old owner's fence no longer writes.
  const std::optional<claim_error> after_release =
      claim_refusal(store_->save(next_step(run, 2, "running", R"({"late":true})", {"late"})));
  ASSERT_TRUE(after_release.has_value());
  EXPECT_EQ(reason_name(after_release->why()), "stale_fence");
  EXPECT_EQ(load("wf")->step, 1);
  EXPECT_EQ(load("wf")->status, "awaiting_clarification");

  // A shutdown releases a run as interrupted; the next claimant continues it.
  const checkpoint claimed = run_now(store_->claim(claim_for("wf", "worker-b", "awaiting_clarification", 1)));
  ASSERT_EQ(claimed.fence, 2);
  run_now(store_->save(next_step(claimed, 2, "interrupted", R"({"stopped":true})")));
  loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "interrupted");
  EXPECT_EQ(loaded->owner, "");
  EXPECT_EQ(list_ids("interrupted"), std::vector<std::string>{"wf"});
  EXPECT_TRUE(list_ids("running").empty());
  EXPECT_EQ(reason_name(claim_refusal(store_->save(next_step(claimed, 3, "running", "{}")))->why()), "stale_fence");

  const checkpoint continued = run_now(store_->claim(claim_for("wf", "worker-c", "interrupted", 2)));
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

  run_now(store_->save(next_step(claimed, 2, "running", R"({"v":2})")));
  checkpoint without_lease = next_step(claimed, 3, "running", R"({"v":3})");
  without_lease.lease_expires = {};
  run_now(store_->save(without_lease));

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "running");
  EXPECT_EQ(loaded->owner, "worker-b");
  EXPECT_GE(loaded->lease_expires, renewed_at + long_lease);
  EXPECT_EQ(list_ids("running"), std::vector<std::string>{"wf"});
}

// ---------------------------------------------------------------- leases

TEST_P(checkpoint_store_conformance, an_expired_lease_makes_a_running_run_interrupted) {
  run_now(store_->create(new_run("wf", "worker-a", R"({"v":1})"), short_lease));
  sleep_past_short_lease();

  const std::optional<checkpoint> loaded = load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "interrupted");
  EXPECT_EQ(list_ids("interrupted"), std::vector<std::string>{"wf"});
  EXPECT_TRUE(list_ids("running").empty());
  const std::vector<run_summary> all = run_now(store_->list(""));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, "interrupted");

  const std::optional<claim_error> not_paused = claim_refusal(store_->claim(claim_for("wf", "worker-b")));
  ASSERT_TRUE(not_paused.has_value());
  EXPECT_EQ(reason_name(not_paused->why()), "wrong_status");

  const checkpoint claimed = run_now(store_->claim(claim_for("wf", "worker-b", "interrupted", 0)));
  EXPECT_EQ(claimed.status, "running");
  EXPECT_EQ(claimed.owner, "worker-b");
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(claimed.state_json, R"({"v":1})");
  EXPECT_EQ(list_ids("running"), std::vector<std::string>{"wf"});
  EXPECT_TRUE(list_ids("interrupted").empty());
  // The old owner lost it: renewing finds nothing of its own.
  EXPECT_EQ(run_now(store_->renew("worker-a", long_lease)), 0u);
}

TEST_P(checkpoint_store_conformance, a_live_lease_is_not_interrupted) {
  run_now(store_->create(new_run("wf"), long_lease));
  EXPECT_EQ(load("wf")->status, "running");
  EXPECT_TRUE(list_ids("interrupted").empty());
  const std::optional<claim_error> refused = claim_refusal(store_->claim(claim_for("wf", "worker-b", "interrupted")));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(reason_name(refused->why()), "owned");
}

TEST_P(checkpoint_store_conformance, a_dead_owner_is_taken_over_before_its_lease_expires) {
  const checkpoint run = new_run("wf");
  run_now(store_->create(run, long_lease));

  claim_request takeover = claim_for("wf", "worker-b", "interrupted");
  takeover.dead_owner = "worker-c";  // someone else died, not worker-a
  const std::optional<claim_error> refused = claim_refusal(store_->claim(takeover));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(reason_name(refused->why()), "owned");
  EXPECT_EQ(load("wf")->fence, 1);

  takeover.dead_owner = "worker-a";
  takeover.expected_status = "awaiting_clarification";  // a dead owner's run is interrupted, not paused
  const std::optional<claim_error> not_paused = claim_refusal(store_->claim(takeover));
  ASSERT_TRUE(not_paused.has_value());
  EXPECT_EQ(reason_name(not_paused->why()), "wrong_status");

  takeover.expected_status = "interrupted";
  const checkpoint claimed = run_now(store_->claim(takeover));
  EXPECT_EQ(claimed.owner, "worker-b");
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(claimed.status, "running");
  EXPECT_EQ(reason_name(claim_refusal(store_->save(next_step(run, 1, "running", "{}")))->why()), "stale_fence");
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
  EXPECT_EQ(load("a-paused")->status, "awaiting_clarification");
  EXPECT_EQ(load("b-1")->lease_expires, b_before.lease_expires);

  EXPECT_EQ(run_now(store_->renew("worker-z", long_lease)), 0u);
  EXPECT_EQ(run_now(store_->renew("worker-b", long_lease)), 1u);

  // A renewed short lease no longer expires.
  run_now(store_->create(new_run("c-1", "worker-c"), short_lease));
  EXPECT_EQ(run_now(store_->renew("worker-c", long_lease)), 1u);
  sleep_past_short_lease();
  EXPECT_EQ(load("c-1")->status, "running");
}

// ---------------------------------------------------------------- list, erase, prune

TEST_P(checkpoint_store_conformance, list_filters_by_status_least_recently_saved_first) {
  std::vector<checkpoint> runs;
  for (const std::string id : {"a", "b", "c", "d"}) {
    runs.push_back(new_run(id));
    run_now(store_->create(runs.back(), long_lease));
  }
  run_now(store_->save(next_step(runs[1], 1, "awaiting_clarification", "{}")));  // b
  run_now(store_->save(next_step(runs[3], 1, "completed", "{}")));               // d
  run_now(store_->save(next_step(runs[0], 2, "running", "{}")));                 // a is the most recent

  using ids = std::vector<std::string>;
  EXPECT_EQ(list_ids(), (ids{"c", "b", "d", "a"}));
  EXPECT_EQ(list_ids("running"), (ids{"c", "a"}));
  EXPECT_EQ(list_ids("awaiting_clarification"), (ids{"b"}));
  EXPECT_EQ(list_ids("completed"), (ids{"d"}));
  EXPECT_TRUE(list_ids("failed").empty());
  EXPECT_TRUE(list_ids("interrupted").empty());

  const std::vector<run_summary> running = run_now(store_->list("running"));
  ASSERT_EQ(running.size(), 2u);
  EXPECT_EQ(running[1].workflow_id, "a");
  EXPECT_EQ(running[1].workflow_name, "family_scheduler");
  EXPECT_EQ(running[1].status, "running");
  EXPECT_EQ(running[1].step, 2);
  EXPECT_EQ(running[1].owner, "worker-a");
  EXPECT_EQ(running[1].fence, 1);
  EXPECT_EQ(running[1].lease_expires, load("a")->lease_expires);
  EXPECT_EQ(running[1].updated_at, load("a")->updated_at);

  run_now(store_->create(new_run("e"), short_lease));
  sleep_past_short_lease();
  EXPECT_EQ(list_ids("interrupted"), (ids{"e"}));
  EXPECT_EQ(list_ids("running"), (ids{"c", "a"}));
  EXPECT_EQ(list_ids(), (ids{"c", "b", "d", "a", "e"}));
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
  EXPECT_TRUE(list_ids("running").empty());
  EXPECT_THAT(refusal_message(store_->save(new_run("never-saved"))),
              ::testing::AllOf(::testing::HasSubstr("never-saved"), ::testing::HasSubstr("create it first")));
  EXPECT_FALSE(load("never-saved").has_value());

  run_now(store_->create(new_run("saved"), long_lease));
  EXPECT_FALSE(load("save").has_value());  // no prefix matching
  EXPECT_FALSE(load("").has_value());
}

TEST_P(checkpoint_store_conformance, prune_removes_only_finished_runs_older_than_the_cutoff) {
  auto finish = [&](const std::string& id, const std::string& status) {
    const checkpoint run = new_run(id, "worker-a", "{}", {"record of " + id});
    run_now(store_->create(run, long_lease));
    run_now(store_->save(next_step(run, 1, status, "{}", {"last of " + id})));
  };
  finish("completed-old", "completed");
  finish("failed-old", "failed");
  finish("cancelled-old", "cancelled");
  finish("released-old", "interrupted");
  paused_run("paused-old", 1);
  run_now(store_->create(new_run("running-old"), long_lease));
  run_now(store_->create(new_run("expired-old"), short_lease));
  sleep_past_short_lease();  // also orders the cutoff after every save above
  const system_time cutoff = std::chrono::system_clock::now();
  std::this_thread::sleep_for(2ms);
  finish("completed-new", "completed");

  EXPECT_EQ(run_now(store_->prune(cutoff)), 3u);
  for (const std::string id : {"completed-old", "failed-old", "cancelled-old"}) {
    EXPECT_FALSE(load(id).has_value()) << id;
  }
  EXPECT_EQ(list_ids(), (std::vector<std::string>{"released-old", "paused-old", "running-old", "expired-old",
                                                  "completed-new"}));
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
        const checkpoint run = new_run("wf");
        const checkpoint paused = next_step(run, 1, "awaiting_clarification", "{}", {"r"});
        const claim_request claim = claim_for("wf", "worker-b");
        const claim_request late_claim = claim_for("wf", "worker-c");
        const std::string id = "wf";
        const std::string owner = "worker-b";
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
        (void)co_await store_->list(std::string());
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
        std::vector<checkpoint> runs;
        for (int w = 0; w < workflows_per_thread; ++w) {
          runs.push_back(new_run("t" + std::to_string(t) + "-w" + std::to_string(w), "thread-" + std::to_string(t)));
          run_now(store_->create(runs.back(), long_lease));
        }
        for (int step = 1; step <= steps_per_workflow; ++step) {
          for (const auto& run : runs) {
            run_now(store_->save(next_step(run, step, step == steps_per_workflow ? "completed" : "running",
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
  EXPECT_EQ(list_ids("completed").size(), std::size_t{thread_count * workflows_per_thread});
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
  const checkpoint run = new_run("shared");
  run_now(store_->create(run, long_lease));
  std::atomic<int> landed{0};
  std::atomic<int> unexpected_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < saves_per_thread; ++i) {
        const int step = i * thread_count + t;
        try {
          run_now(store_->save(next_step(run, step, "running", "{\"step\":" + std::to_string(step) + "}",
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
                                                   "awaiting_clarification", round)));
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
    EXPECT_EQ(loaded->status, "running");
    // The winner answers and pauses again for the next round.
    run_now(store_->save(next_step(run, round + 1, "awaiting_clarification", "{}", {winner})));
  }
  EXPECT_EQ(load("contested")->fence, 1 + rounds);
  EXPECT_EQ(load("contested")->journal.size(), std::size_t{1 + rounds});
}

}  // namespace switchboard::orchestrator::testing
