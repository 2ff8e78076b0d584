// The in-memory run queue: a list in enqueue order guarded by one mutex;
// every operation completes at once, on the caller's thread, except
// wait_for_ready(), which an enqueue ends (queue_wakeups).
#include <switchboard/orchestrator/run_queue.hpp>
#include <switchboard/orchestrator/store_support.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <list>
#include <mutex>

namespace switchboard::orchestrator {

std::string_view to_string(ready_reason why) noexcept {
  switch (why) {
    case ready_reason::new_run: return "new_run";
    case ready_reason::resumed: return "resumed";
    case ready_reason::lease_lapsed: return "lease_lapsed";
  }
  return "?";
}

boost::asio::awaitable<void> run_queue::wait_for_ready(std::chrono::milliseconds timeout) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, timeout);
  co_await timer.async_wait(boost::asio::use_awaitable);
}

namespace {

namespace asio = boost::asio;

constexpr std::string_view queue_name = "in-memory run queue";

class in_memory_run_queue final : public run_queue {
 public:
  explicit in_memory_run_queue(store_clock clock) : clock_(store_support::or_system_clock(std::move(clock))) {}

  asio::awaitable<void> enqueue(enqueue_request request) override {
    store_support::check_enqueue(queue_name, request);
    std::lock_guard lock(mutex_);
    if (find(request.workflow_id) != runs_.end()) store_support::throw_queued(queue_name, request.workflow_id);
    queued_run run;
    run.workflow_id = std::move(request.workflow_id);
    run.workflow_name = std::move(request.workflow_name);
    run.why = request.why;
    run.payload = std::move(request.payload);
    runs_.push_back(std::move(run));
    wakeups_.notify();
    co_return;
  }

  asio::awaitable<std::optional<queued_run>> claim_next(std::string owner, std::chrono::milliseconds lease) override {
    store_support::check_owner(queue_name, owner);
    wakeups_.looking();
    std::lock_guard lock(mutex_);
    const auto now = clock_();
    auto it = std::find_if(runs_.begin(), runs_.end(), [&](const queued_run& r) {
      return r.owner.empty() || r.lease_expires <= now;
    });
    if (it == runs_.end()) co_return std::nullopt;
    it->previous_owner = it->owner.empty() ? std::string() : std::move(it->owner);
    if (!it->previous_owner.empty()) it->why = ready_reason::lease_lapsed;
    it->owner = std::move(owner);
    it->lease_expires = now + lease;
    it->fence = ++last_fence_;
    co_return *it;
  }

  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    std::lock_guard lock(mutex_);
    const auto until = clock_() + lease;
    std::size_t renewed = 0;
    for (auto& run : runs_) {
      if (run.owner == owner && !owner.empty()) {
        run.lease_expires = until;
        ++renewed;
      }
    }
    co_return renewed;
  }

  asio::awaitable<void> done(std::string workflow_id, std::int64_t fence) override {
    std::lock_guard lock(mutex_);
    auto it = find(workflow_id);
    store_support::check_done(queue_name, workflow_id, it == runs_.end() ? std::nullopt : std::optional(it->fence),
                              fence);
    runs_.erase(it);
    co_return;
  }

  asio::awaitable<std::size_t> size() override {
    std::lock_guard lock(mutex_);
    co_return runs_.size();
  }

  asio::awaitable<void> wait_for_ready(std::chrono::milliseconds timeout) override {
    auto waiting = wakeups_.wait(timeout);  // g++ 12: named before co_await
    co_await std::move(waiting);
  }

 private:
  std::list<queued_run>::iterator find(const std::string& workflow_id) {
    return std::find_if(runs_.begin(), runs_.end(), [&](const queued_run& r) { return r.workflow_id == workflow_id; });
  }

  store_clock clock_;
  std::mutex mutex_;
  std::list<queued_run> runs_;  // enqueue order
  std::int64_t last_fence_ = 0;  // of any run: a run enqueued again never gets a fence it had
  store_support::queue_wakeups wakeups_;
};

}  // namespace

std::shared_ptr<run_queue> make_in_memory_run_queue(store_clock clock) {
  return std::make_shared<in_memory_run_queue>(std::move(clock));
}

}  // namespace switchboard::orchestrator
