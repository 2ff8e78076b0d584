// A watchdog for a test step that must end but whose duration is not what
// the test checks: a step still running after `limit` ends the process
// with a message naming it, so a hang fails the test at once instead of
// stalling the suite until ctest's timeout. The limit is generous (minutes:
// a loaded machine never comes near it), never a measurement: no test
// asserts how fast anything was. Header-only.
//
//   const switchboard::testing::hang_guard guard("the stubborn server is killed");
//   ... the step ...
//
// Thread-safety: one guard per step; its watchdog is a thread of its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace switchboard::testing {

inline constexpr std::chrono::seconds default_hang_limit{120};

class hang_guard {
 public:
  explicit hang_guard(std::string what, std::chrono::seconds limit = default_hang_limit)
      : watchdog_([this, what = std::move(what), limit] { watch(what, limit); }) {}
  ~hang_guard() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    finished_.notify_all();
    watchdog_.join();
  }
  hang_guard(const hang_guard&) = delete;
  hang_guard& operator=(const hang_guard&) = delete;

 private:
  void watch(const std::string& what, std::chrono::seconds limit) {
    std::unique_lock lock(mutex_);
    if (finished_.wait_for(lock, limit, [this] { return done_; })) return;
    std::fprintf(stderr, "hang guard: %s: still running after %lld s\n", what.c_str(),
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(EXIT_FAILURE);
  }

  std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  std::thread watchdog_;  // last: starts once the members it uses exist
};

}  // namespace switchboard::testing
