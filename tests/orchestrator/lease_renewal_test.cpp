// The hub's lease renewals (detail/lease_keeper): while runs hold leases,
// one timer renews them all a few times per lease. Runs that start and end
// around each other must not make it renew any sooner: a store's renew()
// walks its runs (the in-memory store every run it ever kept), and once per
// run that made `switchboard serve` quadratic in the runs it had served.
#include "hub_test_fixture.hpp"

#include <switchboard/orchestrator/checkpoint_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <thread>
#include <vector>

namespace switchboard::orchestrator::hub_testing {
namespace {

// The in-memory store, counting renew() calls.
class counting_store final : public checkpoint_store {
 public:
  asio::awaitable<void> create(save_request run, std::chrono::milliseconds lease) override {
    co_await inner_->create(std::move(run), lease);
  }
  asio::awaitable<checkpoint> claim(claim_request request) override {
    co_return co_await inner_->claim(std::move(request));
  }
  asio::awaitable<void> save(save_request run) override { co_await inner_->save(std::move(run)); }
  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    renewals.fetch_add(1);
    co_return co_await inner_->renew(std::move(owner), lease);
  }
  asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    co_return co_await inner_->load(std::move(workflow_id));
  }
  asio::awaitable<run_page> list(list_request request) override {
    co_return co_await inner_->list(std::move(request));
  }
  asio::awaitable<bool> erase(std::string workflow_id) override {
    co_return co_await inner_->erase(std::move(workflow_id));
  }
  asio::awaitable<std::size_t> prune(system_time finished_before) override {
    co_return co_await inner_->prune(finished_before);
  }

  std::atomic<int> renewals{0};

 private:
  std::shared_ptr<checkpoint_store> inner_ = make_in_memory_checkpoint_store();
};

workflow_builder one_step() {
  workflow_builder b{"leased"};
  b.entry("work");
  b.agent("work").otherwise("done");
  b.end("done");
  return b;
}

// Runs workflows one after another until `until`; counts the completed.
asio::awaitable<void> keep_running(hub& h, std::shared_ptr<const compiled_workflow> w,
                                   std::chrono::steady_clock::time_point until, int& completed) {
  while (std::chrono::steady_clock::now() < until) {
    run_options options;  // g++ 12: named, not a defaulted argument
    const auto state = co_await h.run(w, json::object{}, std::move(options));
    if (state.status == workflow_status::completed) ++completed;
  }
}

TEST_F(hub_test, runs_coming_and_going_do_not_make_the_leases_renew_sooner) {
  add(constant_agent("work"));
  auto store = std::make_shared<counting_store>();
  hub_options options;
  options.store = store;
  options.lease = 600ms;  // renewed every 200 ms while a run holds one
  make_hub(std::move(options));
  const auto workflow = one_step().compile(registry_);

  // Loops of short runs on two threads, as `switchboard serve` runs them,
  // so the count of runs holding a lease keeps falling to zero and rising
  // again, for 500 ms: two renewals are due.
  const auto until = std::chrono::steady_clock::now() + 500ms;
  std::vector<int> completed(8, 0);
  std::vector<std::future<void>> loops;
  for (auto& c : completed)
    loops.push_back(asio::co_spawn(io_, keep_running(*hub_, workflow, until, c), asio::use_future));
  io_.restart();
  std::thread second([this] { io_.run(); });
  io_.run();
  second.join();
  for (auto& l : loops) l.get();

  int runs = 0;
  for (int c : completed) runs += c;
  EXPECT_GT(runs, 30);
  EXPECT_LE(store->renewals.load(), 3);
}

TEST_F(hub_test, a_run_longer_than_its_lease_keeps_it_renewed) {
  add(constant_agent("work", {}, 0.9, 250ms));
  auto store = std::make_shared<counting_store>();
  hub_options options;
  options.store = store;
  options.lease = 90ms;  // renewed every 30 ms
  make_hub(std::move(options));

  const auto state = run(one_step());
  EXPECT_EQ(state.status, workflow_status::completed);
  EXPECT_GE(store->renewals.load(), 5);  // ≈ 8 in 250 ms
}

}  // namespace
}  // namespace switchboard::orchestrator::hub_testing
