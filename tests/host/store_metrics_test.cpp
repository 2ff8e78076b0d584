// The store a server measures its writes with: every create, save and
// claim lands in switchboard.store.operation.duration under its operation,
// a refused one under its error.type too, and what the wrapped store
// answers or throws reaches the caller unchanged.
#include <switchboard/host/store_metrics.hpp>

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace switchboard::host {
namespace {

namespace asio = boost::asio;
using namespace orchestrator;
using namespace std::chrono_literals;

using orchestrator::testing::new_run;
using orchestrator::testing::run_now;

// A store whose saves take a while (as a database under load would).
class slow_saves final : public checkpoint_store {
 public:
  explicit slow_saves(std::shared_ptr<checkpoint_store> inner) : inner_(std::move(inner)) {}
  asio::awaitable<void> create(save_request run, std::chrono::milliseconds lease) override {
    return inner_->create(std::move(run), lease);
  }
  asio::awaitable<checkpoint> claim(claim_request request) override { return inner_->claim(std::move(request)); }
  asio::awaitable<void> save(save_request run) override {
    asio::steady_timer wait(co_await asio::this_coro::executor, 30ms);
    co_await wait.async_wait(asio::use_awaitable);
    co_await inner_->save(std::move(run));
  }
  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    return inner_->renew(std::move(owner), lease);
  }
  asio::awaitable<std::optional<checkpoint>> load(std::string id) override { return inner_->load(std::move(id)); }
  asio::awaitable<run_page> list(list_request request) override { return inner_->list(std::move(request)); }
  asio::awaitable<bool> erase(std::string id) override { return inner_->erase(std::move(id)); }
  asio::awaitable<std::size_t> prune(system_time before) override { return inner_->prune(before); }

 private:
  std::shared_ptr<checkpoint_store> inner_;
};

// The histogram's series with these attributes, in any order (count 0
// when absent).
telemetry::metric_point series_of(telemetry::meter& meter, telemetry::metric_attributes attributes) {
  std::ranges::sort(attributes);
  for (const auto& metric : meter.collect()) {
    if (metric.description.name != "switchboard.store.operation.duration") continue;
    EXPECT_EQ(metric.description.unit, "s");
    EXPECT_EQ(metric.bounds, store_duration_buckets());
    for (const auto& point : metric.points) {
      auto sorted = point.attributes;
      std::ranges::sort(sorted);
      if (sorted == attributes) return point;
    }
  }
  return {};
}

TEST(store_metrics, each_write_is_counted_under_its_operation_and_a_refusal_under_its_error_type) {
  auto meter = std::make_shared<telemetry::meter>();
  auto store = measured_store(make_in_memory_checkpoint_store(), meter);
  const auto run = new_run("r1");
  run_now(store->create(run, 60s));
  auto step = run;
  step.step = 1;
  step.journal = {"one"};
  run_now(store->save(step));
  step.step = 2;
  run_now(store->save(step));
  auto stale = step;
  stale.fence = 7;
  stale.step = 3;
  EXPECT_THROW(run_now(store->save(stale)), claim_error);

  EXPECT_EQ(series_of(*meter, {{"switchboard.store.operation", "create"}}).count, 1u);
  EXPECT_EQ(series_of(*meter, {{"switchboard.store.operation", "save"}}).count, 2u);
  EXPECT_EQ(series_of(*meter, {{"switchboard.store.operation", "save"}, {"error.type", "claim_refused"}}).count, 1u);
  // Reads pass through, unmeasured, with what the store holds.
  const auto loaded = run_now(store->load("r1"));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 2);
  EXPECT_EQ(loaded->journal, (std::vector<std::string>{"one", "one"}));
}

TEST(store_metrics, a_slow_save_is_measured_from_the_callers_side) {
  auto meter = std::make_shared<telemetry::meter>();
  auto store = measured_store(std::make_shared<slow_saves>(make_in_memory_checkpoint_store()), meter);
  auto run = new_run("r1");
  run_now(store->create(run, 60s));
  run.step = 1;
  run_now(store->save(run));
  const auto saved = series_of(*meter, {{"switchboard.store.operation", "save"}});
  EXPECT_EQ(saved.count, 1u);
  EXPECT_GE(saved.sum, 0.030);
  // Buckets: nothing at or below 25 ms (the 8th bound), the save above it.
  ASSERT_EQ(saved.bucket_counts.size(), store_duration_buckets().size() + 1);
  EXPECT_EQ(saved.bucket_counts[7], 0u);
}

}  // namespace
}  // namespace switchboard::host
