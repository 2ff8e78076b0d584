// A checkpoint store that measures its writes (see store_metrics.hpp).
#include <switchboard/host/store_metrics.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <utility>

namespace switchboard::host {
namespace {

namespace asio = boost::asio;
using namespace orchestrator;

// What a failed write is called in error.type: a refusal by its reason,
// anything else by its kind.
std::string error_type_of(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const claim_error&) {
    return "claim_refused";
  } catch (const checkpoint_error&) {
    return "store_error";
  } catch (...) {
    return "_OTHER";
  }
}

class measured_checkpoint_store final : public checkpoint_store {
 public:
  measured_checkpoint_store(std::shared_ptr<checkpoint_store> store, const std::shared_ptr<telemetry::meter>& meter)
      : store_(std::move(store)),
        meter_(meter),
        duration_(meter_->histogram({"switchboard.store.operation.duration", "s",
                                     "How long each write of the checkpoint store took."},
                                    store_duration_buckets())),
        created_(bound("create")),
        claimed_(bound("claim")),
        saved_(bound("save")) {}

  asio::awaitable<void> create(save_request run, std::chrono::milliseconds lease) override {
    auto writing = store_->create(std::move(run), lease);  // g++ 12: named before co_await
    co_await measure("create", created_, std::move(writing));
  }
  asio::awaitable<checkpoint> claim(claim_request request) override {
    std::optional<checkpoint> claimed;
    auto claiming = [&]() -> asio::awaitable<void> { claimed = co_await store_->claim(std::move(request)); };
    co_await measure("claim", claimed_, claiming());
    co_return std::move(*claimed);
  }
  asio::awaitable<void> save(save_request run) override {
    auto writing = store_->save(std::move(run));
    co_await measure("save", saved_, std::move(writing));
  }
  asio::awaitable<std::size_t> renew(std::string owner, std::chrono::milliseconds lease) override {
    return store_->renew(std::move(owner), lease);
  }
  asio::awaitable<bool> release(std::string workflow_id, std::string owner, std::int64_t fence) override {
    return store_->release(std::move(workflow_id), std::move(owner), fence);
  }
  asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    return store_->load(std::move(workflow_id));
  }
  asio::awaitable<run_page> list(list_request request) override { return store_->list(std::move(request)); }
  asio::awaitable<bool> erase(std::string workflow_id) override { return store_->erase(std::move(workflow_id)); }
  asio::awaitable<std::size_t> prune(system_time finished_before) override {
    return store_->prune(finished_before);
  }

 private:
  // The series of a write that succeeded, bound once: recording it takes
  // no lock and builds no attributes.
  telemetry::bound_instrument bound(const char* operation) const {
    return duration_.bind({{"switchboard.store.operation", operation}});
  }

  asio::awaitable<void> measure(const char* operation, const telemetry::bound_instrument& succeeded,
                                asio::awaitable<void> write) {
    const auto started = std::chrono::steady_clock::now();
    std::exception_ptr failure;
    try {
      co_await std::move(write);
    } catch (...) {
      failure = std::current_exception();
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    if (!failure) {
      succeeded.record(took.count());
      co_return;
    }
    record_failure(operation, took.count(), failure);
    std::rethrow_exception(failure);
  }

  void record_failure(const char* operation, double seconds, const std::exception_ptr& failure) const noexcept {
    try {
      duration_.record(seconds, {{"switchboard.store.operation", operation}, {"error.type", error_type_of(failure)}});
    } catch (...) {
      // Out of memory for the attributes: this write goes unmeasured.
    }
  }

  std::shared_ptr<checkpoint_store> store_;
  std::shared_ptr<telemetry::meter> meter_;  // keeps the instrument alive
  telemetry::instrument duration_;
  telemetry::bound_instrument created_;
  telemetry::bound_instrument claimed_;
  telemetry::bound_instrument saved_;
};

}  // namespace

const std::vector<double>& store_duration_buckets() {
  static const std::vector<double> buckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                           0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  return buckets;
}

std::shared_ptr<checkpoint_store> measured_store(std::shared_ptr<checkpoint_store> store,
                                                 const std::shared_ptr<telemetry::meter>& meter) {
  return std::make_shared<measured_checkpoint_store>(std::move(store), meter);
}

}  // namespace switchboard::host
