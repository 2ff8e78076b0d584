#include <switchboard/models/caching_model.hpp>

#include "model_test_support.hpp"

#include <switchboard/models/model_error.hpp>
#include <switchboard/models/scripted_model.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

namespace switchboard::models {
namespace {

using test::run;
using test::user_request;
using namespace std::chrono_literals;

// Answers "answer N to <last message>", N counting the calls that reached it.
class counting_model final : public chat_model {
 public:
  boost::asio::awaitable<chat_result> complete(chat_request request) override {
    const int n = ++calls;
    chat_result result;
    result.text = "answer " + std::to_string(n) + " to " + request.messages.back().content;
    result.usage = {10, 5};
    co_return result;
  }
  std::string_view provider() const noexcept override { return "counting"; }
  std::atomic<int> calls{0};
};

struct fake_clock {
  std::chrono::steady_clock::time_point now{};
  caching_options options(std::size_t capacity, std::chrono::steady_clock::duration ttl) {
    caching_options out;
    out.capacity = capacity;
    out.ttl = ttl;
    out.name = "test";
    out.now = [this] { return now; };
    return out;
  }
};

TEST(caching_model, second_identical_request_is_a_hit) {
  counting_model inner;
  caching_model cache(inner);
  const chat_result first = run(cache.complete(user_request("hi")));
  const chat_result second = run(cache.complete(user_request("hi")));
  EXPECT_EQ(inner.calls, 1);
  EXPECT_EQ(first.text, "answer 1 to hi");
  EXPECT_EQ(second.text, first.text);
  EXPECT_EQ(second.usage.total(), 15);
  const auto stats = cache.statistics();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.entries, 1u);
}

TEST(caching_model, every_part_of_the_request_is_in_the_key) {
  counting_model inner;
  caching_model cache(inner);
  const chat_request base = user_request("hi");
  std::vector<chat_request> variants(8, base);
  variants[1].model = "other-model";
  variants[2].prompt_version = "scheduling@2";
  variants[3].temperature = 0.2;
  variants[4].seed = 7;
  variants[5].messages.insert(variants[5].messages.begin(), {chat_role::system, "be brief"});
  variants[6].format.type = response_format::kind::json_object;
  variants[7].format.type = response_format::kind::json_schema;
  variants[7].format.name = "out";
  variants[7].format.schema = boost::json::parse(R"({"type":"object"})");
  for (const auto& request : variants) run(cache.complete(request));
  EXPECT_EQ(inner.calls, 8) << "each variant must miss";

  chat_request other_schema = variants[7];
  other_schema.format.schema = boost::json::parse(R"({"type":"array"})");
  run(cache.complete(other_schema));
  EXPECT_EQ(inner.calls, 9) << "a different schema must miss";
  run(cache.complete(variants[7]));
  EXPECT_EQ(inner.calls, 9) << "the same schema must hit";
}

TEST(caching_model, entries_expire_after_the_ttl) {
  counting_model inner;
  fake_clock clock;
  caching_model cache(inner, clock.options(16, 10s));
  run(cache.complete(user_request("hi")));
  clock.now += 9s;
  EXPECT_EQ(run(cache.complete(user_request("hi"))).text, "answer 1 to hi");
  clock.now += 2s;  // 11 s after the answer was stored
  EXPECT_EQ(run(cache.complete(user_request("hi"))).text, "answer 2 to hi");
  const auto stats = cache.statistics();
  EXPECT_EQ(stats.expirations, 1u);
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 2u);
}

TEST(caching_model, zero_ttl_never_expires) {
  counting_model inner;
  fake_clock clock;
  caching_model cache(inner, clock.options(16, 0s));
  run(cache.complete(user_request("hi")));
  clock.now += std::chrono::hours(24 * 365);
  run(cache.complete(user_request("hi")));
  EXPECT_EQ(inner.calls, 1);
}

