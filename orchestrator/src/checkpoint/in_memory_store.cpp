// The in-memory checkpoint store: a map guarded by one mutex. Every call is
// short (a map lookup and a string copy), so one lock is simpler and no
// slower in practice than finer-grained locking.
#include <switchboard/orchestrator/checkpoint_store.hpp>

#include "checkpoint_checks.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace switchboard::orchestrator {
namespace {

class in_memory_checkpoint_store final : public checkpoint_store {
 public:
  void save(const checkpoint& cp) override {
    detail::check_checkpoint(cp);
    std::lock_guard lock(mutex_);
    auto [it, inserted] = entries_.try_emplace(cp.workflow_id);
    if (!inserted && cp.step < it->second.cp.step) {
      detail::throw_stale_step("in-memory checkpoint store", cp, it->second.cp.step);
    }
    it->second.cp = cp;
    it->second.cp.updated_at = std::chrono::system_clock::now();
    it->second.sequence = ++last_sequence_;
  }

  std::optional<checkpoint> load(std::string_view workflow_id) const override {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(workflow_id);
    if (it == entries_.end()) {
      return std::nullopt;
    }
    return it->second.cp;
  }

  std::vector<std::string> list(std::string_view status) const override {
    std::vector<std::pair<std::uint64_t, std::string>> matches;
    {
      std::lock_guard lock(mutex_);
      for (const auto& [id, entry] : entries_) {
        if (status.empty() || entry.cp.status == status) {
          matches.emplace_back(entry.sequence, id);
        }
      }
    }
    std::sort(matches.begin(), matches.end());
    std::vector<std::string> ids;
    ids.reserve(matches.size());
    for (auto& match : matches) {
      ids.push_back(std::move(match.second));
    }
    return ids;
  }

  bool erase(std::string_view workflow_id) override {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(workflow_id);
    if (it == entries_.end()) {
      return false;
    }
    entries_.erase(it);
    return true;
  }

 private:
  struct entry {
    checkpoint cp;
    // Order of the last save: list() returns least recently saved first,
    // even when two saves share a clock tick.
    std::uint64_t sequence = 0;
  };

  mutable std::mutex mutex_;
  std::map<std::string, entry, std::less<>> entries_;
  std::uint64_t last_sequence_ = 0;
};

}  // namespace

std::shared_ptr<checkpoint_store> make_in_memory_checkpoint_store() {
  return std::make_shared<in_memory_checkpoint_store>();
}

}  // namespace switchboard::orchestrator
