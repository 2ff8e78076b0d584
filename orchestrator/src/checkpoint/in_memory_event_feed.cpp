// The in-memory event feed: a vector per run guarded by one mutex; a
// waiter sleeps until an append to its run wakes it (feed_wakeups).
#include <switchboard/orchestrator/event_feed.hpp>
#include <switchboard/orchestrator/store_support.hpp>

#include <map>
#include <mutex>

namespace switchboard::orchestrator {
namespace {

namespace asio = boost::asio;

class in_memory_event_feed final : public event_feed {
 public:
  explicit in_memory_event_feed(store_clock clock) : clock_(store_support::or_system_clock(std::move(clock))) {}

  asio::awaitable<std::int64_t> append(std::string workflow_id, std::string event) override {
    store_support::check_feed_id("in-memory event feed", workflow_id);
    std::int64_t position = 0;
    {
      std::lock_guard lock(mutex_);
      auto& events = feeds_[workflow_id];
      position = static_cast<std::int64_t>(events.size()) + 1;
      events.push_back({position, std::move(event), clock_()});
    }
    wakeups_.notify(workflow_id);
    co_return position;
  }

  asio::awaitable<std::int64_t> append_all(std::string workflow_id, std::vector<std::string> batch) override {
    store_support::check_feed_id("in-memory event feed", workflow_id);
    if (batch.empty()) co_return 0;
    std::int64_t position = 0;
    {
      std::lock_guard lock(mutex_);
      auto& events = feeds_[workflow_id];
      const auto at = clock_();
      for (auto& event : batch) {
        position = static_cast<std::int64_t>(events.size()) + 1;
        events.push_back({position, std::move(event), at});
      }
    }
    wakeups_.notify(workflow_id);
    co_return position;
  }

  asio::awaitable<std::vector<feed_event>> read(std::string workflow_id, std::int64_t after,
                                                std::size_t limit) override {
    co_return read_now(workflow_id, after, limit);
  }

  // Not a coroutine: a stream may wait here for hours, and wait_for_events'
  // frame holds all the wait needs. Every append is made in this process
  // and wakes the waiter: no polling.
  asio::awaitable<std::vector<feed_event>> wait(std::string workflow_id, std::int64_t after, std::size_t limit,
                                                std::chrono::milliseconds timeout) override {
    return wakeups_.wait_for_events(*this, std::move(workflow_id), after, limit, timeout,
                                    std::chrono::milliseconds::max());
  }

  asio::awaitable<std::size_t> erase(std::string workflow_id) override {
    std::lock_guard lock(mutex_);
    auto it = feeds_.find(workflow_id);
    if (it == feeds_.end()) co_return 0;
    const auto removed = it->second.size();
    feeds_.erase(it);
    co_return removed;
  }

 private:
  std::vector<feed_event> read_now(const std::string& workflow_id, std::int64_t after, std::size_t limit) {
    std::lock_guard lock(mutex_);
    std::vector<feed_event> out;
    auto it = feeds_.find(workflow_id);
    if (it == feeds_.end() || after < 0) return out;
    const auto& events = it->second;
    for (auto i = static_cast<std::size_t>(after); i < events.size() && (limit == 0 || out.size() < limit); ++i) {
      out.push_back(events[i]);
    }
    return out;
  }

  store_clock clock_;
  std::mutex mutex_;
  std::map<std::string, std::vector<feed_event>, std::less<>> feeds_;
  store_support::feed_wakeups wakeups_;
};

}  // namespace

asio::awaitable<std::int64_t> event_feed::append_all(std::string workflow_id, std::vector<std::string> events) {
  std::int64_t last = 0;
  for (auto& event : events) last = co_await append(workflow_id, std::move(event));
  co_return last;
}

asio::awaitable<std::int64_t> event_feed::append_claimed(std::string workflow_id, std::vector<std::string>,
                                                         feed_claim claim) {
  throw checkpoint_error("event feed: append to the feed of workflow '" + workflow_id + "' under the claim of '" +
                         claim.workflow_id + "' refused: this store has no run queue to check claims against");
  co_return 0;
}

std::shared_ptr<event_feed> make_in_memory_event_feed(store_clock clock) {
  return std::make_shared<in_memory_event_feed>(std::move(clock));
}

}  // namespace switchboard::orchestrator
