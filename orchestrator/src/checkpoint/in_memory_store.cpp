// The in-memory checkpoint store: a map guarded by one mutex. Every call is
// short (a map lookup and some string copies), so its operations complete
// at once, on the caller's thread.
#include <switchboard/orchestrator/checkpoint_store.hpp>

#include "checkpoint_checks.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace switchboard::orchestrator {
namespace {

namespace asio = boost::asio;
using std::chrono::system_clock;

constexpr std::string_view store_name = "in-memory checkpoint store";

class in_memory_checkpoint_store final : public checkpoint_store {
 public:
  asio::awaitable<void> create(checkpoint cp, std::chrono::milliseconds lease) override {
    detail::check_new_run(cp);
    std::lock_guard lock(mutex_);
    if (auto it = runs_.find(cp.workflow_id); it != runs_.end()) {
      detail::throw_exists(store_name, summary_of(it->second));
    }
    cp.fence = 1;
    cp.lease_expires = system_clock::now() + lease;
    auto& run = runs_[cp.workflow_id];
    run.cp = std::move(cp);
    touch(run);
    co_return;
  }

  asio::awaitable<checkpoint> claim(claim_request request) override {
    std::lock_guard lock(mutex_);
    const auto now = system_clock::now();
    auto it = runs_.find(request.workflow_id);
    detail::check_claim(store_name, it == runs_.end() ? std::nullopt : std::optional(summary_of(it->second)),
                        request, now);
    auto& cp = it->second.cp;
    cp.status = "running";
    cp.owner = std::move(request.owner);
    cp.lease_expires = now + request.lease;
    ++cp.fence;
    touch(it->second);
    co_return cp;
  }

  asio::awaitable<void> save(checkpoint cp) override {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(cp.workflow_id);
    detail::check_save(store_name, it == runs_.end() ? std::nullopt : std::optional(summary_of(it->second)), cp);
    auto& stored = it->second.cp;
    stored.workflow_name = std::move(cp.workflow_name);
    stored.status = std::move(cp.status);
    stored.step = cp.step;
    stored.state_json = std::move(cp.state_json);
    for (auto& record : cp.journal) stored.journal.push_back(std::move(record));
    if (stored.status != "running") {
      stored.owner.clear();
      stored.lease_expires = {};
    }
    touch(it->second);
    co_return;
  }

  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    std::lock_guard lock(mutex_);
    const auto until = system_clock::now() + lease;
    std::size_t renewed = 0;
    for (auto& [id, run] : runs_) {
      if (run.cp.status == "running" && run.cp.owner == owner) {
        run.cp.lease_expires = until;
        ++renewed;
      }
    }
    co_return renewed;
  }

  asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(workflow_id);
    if (it == runs_.end()) co_return std::nullopt;
    checkpoint cp = it->second.cp;
    cp.status = detail::effective_status(cp.status, cp.lease_expires, system_clock::now());
    co_return cp;
  }

  asio::awaitable<std::vector<run_summary>> list(std::string status) override {
    std::vector<std::pair<std::uint64_t, run_summary>> matches;
    {
      std::lock_guard lock(mutex_);
      const auto now = system_clock::now();
      for (const auto& [id, run] : runs_) {
        auto summary = summary_of(run);
        summary.status = detail::effective_status(summary.status, summary.lease_expires, now);
        if (status.empty() || summary.status == status) matches.emplace_back(run.sequence, std::move(summary));
      }
    }
    std::sort(matches.begin(), matches.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<run_summary> runs;
    runs.reserve(matches.size());
    for (auto& match : matches) runs.push_back(std::move(match.second));
    co_return runs;
  }

  asio::awaitable<bool> erase(std::string workflow_id) override {
    std::lock_guard lock(mutex_);
    co_return runs_.erase(workflow_id) > 0;
  }

  asio::awaitable<std::size_t> prune(system_time finished_before) override {
    std::lock_guard lock(mutex_);
    co_return std::erase_if(runs_, [&](const auto& entry) {
      const auto& cp = entry.second.cp;
      return is_finished_status(cp.status) && cp.updated_at < finished_before;
    });
  }

 private:
  struct run {
    checkpoint cp;
    // Order of the last save: list() returns least recently saved first,
    // even when two saves share a clock tick.
    std::uint64_t sequence = 0;
  };

  static run_summary summary_of(const run& r) {
    const auto& cp = r.cp;
    return {cp.workflow_id, cp.workflow_name, cp.status, cp.step, cp.owner, cp.lease_expires, cp.fence,
            cp.updated_at};
  }

  void touch(run& r) {
    r.cp.updated_at = system_clock::now();
    r.sequence = ++last_sequence_;
  }

  std::mutex mutex_;
  std::map<std::string, run, std::less<>> runs_;
  std::uint64_t last_sequence_ = 0;
};

}  // namespace

std::shared_ptr<checkpoint_store> make_in_memory_checkpoint_store() {
  return std::make_shared<in_memory_checkpoint_store>();
}

}  // namespace switchboard::orchestrator
