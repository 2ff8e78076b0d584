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
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace switchboard::orchestrator::testing {

struct checkpoint_store_backend {
  std::string name;
  // Opens the backend's store keeping its data under `scratch_dir`, a fresh
  // empty directory per test. Opening again with the same directory must
  // reach the same data when the backend is durable.
  std::function<std::shared_ptr<checkpoint_store>(const std::filesystem::path& scratch_dir)> open;
};

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

inline checkpoint make_checkpoint(std::string id, std::int64_t step, std::string status = "running",
                                  std::string state_json = R"({"step":0})") {
  checkpoint cp;
  cp.workflow_id = std::move(id);
  cp.workflow_name = "family_scheduler";
  cp.status = std::move(status);
  cp.step = step;
  cp.state_json = std::move(state_json);
  return cp;
}

class checkpoint_store_conformance : public ::testing::TestWithParam<checkpoint_store_backend> {
 protected:
  void SetUp() override { store_ = GetParam().open(scratch_.path()); }
  void TearDown() override { store_.reset(); }

  scratch_directory scratch_;
  std::shared_ptr<checkpoint_store> store_;
};

TEST_P(checkpoint_store_conformance, load_returns_what_save_stored) {
  checkpoint cp = make_checkpoint("wf-1", 3, "awaiting_clarification",
                                  R"({"input":"Soccer for Maya \"Saturday\" 2-4pm","note":"caf\u00e9 – ünïcode ✓"})");
  cp.workflow_name = "scheduling";
  const auto before = std::chrono::system_clock::now();
  store_->save(cp);
  const auto after = std::chrono::system_clock::now();

  const std::optional<checkpoint> loaded = store_->load("wf-1");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->workflow_id, "wf-1");
  EXPECT_EQ(loaded->workflow_name, "scheduling");
  EXPECT_EQ(loaded->status, "awaiting_clarification");
  EXPECT_EQ(loaded->step, 3);
  EXPECT_EQ(loaded->state_json, cp.state_json);
  EXPECT_GE(loaded->updated_at, before);
  EXPECT_LE(loaded->updated_at, after);
}

TEST_P(checkpoint_store_conformance, large_state_round_trips_unchanged) {
  std::string state = "{\"log\":[";
  for (int i = 0; i < 20000; ++i) {
    state += (i == 0 ? "" : ",") + std::string("\"step ") + std::to_string(i) + "\"";
  }
  state += "]}";
  store_->save(make_checkpoint("big", 1, "running", state));
  const std::optional<checkpoint> loaded = store_->load("big");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->state_json, state);
}

TEST_P(checkpoint_store_conformance, ids_are_data_not_syntax) {
  const std::vector<std::string> ids{"it's", "a\"b", "'; DROP TABLE checkpoints; --", "ünïcødé/🙂", "with space"};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    store_->save(make_checkpoint(ids[i], 1, "running", "{\"i\":" + std::to_string(i) + "}"));
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::optional<checkpoint> loaded = store_->load(ids[i]);
    ASSERT_TRUE(loaded.has_value()) << ids[i];
    EXPECT_EQ(loaded->state_json, "{\"i\":" + std::to_string(i) + "}");
  }
  EXPECT_EQ(store_->list(), ids);
}

TEST_P(checkpoint_store_conformance, save_with_newer_step_replaces) {
  store_->save(make_checkpoint("wf", 1, "running", R"({"v":1})"));
  store_->save(make_checkpoint("wf", 2, "completed", R"({"v":2})"));

  const std::optional<checkpoint> loaded = store_->load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 2);
  EXPECT_EQ(loaded->status, "completed");
  EXPECT_EQ(loaded->state_json, R"({"v":2})");
  EXPECT_EQ(store_->list(), std::vector<std::string>{"wf"});
}

TEST_P(checkpoint_store_conformance, save_with_equal_step_replaces) {
  store_->save(make_checkpoint("wf", 4, "running", R"({"v":1})"));
  store_->save(make_checkpoint("wf", 4, "awaiting_clarification", R"({"v":2})"));

  const std::optional<checkpoint> loaded = store_->load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "awaiting_clarification");
  EXPECT_EQ(loaded->state_json, R"({"v":2})");
}

TEST_P(checkpoint_store_conformance, stale_step_is_refused_and_keeps_newer_state) {
  store_->save(make_checkpoint("wf-stale", 5, "running", R"({"v":5})"));
  try {
    store_->save(make_checkpoint("wf-stale", 3, "completed", R"({"v":3})"));
    FAIL() << "a stale checkpoint was accepted";
  } catch (const checkpoint_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("wf-stale"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("step 3"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("stored step 5"));
  }
  const std::optional<checkpoint> loaded = store_->load("wf-stale");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 5);
  EXPECT_EQ(loaded->status, "running");
  EXPECT_EQ(loaded->state_json, R"({"v":5})");
}

