// A checkpoint store for the fault tests' helper processes (durable_helper,
// tool_helper): it forwards to another store and kills its own process
// (SIGKILL, no clean-up at all) right after the Nth successful create,
// claim or save — the moment a crash leaves the most to recover from.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>

namespace switchboard::orchestrator::testing {

class kill_after_writes final : public forwarding_checkpoint_store {
 public:
  // kill_after 0: never.
  kill_after_writes(std::shared_ptr<checkpoint_store> inner, int kill_after)
      : forwarding_checkpoint_store(std::move(inner)), kill_after_(kill_after) {}

  boost::asio::awaitable<void> create(save_request cp, std::chrono::milliseconds lease) override {
    co_await inner().create(std::move(cp), lease);
    wrote();
  }
  boost::asio::awaitable<checkpoint> claim(claim_request request) override {
    auto claimed = co_await inner().claim(std::move(request));
    wrote();
    co_return claimed;
  }
  boost::asio::awaitable<void> save(save_request cp) override {
    co_await inner().save(std::move(cp));
    wrote();
  }

  int writes() const noexcept { return writes_; }

 private:
  void wrote() {
    const int n = ++writes_;
    if (kill_after_ > 0 && n == kill_after_) std::raise(SIGKILL);
  }

  int kill_after_;
  std::atomic<int> writes_{0};
};

}  // namespace switchboard::orchestrator::testing
