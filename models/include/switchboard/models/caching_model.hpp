// caching_model: a chat_model decorator that answers repeated requests from
// an in-memory LRU cache with a time-to-live.
//
// The key is request_hash() (request_hash.hpp): the model name, the prompt
// version, every rendered message, the sampling parameters and the response
// format including its schema — any difference is a different entry. Only
// successful answers are cached; errors always propagate and are never
// remembered. A hit returns the stored chat_result unchanged (same text,
// usage and raw body as the original answer; latency is the original's), so
// replays through the cache are indistinguishable from the first answer;
// count tokens actually spent with the miss counter, not the usage.
//
// Concurrent identical requests are not coalesced: if a second call for the
// same key arrives while the first is still waiting for the model, both
// miss and both go to the model; the later answer overwrites the earlier
// one. This keeps a slow or cancelled call from stalling or failing its
// neighbours.
//
// A second level may sit behind the memory: caching_options::store (a
// cache_store, e.g. file_cache_store on disk). A memory miss asks the store;
// its answer is remembered in memory and counted as a hit (and a store
// hit). Every new answer is saved to the store too.
//
// Counters: hits, misses, evictions (capacity) and expirations (TTL), also as
// metric samples (metrics_source):
//   switchboard_model_cache_requests_total{cache, outcome=hit|miss}
//   switchboard_model_cache_store_hits_total{cache}  (hits the store answered)
//   switchboard_model_cache_evictions_total{cache, cause=capacity|expired}
//   switchboard_model_cache_entries{cache}          (gauge)
//
// Completion, cancellation: as the wrapped model (a hit completes without
// suspending). Lifetime: the wrapped model must outlive this decorator.
// Thread-safety: complete(), the counters and collect() may be called
// concurrently from any thread; one mutex guards the cache and is never held
// while the wrapped model works.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/protocol/metrics.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace switchboard::models {

// Where a caching_model keeps answers beyond its memory. load() and save()
// never throw: an entry that cannot be read is a miss, one that cannot be
// written is not kept (both are the store's to report).
// Thread-safety: both may be called concurrently.
class cache_store {
 public:
  virtual ~cache_store() = default;
  virtual std::optional<chat_result> load(const std::string& key) = 0;
  virtual void save(const std::string& key, const chat_result& result) = 0;
};

struct caching_options {
  std::size_t capacity = 1024;               // entries; must be > 0
  std::chrono::steady_clock::duration ttl = std::chrono::hours(1);  // zero = never expires
  std::string name = "model";                // the `cache` label of the metrics
  // Time source for TTL checks; tests inject a fake clock. Default steady_clock.
  std::function<std::chrono::steady_clock::time_point()> now;
  std::shared_ptr<cache_store> store;        // optional second level (see above)
};

class caching_model final : public chat_model, public protocol::metrics_source {
 public:
  // Throws std::invalid_argument when capacity is 0.
  caching_model(chat_model& inner, caching_options options = {});

  boost::asio::awaitable<chat_result> complete(chat_request request) override;
  std::string_view provider() const noexcept override { return inner_.provider(); }
  model_capabilities capabilities() const noexcept override { return inner_.capabilities(); }

  struct stats {
    std::uint64_t hits = 0, misses = 0, evictions = 0, expirations = 0;
    std::uint64_t store_hits = 0;  // of the hits, those the store answered
    std::size_t entries = 0;
  };
  stats statistics() const;
  // Drops every entry (counters are kept).
  void clear();

  std::vector<protocol::metric_sample> collect() const override;

 private:
  struct entry {
    std::string key;
    chat_result result;
    std::chrono::steady_clock::time_point expires;
  };
  using lru_list = std::list<entry>;

  std::chrono::steady_clock::time_point now() const;
  bool lookup(const std::string& key, chat_result& out);
  bool lookup_store(const std::string& key, chat_result& out);
  void store(std::string key, const chat_result& result);

  chat_model& inner_;
  caching_options options_;
  mutable std::mutex mutex_;
  lru_list lru_;  // most recently used first
  std::unordered_map<std::string, lru_list::iterator> index_;
  stats stats_;
};

}  // namespace switchboard::models
