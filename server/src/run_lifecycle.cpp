// The run engine's controls beside creating and executing runs: cancelling
// one, waiting for one to end, and the server's start-up (carry on what was
// running) and shutdown (a grace period, then stop between steps).
#include "run_engine.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>

namespace switchboard::server {

namespace asio = boost::asio;
namespace orch = switchboard::orchestrator;

namespace {

bool is_terminal(std::string_view status) {
  return status == "success" || status == "error" || status == "timeout" || status == "interrupted";
}

}  // namespace

boost::asio::awaitable<void> run_engine::cancel(std::string thread_id, std::string run_id, std::string action,
                                                bool wait) {
  if (action.empty()) action = "interrupt";
  if (action != "interrupt" && action != "rollback") throw api_error(422, "action must be interrupt or rollback");
  // Sharing runs, the route read what the other servers did (langgraph_api::route).
  const auto run = records_.run(run_id);
  if (!run || run->thread_id != thread_id) throw api_error(404, "Run " + run_id + " not found");
  if (is_terminal(run->status)) throw api_error(409, "Run " + run_id + " has already ended (" + run->status + ")");

  if (shares_runs()) {
    // The server holding the thread acts on it: withdraws it when it is
    // pending, stops it between steps when running (run_fleet.cpp).
    co_await request_cancel(run_id, action);
    if (wait) {
      std::function<asio::awaitable<bool>()> keep_waiting = []() -> asio::awaitable<bool> { co_return true; };
      co_await wait_for_end(run_id, std::chrono::seconds(1), std::move(keep_waiting));
    }
    co_return;
  }
  bool was_waiting = false;
  std::optional<orch::workflow_handle> handle;
  {
    std::scoped_lock lock(mutex_);
    if (const auto slot = threads_.find(thread_id);
        slot != threads_.end() && std::erase(slot->second.waiting, run_id) > 0) {
      was_waiting = true;
    } else {
      cancel_actions_[run_id] = action;
      if (const auto it = handles_.find(run_id); it != handles_.end()) handle = it->second;
    }
  }
  if (was_waiting) {
    co_await withdraw(*run, action);
    co_return;
  }
  if (handle) {
    if (action == "rollback") handle->cancel();
    else handle->interrupt();
  }
  if (wait) {
    std::function<asio::awaitable<bool>()> keep_waiting = []() -> asio::awaitable<bool> { co_return true; };
    co_await wait_for_end(run_id, std::chrono::seconds(1), std::move(keep_waiting));
  }
}

// One server alone: the thread's oldest waiting run starts when none is
// active.
void run_engine::start_next(const std::string& thread_id) {
  std::string next;
  {
    std::scoped_lock lock(mutex_);
    const auto it = threads_.find(thread_id);
    if (it == threads_.end() || !it->second.active.empty()) return;
    auto& slot = it->second;
    if (slot.waiting.empty()) {  // idle: its slot goes, or every thread ever run would keep one
      threads_.erase(it);
      return;
    }
    if (shutting_down_) return;
    next = slot.waiting.front();
    slot.waiting.erase(slot.waiting.begin());
    slot.active = next;
  }
  execute_detached(next);
}

// A pending run cancelled before it started: removed with its stream
// (rollback), or ended `interrupted`; its thread is idle again when it has
// nothing else to run.
boost::asio::awaitable<void> run_engine::withdraw(const run_record& run, const std::string& action) {
  if (action == "rollback") {
    co_await records_.erase_run(run.run_id);
    co_await feed_->erase(run.run_id);
  } else {
    if (const auto changed = records_.change_run(run.run_id, [](run_record& r) {
      r.status = "interrupted";
      return true;
    }))
      co_await records_.write(*changed);
    co_await end_stream(run);
  }
  if (!thread_active(run.thread_id))
    if (const auto changed = records_.change_thread(run.thread_id, [](thread_record& t) {
      if (t.status == "busy") t.status = "idle";
      return true;
    }))
      co_await records_.write(*changed);
}

// A run executing here tells its end to its waiters directly (end_ended),
// so a wait reads the run's feed once, not after every batch of its
// events; a run executing on another server is followed through the feed
// (woken by the other server's notification).
boost::asio::awaitable<bool> run_engine::wait_for_end(std::string run_id, std::chrono::milliseconds interval,
                                                      std::function<asio::awaitable<bool>()> tick) {
  std::int64_t after = 0;
  auto ends_in = [&](const std::vector<orch::feed_event>& events) {
    for (const auto& e : events) {
      after = e.position;
      if (split_record(e.event).name == end_of_run) return true;
    }
    return false;
  };
  for (;;) {
    // Everything kept so far (a run that ended already, a long stream).
    for (;;) {
      const auto events = co_await feed_->read(run_id, after, 256);
      if (ends_in(events)) co_return true;
      if (events.size() < 256) break;
    }
    if (!records_.run(run_id)) co_return false;  // rolled back: nothing will come
    if (executes_here(run_id)) {
      auto waiting = asio::co_spawn(ends_, wait_for_end_signal(run_id, interval), asio::use_awaitable);
      co_await std::move(waiting);
      const auto events = co_await feed_->read(run_id, after, 256);
      if (ends_in(events)) co_return true;
      if (events.empty() && ended_without_end_record(run_id)) co_return true;
      if (!co_await tick()) co_return false;
      continue;
    }
    const auto events = co_await feed_->wait(run_id, after, 256, interval);
    if (ends_in(events)) co_return true;
    if (events.empty() && ended_without_end_record(run_id)) co_return true;
    if (events.empty() && !co_await tick()) co_return false;
  }
}

// The run's record says it ended, and its feed has nothing after what was
// read: the server that ended it died before it could end the stream (the
// record is written first), and no one else will. Its events were all kept
// before the record was; as a stream does (langgraph_api), the wait is over.
bool run_engine::ended_without_end_record(const std::string& run_id) const {
  const auto status = records_.run_status(run_id);
  return status && is_terminal(*status);
}

bool run_engine::executes_here(const std::string& run_id) const {
  if (!shares_runs()) return true;
  const auto run = records_.run(run_id);
  std::scoped_lock lock(mutex_);
  return run && claimed_.contains(run->thread_id);
}

// On the ends_ strand: until the run's end was told here (end_stream) or
// `timeout` passed.
boost::asio::awaitable<void> run_engine::wait_for_end_signal(std::string run_id, std::chrono::milliseconds timeout) {
  if (ended_.contains(run_id)) co_return;
  auto timer = std::make_shared<asio::steady_timer>(ends_, timeout);
  end_waiters_.emplace(run_id, timer);
  boost::system::error_code ignored;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  for (auto [it, last] = end_waiters_.equal_range(run_id); it != last; ++it)
    if (it->second == timer) {
      end_waiters_.erase(it);
      break;
    }
}

// Called once the run's end record is in the feed: wakes its waiters here.
// The last ends are remembered, for a waiter that read the feed just before
// the end and registers just after it was told. That window is a feed read
// and a hop to this strand; the last 256 ends span about 100 ms at the
// highest end rate measured (bench/serve), and a waiter that still misses
// its end reads the feed again after its interval. (4,096 were kept, about
// 210 bytes each, up to 0.8 MB for a window this short.)
void run_engine::tell_end(const std::string& run_id) {
  constexpr std::size_t ends_remembered = 256;
  asio::post(ends_, [this, run_id] {
    if (ended_.insert(run_id).second) {
      ended_order_.push_back(run_id);
      if (ended_order_.size() > ends_remembered) {
        ended_.erase(ended_order_.front());
        ended_order_.pop_front();
      }
    }
    for (auto [it, last] = end_waiters_.equal_range(run_id); it != last; ++it) it->second->cancel();
  });
}

boost::asio::awaitable<std::size_t> run_engine::prune_runs_once() {
  const auto cutoff = iso8601(std::chrono::system_clock::now() - *retention_);
  std::size_t pruned = 0;
  for (const auto& run : records_.runs()) {
    if (!is_terminal(run.status) || run.updated_at >= cutoff) continue;
    co_await feed_->erase(run.run_id);
    co_await records_.erase_run(run.run_id);
    ++pruned;
  }
  co_return pruned;
}

// Every tenth of the retention (at most once a minute): several servers
// sharing a store may prune the same run; erasing twice is harmless.
boost::asio::awaitable<void> run_engine::prune_runs() {
  background_task task{*this};
  const auto every = std::min<std::chrono::milliseconds>(*retention_ / 10, std::chrono::minutes(1));
  for (;;) {
    try {
      if (const auto n = co_await prune_runs_once(); n > 0)
        spdlog::info("serve: {} finished runs older than {} s removed with their streams", n, retention_->count());
    } catch (const std::exception& e) {
      if (!stopping()) spdlog::warn("serve: removing old runs failed: {}", e.what());
    }
    if (stopping()) co_return;
    asio::steady_timer timer(co_await asio::this_coro::executor, std::max(every, std::chrono::milliseconds(100)));
    co_await timer.async_wait(asio::use_awaitable);  // cut short at shutdown (stop_pruning_)
  }
}

boost::asio::awaitable<void> run_engine::recover() {
  if (retention_)
    asio::co_spawn(loops_, prune_runs(), asio::bind_cancellation_slot(stop_pruning_.slot(), asio::detached));
  if (shares_runs()) {
    co_await recover_shared();
    co_return;
  }
  std::vector<std::string> resumed;
  {
    std::scoped_lock lock(mutex_);
    for (const auto& run : records_.runs()) {  // oldest first
      if (run.status != "running" && run.status != "pending") continue;
      auto& slot = threads_[run.thread_id];
      if (run.status == "running" && slot.active.empty()) {
        slot.active = run.run_id;
        resumed.push_back(run.run_id);
      } else {
        slot.waiting.push_back(run.run_id);
      }
    }
  }
  for (const auto& id : resumed) {
    spdlog::info("serve: run {} was running when the server stopped; it continues", id);
    execute_detached(id);
  }
  std::vector<std::string> idle_threads;
  {
    std::scoped_lock lock(mutex_);
    for (const auto& [id, slot] : threads_)
      if (slot.active.empty() && !slot.waiting.empty()) idle_threads.push_back(id);
  }
  for (const auto& id : idle_threads) start_next(id);
  co_return;
}

// Shutting down: the loops stop waiting (their signals are emitted on
// their strand, where the slots live).
void run_engine::stop_loops() {
  asio::dispatch(loops_, [this] {
    for (auto* signal : {&stop_claiming_, &stop_renewing_, &stop_following_, &stop_pruning_})
      signal->emit(asio::cancellation_type::terminal);
  });
}

boost::asio::awaitable<void> run_engine::shutdown(std::chrono::milliseconds grace) {
  {
    std::scoped_lock lock(mutex_);
    shutting_down_ = true;
  }
  stop_loops();
  auto timer = asio::steady_timer(co_await asio::this_coro::executor);
  auto executing = [&] {
    std::scoped_lock lock(mutex_);
    return executing_ > 0;
  };
  auto pause = [&](std::chrono::milliseconds how_long) -> asio::awaitable<void> {
    timer.expires_after(how_long);
    co_await timer.async_wait(asio::use_awaitable);
  };
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (executing() && std::chrono::steady_clock::now() < deadline) co_await pause(std::chrono::milliseconds(50));
  // The grace is over: stop the rest between steps. A run whose handle
  // comes later stops itself (interrupting_).
  std::vector<orch::workflow_handle> left;
  {
    std::scoped_lock lock(mutex_);
    interrupting_ = true;
    for (auto& [id, h] : handles_) left.push_back(h);
  }
  for (auto& h : left) h.interrupt();
  while (executing()) co_await pause(std::chrono::milliseconds(20));
  // Sharing runs: the threads go back to the queue, for another server.
  auto fleet_running = [&] {
    std::scoped_lock lock(mutex_);
    return background_tasks_ > 0;
  };
  while (fleet_running()) co_await pause(std::chrono::milliseconds(20));
}

}  // namespace switchboard::server