TEST_P(checkpoint_store_conformance, malformed_checkpoints_are_refused_with_the_reason) {
  auto expect_refused = [&](checkpoint cp, const std::string& reason) {
    try {
      store_->save(cp);
      ADD_FAILURE() << "accepted a checkpoint with " << reason;
    } catch (const checkpoint_error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(reason));
    }
  };
  expect_refused(make_checkpoint("", 1), "empty workflow_id");
  checkpoint no_name = make_checkpoint("wf-no-name", 1);
  no_name.workflow_name.clear();
  expect_refused(no_name, "empty workflow_name");
  expect_refused(make_checkpoint("wf-negative", -1), "negative step -1");
  expect_refused(make_checkpoint("wf-status", 1, "paused"), "unknown status 'paused'");

  EXPECT_TRUE(store_->list().empty());
  EXPECT_FALSE(store_->load("wf-status").has_value());
}

TEST_P(checkpoint_store_conformance, list_filters_by_status_least_recently_saved_first) {
  store_->save(make_checkpoint("a", 1, "running"));
  store_->save(make_checkpoint("b", 1, "awaiting_clarification"));
  store_->save(make_checkpoint("c", 1, "running"));
  store_->save(make_checkpoint("d", 1, "completed"));
  store_->save(make_checkpoint("a", 2, "running"));  // a is now the most recently saved

  using ids = std::vector<std::string>;
  EXPECT_EQ(store_->list(), (ids{"b", "c", "d", "a"}));
  EXPECT_EQ(store_->list("running"), (ids{"c", "a"}));
  EXPECT_EQ(store_->list("awaiting_clarification"), (ids{"b"}));
  EXPECT_EQ(store_->list("completed"), (ids{"d"}));
  EXPECT_TRUE(store_->list("failed").empty());

  store_->save(make_checkpoint("b", 2, "running"));  // leaves awaiting_clarification
  EXPECT_TRUE(store_->list("awaiting_clarification").empty());
  EXPECT_EQ(store_->list("running"), (ids{"c", "a", "b"}));
}

TEST_P(checkpoint_store_conformance, erase_removes_only_that_workflow) {
  store_->save(make_checkpoint("keep", 1));
  store_->save(make_checkpoint("drop", 7));

  EXPECT_TRUE(store_->erase("drop"));
  EXPECT_FALSE(store_->load("drop").has_value());
  EXPECT_TRUE(store_->load("keep").has_value());
  EXPECT_EQ(store_->list(), std::vector<std::string>{"keep"});
  EXPECT_FALSE(store_->erase("drop"));

  // An erased workflow leaves no step behind: a new run may start at 0.
  store_->save(make_checkpoint("drop", 0));
  const std::optional<checkpoint> loaded = store_->load("drop");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 0);
}

TEST_P(checkpoint_store_conformance, unknown_id_is_absent) {
  EXPECT_FALSE(store_->load("never-saved").has_value());
  EXPECT_FALSE(store_->erase("never-saved"));
  EXPECT_TRUE(store_->list().empty());
  EXPECT_TRUE(store_->list("running").empty());

  store_->save(make_checkpoint("saved", 1));
  EXPECT_FALSE(store_->load("save").has_value());  // no prefix matching
  EXPECT_FALSE(store_->load("").has_value());
}

TEST_P(checkpoint_store_conformance, concurrent_saves_from_threads_all_land) {
  constexpr int thread_count = 6;
  constexpr int workflows_per_thread = 20;
  constexpr int steps_per_workflow = 5;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int step = 1; step <= steps_per_workflow; ++step) {
          for (int w = 0; w < workflows_per_thread; ++w) {
            const std::string id = "t" + std::to_string(t) + "-w" + std::to_string(w);
            store_->save(make_checkpoint(id, step, step == steps_per_workflow ? "completed" : "running",
                                         "{\"step\":" + std::to_string(step) + "}"));
            if (!store_->load(id).has_value()) {
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
  EXPECT_EQ(store_->list("completed").size(), std::size_t{thread_count * workflows_per_thread});
  for (int t = 0; t < thread_count; ++t) {
    for (int w = 0; w < workflows_per_thread; ++w) {
      const std::optional<checkpoint> loaded = store_->load("t" + std::to_string(t) + "-w" + std::to_string(w));
      ASSERT_TRUE(loaded.has_value());
      EXPECT_EQ(loaded->step, steps_per_workflow);
      EXPECT_EQ(loaded->state_json, "{\"step\":" + std::to_string(steps_per_workflow) + "}");
    }
  }
}

// Racing writers on one workflow: each save either lands or is refused as
// stale, and the highest step always wins.
TEST_P(checkpoint_store_conformance, racing_writers_on_one_workflow_keep_the_highest_step) {
  constexpr int thread_count = 4;
  constexpr int saves_per_thread = 50;
  std::atomic<int> unexpected_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < saves_per_thread; ++i) {
        const int step = i * thread_count + t;
        try {
          store_->save(make_checkpoint("shared", step, "running", "{\"step\":" + std::to_string(step) + "}"));
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
  const std::optional<checkpoint> loaded = store_->load("shared");
  ASSERT_TRUE(loaded.has_value());
  constexpr int highest = (saves_per_thread - 1) * thread_count + thread_count - 1;
  EXPECT_EQ(loaded->step, highest);
  EXPECT_EQ(loaded->state_json, "{\"step\":" + std::to_string(highest) + "}");
}

}  // namespace switchboard::orchestrator::testing
