#include <switchboard/models/caching_model.hpp>

#include <switchboard/models/request_hash.hpp>

#include <spdlog/spdlog.h>

#include <stdexcept>
#include <utility>

namespace switchboard::models {

namespace asio = boost::asio;

caching_model::caching_model(chat_model& inner, caching_options options)
    : inner_(inner), options_(std::move(options)) {
  if (options_.capacity == 0)
    throw std::invalid_argument("caching_model '" + options_.name + "': capacity must be > 0");
}

std::chrono::steady_clock::time_point caching_model::now() const {
  return options_.now ? options_.now() : std::chrono::steady_clock::now();
}

asio::awaitable<chat_result> caching_model::complete(chat_request request) {
  std::string key = request_hash(request);
  chat_result result;
  if (lookup(key, result) || lookup_store(key, result)) {
    spdlog::debug("model cache '{}': hit {}", options_.name, key.substr(0, 12));
    deliver_whole(request.stream, result);  // a streamed request gets the cached answer as one piece
    co_return result;
  }
  spdlog::debug("model cache '{}': miss {}", options_.name, key.substr(0, 12));
  result = co_await inner_.complete(std::move(request));
  if (options_.store) options_.store->save(key, result);
  store(std::move(key), result);
  co_return result;
}

// After a memory miss: the store's entry, remembered in memory. The miss
// lookup() counted becomes a hit.
bool caching_model::lookup_store(const std::string& key, chat_result& out) {
  if (!options_.store) return false;
  auto stored = options_.store->load(key);
  if (!stored) return false;
  {
    std::lock_guard lock(mutex_);
    --stats_.misses;
    ++stats_.hits;
    ++stats_.store_hits;
  }
  out = *stored;
  store(key, *stored);
  return true;
}

bool caching_model::lookup(const std::string& key, chat_result& out) {
  const auto at = now();
  std::lock_guard lock(mutex_);
  auto found = index_.find(key);
  if (found != index_.end() && options_.ttl > std::chrono::steady_clock::duration::zero() &&
      found->second->expires <= at) {
    lru_.erase(found->second);
    index_.erase(found);
    ++stats_.expirations;
    found = index_.end();
  }
  if (found == index_.end()) {
    ++stats_.misses;
    return false;
  }
  lru_.splice(lru_.begin(), lru_, found->second);
  ++stats_.hits;
  out = found->second->result;
  return true;
}

void caching_model::store(std::string key, const chat_result& result) {
  const auto expires = now() + options_.ttl;
  std::lock_guard lock(mutex_);
  if (auto found = index_.find(key); found != index_.end()) {
    // A concurrent identical request got here first; the newer answer wins.
    found->second->result = result;
    found->second->expires = expires;
    lru_.splice(lru_.begin(), lru_, found->second);
    return;
  }
  lru_.push_front(entry{key, result, expires});
  index_.emplace(std::move(key), lru_.begin());
  while (lru_.size() > options_.capacity) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
    ++stats_.evictions;
  }
}

caching_model::stats caching_model::statistics() const {
  std::lock_guard lock(mutex_);
  stats copy = stats_;
  copy.entries = lru_.size();
  return copy;
}

void caching_model::clear() {
  std::lock_guard lock(mutex_);
  lru_.clear();
  index_.clear();
}

std::vector<protocol::metric_sample> caching_model::collect() const {
  const stats s = statistics();
  using protocol::metric_sample;
  auto sample = [&](std::string name, std::string label, std::string label_value, double value,
                    metric_sample::kind type) {
    metric_sample out;
    out.name = std::move(name);
    out.labels = {{"cache", options_.name}};
    if (!label.empty()) out.labels.emplace(std::move(label), std::move(label_value));
    out.value = value;
    out.type = type;
    return out;
  };
  constexpr auto counter = metric_sample::kind::counter;
  return {
      sample("switchboard_model_cache_requests_total", "outcome", "hit", double(s.hits), counter),
      sample("switchboard_model_cache_requests_total", "outcome", "miss", double(s.misses), counter),
      sample("switchboard_model_cache_store_hits_total", "", "", double(s.store_hits), counter),
      sample("switchboard_model_cache_evictions_total", "cause", "capacity", double(s.evictions), counter),
      sample("switchboard_model_cache_evictions_total", "cause", "expired", double(s.expirations), counter),
      sample("switchboard_model_cache_entries", "", "", double(s.entries), metric_sample::kind::gauge),
  };
}

}  // namespace switchboard::models
