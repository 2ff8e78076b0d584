// The helpers and fixture of the store conformance suite
// (checkpoint_store_conformance.hpp): the backend description, a scratch
// directory, a clock the tests move by hand, run_now() and the requests the
// tests build. Header-only; included by every part of the suite.
//
// The suite drives the asynchronous API through run_now(), which runs one
// operation to completion on a private io_context of the calling thread, so
// most tests read as plain sequences of calls. Leases that must expire are a
// few milliseconds long and the test sleeps well past them before looking:
// the sleeps order events, nothing asserts how long anything took.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/event_feed.hpp>
#include <switchboard/orchestrator/run_queue.hpp>

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
  // The backend's run queue and event feed under `scratch_dir`, reading
  // `clock` (which the tests move by hand). Unset: those tests are skipped.
  std::function<std::shared_ptr<run_queue>(const std::filesystem::path& scratch_dir, store_clock clock)> open_queue;
  std::function<std::shared_ptr<event_feed>(const std::filesystem::path& scratch_dir, store_clock clock)> open_feed;
  // Whether the feed checks a claimed append against the queue of the same
  // store (false: the store has no queue it can see, and refuses them all).
  bool feed_checks_claims = true;
};

// A clock that stands still until the test moves it: a lease lapses when the
// test says so, not after a sleep. Safe to read from any thread.
class manual_clock {
 public:
  system_time now() const noexcept { return system_time(system_time::duration(ticks_.load())); }
  void advance(std::chrono::milliseconds by) noexcept {
    ticks_ += std::chrono::duration_cast<system_time::duration>(by).count();
  }
  // The clock as a store reads it; `this` must outlive the store.
  store_clock function() {
    return [this] { return now(); };
  }

 private:
  std::atomic<system_time::rep> ticks_{std::chrono::system_clock::now().time_since_epoch().count()};
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
inline save_request new_run(std::string id, std::string owner = "worker-a", std::string state_json = R"({"step":0})",
                            std::vector<std::string> journal = {}) {
  save_request run;
  run.workflow_id = std::move(id);
  run.workflow_name = "family_scheduler";
  run.status = workflow_status::running;
  run.step = 0;
  run.state_json = std::move(state_json);
  run.journal = std::move(journal);
  run.owner = std::move(owner);
  run.fence = 1;
  return run;
}

// The request its owner saves a claimed (or loaded) run with: same id,
// name, owner and fence.
inline save_request request_of(const checkpoint& run) {
  save_request request;
  request.workflow_id = run.workflow_id;
  request.workflow_name = run.workflow_name;
  request.status = run.status;
  request.step = run.step;
  request.state_json = run.state_json;
  request.owner = run.owner;
  request.fence = run.fence;
  return request;
}
inline save_request request_of(save_request run) { return run; }

// What the owner of `run` saves after taking it to `step`: same id, owner
// and fence, a new head and status, `journal` to append.
template <class Run>
save_request next_step(const Run& run, std::int64_t step, workflow_status status, std::string state_json,
                       std::vector<std::string> journal = {}) {
  save_request next = request_of(run);
  next.step = step;
  next.status = status;
  next.state_json = std::move(state_json);
  next.journal = std::move(journal);
  return next;
}

inline claim_request claim_for(std::string id, std::string owner,
                               workflow_status expected_status = workflow_status::awaiting_clarification,
                               std::optional<std::int64_t> expected_step = std::nullopt) {
  claim_request request;
  request.workflow_id = std::move(id);
  request.owner = std::move(owner);
  request.expected_status = expected_status;
  request.expected_step = expected_step;
  return request;
}

// The runs in `status` (every run when empty), all of them.
inline list_request in_status(std::optional<workflow_status> status) {
  list_request request;
  request.status = status;
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

  // The backend's queue or feed on the manual clock; null when it has none.
  std::shared_ptr<run_queue> open_queue() {
    return GetParam().open_queue ? GetParam().open_queue(scratch_.path(), clock_.function()) : nullptr;
  }
  std::shared_ptr<event_feed> open_feed() {
    return GetParam().open_feed ? GetParam().open_feed(scratch_.path(), clock_.function()) : nullptr;
  }

  std::optional<checkpoint> load(const std::string& id) { return run_now(store_->load(id)); }
  // Every run in `status` (any when empty), most recently saved first.
  std::vector<std::string> list_ids(std::optional<workflow_status> status = std::nullopt) {
    return ids_of(run_now(list_all(*store_, in_status(status))));
  }

  // Creates `id` as worker-a and pauses it for clarification at `step`;
  // returns the paused run as load() reports it.
  checkpoint paused_run(const std::string& id, std::int64_t step, std::string state_json = R"({"question":"?"})") {
    const save_request run = new_run(id);
    run_now(store_->create(run, long_lease));
    run_now(store_->save(next_step(run, step, workflow_status::awaiting_clarification, std::move(state_json),
                                   {"paused at step " + std::to_string(step)})));
    return *load(id);
  }

  scratch_directory scratch_;
  manual_clock clock_;
  std::shared_ptr<checkpoint_store> store_;
};

}  // namespace switchboard::orchestrator::testing