TEST(caching_model, least_recently_used_entry_is_evicted) {
  counting_model inner;
  fake_clock clock;
  caching_model cache(inner, clock.options(2, 0s));
  run(cache.complete(user_request("a")));
  run(cache.complete(user_request("b")));
  run(cache.complete(user_request("a")));  // a is now more recent than b
  run(cache.complete(user_request("c")));  // evicts b
  EXPECT_EQ(cache.statistics().evictions, 1u);
  EXPECT_EQ(inner.calls, 3);

  run(cache.complete(user_request("a")));
  EXPECT_EQ(inner.calls, 3) << "a must still be cached";
  run(cache.complete(user_request("b")));
  EXPECT_EQ(inner.calls, 4) << "b must have been evicted";
  EXPECT_EQ(cache.statistics().entries, 2u);
}

TEST(caching_model, errors_are_not_cached) {
  scripted_model inner;
  inner.push(scripted_response::error(model_error(model_errc::timeout, "timed out")));
  inner.push_text("ok");
  caching_model cache(inner);
  EXPECT_THROW(run(cache.complete(user_request("hi"))), model_error);
  EXPECT_EQ(run(cache.complete(user_request("hi"))).text, "ok");
  EXPECT_EQ(run(cache.complete(user_request("hi"))).text, "ok");
  EXPECT_EQ(inner.calls(), 2u);
}

TEST(caching_model, forwards_provider_and_capabilities) {
  scripted_model inner({}, {output_mode::json_object, false}, "openai");
  caching_model cache(inner);
  EXPECT_EQ(cache.provider(), "openai");
  EXPECT_EQ(cache.capabilities().best_mode, output_mode::json_object);
}

TEST(caching_model, clear_drops_entries_but_keeps_counters) {
  counting_model inner;
  caching_model cache(inner);
  run(cache.complete(user_request("hi")));
  cache.clear();
  run(cache.complete(user_request("hi")));
  EXPECT_EQ(inner.calls, 2);
  EXPECT_EQ(cache.statistics().misses, 2u);
}

TEST(caching_model, metrics_report_hits_misses_evictions_and_entries) {
  counting_model inner;
  fake_clock clock;
  caching_model cache(inner, clock.options(1, 5s));
  run(cache.complete(user_request("a")));
  run(cache.complete(user_request("a")));
  run(cache.complete(user_request("b")));  // evicts a
  clock.now += 6s;
  run(cache.complete(user_request("b")));  // expired

  std::map<std::string, double> values;
  for (const auto& sample : cache.collect()) {
    EXPECT_EQ(sample.labels.at("cache"), "test");
    std::string key = sample.name;
    for (const auto& [label, value] : sample.labels)
      if (label != "cache") key += "{" + label + "=" + value + "}";
    values[key] = sample.value;
  }
  EXPECT_EQ(values.at("switchboard_model_cache_requests_total{outcome=hit}"), 1);
  EXPECT_EQ(values.at("switchboard_model_cache_requests_total{outcome=miss}"), 3);
  EXPECT_EQ(values.at("switchboard_model_cache_evictions_total{cause=capacity}"), 1);
  EXPECT_EQ(values.at("switchboard_model_cache_evictions_total{cause=expired}"), 1);
  EXPECT_EQ(values.at("switchboard_model_cache_entries"), 1);
}

TEST(caching_model, zero_capacity_is_rejected) {
  counting_model inner;
  caching_options options;
  options.capacity = 0;
  EXPECT_THROW(caching_model(inner, options), std::invalid_argument);
}

TEST(caching_model, concurrent_callers_on_many_threads_stay_consistent) {
  counting_model inner;
  caching_options options;
  options.capacity = 8;
  caching_model cache(inner, options);
  constexpr int threads = 4, calls_per_thread = 200, keys = 12;
  std::vector<std::thread> workers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < calls_per_thread; ++i) {
        const std::string key = "k" + std::to_string((i * 7 + t) % keys);
        const auto text = run(cache.complete(user_request(key))).text;
        if (!text.ends_with(" to " + key)) ++wrong;
      }
    });
  }
  for (auto& worker : workers) worker.join();
  const auto stats = cache.statistics();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(stats.hits + stats.misses, std::uint64_t(threads * calls_per_thread));
  EXPECT_EQ(stats.misses, std::uint64_t(inner.calls.load()));
  EXPECT_LE(stats.entries, 8u);
}

}  // namespace
}  // namespace switchboard::models
