// The helpers and fixture of the checkpoint_store conformance suite
// (checkpoint_store_conformance.hpp and _ownership.hpp): the backend
// factory, a scratch directory, run_now() and the checkpoints the tests
// build. Header-only; included by both halves of the suite.
//
// The suite drives the asynchronous API through run_now(), which runs one
// operation to completion on a private io_context of the calling thread, so
// most tests read as plain sequences of calls. Leases that must expire are a
// few milliseconds long and the test sleeps well past them before looking:
// the sleeps order events, nothing asserts how long anything took.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/testing/temp_dir.hpp>

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
using scratch_directory = ::switchboard::testing::temp_dir;

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

}  // namespace switchboard::orchestrator::testing
