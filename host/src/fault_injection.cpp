#include <switchboard/host/fault_injection.hpp>

#include <csignal>

namespace switchboard::host {
namespace {

namespace asio = boost::asio;
namespace orch = switchboard::orchestrator;

// Forwards to a store and kills the process after the Nth committed write.
class kill_after_writes_store final : public orch::forwarding_checkpoint_store {
 public:
  kill_after_writes_store(std::shared_ptr<orch::checkpoint_store> inner, long writes)
      : forwarding_checkpoint_store(std::move(inner)), remaining_(writes) {}

  asio::awaitable<void> create(orch::save_request cp, std::chrono::milliseconds lease) override {
    co_await inner().create(std::move(cp), lease);
    committed();
  }
  asio::awaitable<orch::checkpoint> claim(orch::claim_request request) override {
    auto claimed = co_await inner().claim(std::move(request));
    committed();
    co_return claimed;
  }
  asio::awaitable<void> save(orch::save_request cp) override {
    co_await inner().save(std::move(cp));
    committed();
  }

 private:
  void committed() {
    if (--remaining_ == 0) std::raise(SIGKILL);
  }

  long remaining_;
};

}  // namespace

std::shared_ptr<orch::checkpoint_store> kill_after_writes(std::shared_ptr<orch::checkpoint_store> inner, long writes) {
  return std::make_shared<kill_after_writes_store>(std::move(inner), writes);
}

}  // namespace switchboard::host
