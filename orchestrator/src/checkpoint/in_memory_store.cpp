// The in-memory checkpoint store: a map guarded by one mutex. Every call is
// short (a map lookup and some string copies), so its operations complete
// at once, on the caller's thread.
#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <switchboard/orchestrator/store_support.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace switchboard::orchestrator {
namespace {

namespace asio = boost::asio;

constexpr std::string_view store_name = "in-memory checkpoint store";

class in_memory_checkpoint_store final : public checkpoint_store {
 public:
  explicit in_memory_checkpoint_store(store_clock clock) : clock_(store_support::or_system_clock(std::move(clock))) {}

  asio::awaitable<void> create(save_request request, std::chrono::milliseconds lease) override {
    store_support::check_new_run(request);
    std::lock_guard lock(mutex_);
    if (auto it = runs_.find(request.workflow_id); it != runs_.end()) {
      store_support::throw_exists(store_name, it->second.summary);
    }
    auto& stored = runs_[request.workflow_id];
    stored.summary = {request.workflow_id, request.workflow_name, workflow_status::running, request.step,
                      request.owner, clock_() + lease, 1, {}};
    write(stored, std::move(request));
    co_return;
  }

  asio::awaitable<checkpoint> claim(claim_request request) override {
    std::lock_guard lock(mutex_);
    const auto now = clock_();
    auto it = runs_.find(request.workflow_id);
    store_support::check_claim(store_name, it == runs_.end() ? std::nullopt : std::optional(it->second.summary), request,
                        now);
    auto& s = it->second.summary;
    s.status = workflow_status::running;
    s.owner = std::move(request.owner);
    s.lease_expires = now + request.lease;
    ++s.fence;
    touch(it->second);
    co_return checkpoint_of(it->second, now);
  }

  asio::awaitable<void> save(save_request request) override {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(request.workflow_id);
    store_support::check_save(store_name, it == runs_.end() ? std::nullopt : std::optional(it->second.summary), request);
    auto& s = it->second.summary;
    s.workflow_name = request.workflow_name;
    s.status = request.status;
    s.step = request.step;
    if (s.status != workflow_status::running) {
      s.owner.clear();
      s.lease_expires = {};
    }
    write(it->second, std::move(request));
    co_return;
  }

  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    std::lock_guard lock(mutex_);
    const auto until = clock_() + lease;
    std::size_t renewed = 0;
    for (auto& [id, run] : runs_) {
      if (run.summary.status == workflow_status::running && run.summary.owner == owner) {
        run.summary.lease_expires = until;
        ++renewed;
      }
    }
    co_return renewed;
  }

  asio::awaitable<bool> release(std::string workflow_id, std::string owner, std::int64_t fence) override {
    std::lock_guard lock(mutex_);
    const auto it = runs_.find(workflow_id);
    if (it == runs_.end()) co_return false;
    auto& s = it->second.summary;
    if (s.status != workflow_status::running || s.owner.empty() || s.owner != owner || s.fence != fence)
      co_return false;
    s.status = workflow_status::interrupted;
    s.owner.clear();
    s.lease_expires = {};
    touch(it->second);
    co_return true;
  }

  asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(workflow_id);
    if (it == runs_.end()) co_return std::nullopt;
    co_return checkpoint_of(it->second, clock_());
  }

  asio::awaitable<run_page> list(list_request request) override {
    const auto before = store_support::parse_cursor(store_name, request.cursor);
    std::vector<std::pair<std::int64_t, run_summary>> matches;
    {
      std::lock_guard lock(mutex_);
      const auto now = clock_();
      for (const auto& [id, run] : runs_) {
        if (before && run.sequence >= *before) continue;
        auto summary = reported(run, now);
        if (store_support::selects(request, summary)) matches.emplace_back(run.sequence, std::move(summary));
      }
    }
    std::sort(matches.begin(), matches.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    run_page page;
    if (request.limit > 0 && matches.size() > request.limit) {
      matches.resize(request.limit);
      page.next_cursor = store_support::make_cursor(matches.back().first);
    }
    page.runs.reserve(matches.size());
    for (auto& match : matches) page.runs.push_back(std::move(match.second));
    co_return page;
  }

  asio::awaitable<bool> erase(std::string workflow_id) override {
    std::lock_guard lock(mutex_);
    co_return runs_.erase(workflow_id) > 0;
  }

  asio::awaitable<std::size_t> prune(system_time finished_before) override {
    std::lock_guard lock(mutex_);
    co_return std::erase_if(runs_, [&](const auto& entry) {
      const auto& s = entry.second.summary;
      return is_finished(s.status) && s.updated_at < finished_before;
    });
  }

 private:
  struct run {
    run_summary summary;  // its status as stored
    std::string head;
    std::vector<std::string> journal;
    // Order of the last save: list() returns the most recently saved
    // first, even when two saves share a clock tick.
    std::int64_t sequence = 0;
  };

  static run_summary reported(const run& r, system_time now) {
    auto summary = r.summary;
    summary.status = store_support::effective_status(summary.status, summary.lease_expires, now);
    return summary;
  }

  static checkpoint checkpoint_of(const run& r, system_time now) {
    return store_support::checkpoint_of(reported(r, now), r.head, r.journal);
  }

  void write(run& r, save_request request) {
    r.head = std::move(request.state_json);
    for (auto& record : request.journal) r.journal.push_back(std::move(record));
    touch(r);
  }

  void touch(run& r) {
    r.summary.updated_at = clock_();
    r.sequence = ++last_sequence_;
  }

  store_clock clock_;
  std::mutex mutex_;
  std::map<std::string, run, std::less<>> runs_;
  std::int64_t last_sequence_ = 0;
};

}  // namespace

std::shared_ptr<checkpoint_store> make_in_memory_checkpoint_store(store_clock clock) {
  return std::make_shared<in_memory_checkpoint_store>(std::move(clock));
}

}  // namespace switchboard::orchestrator
