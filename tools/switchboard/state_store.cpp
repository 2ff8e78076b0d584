#include "state_store.hpp"

#include <sys/stat.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace switchboard::cli {

namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace orch = switchboard::orchestrator;

// Forwards to a store and kills the process after the Nth committed write:
// how the crash tests stop `run` and `resume` at every commit point.
class kill_after_writes final : public orch::forwarding_checkpoint_store {
 public:
  kill_after_writes(std::shared_ptr<orch::checkpoint_store> inner, long writes)
      : forwarding_checkpoint_store(std::move(inner)), remaining_(writes) {}

  asio::awaitable<void> create(orch::checkpoint cp, std::chrono::milliseconds lease) override {
    co_await inner().create(std::move(cp), lease);
    committed();
  }
  asio::awaitable<orch::checkpoint> claim(orch::claim_request request) override {
    auto claimed = co_await inner().claim(std::move(request));
    committed();
    co_return claimed;
  }
  asio::awaitable<void> save(orch::checkpoint cp) override {
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

std::filesystem::path state_directory() {
  fs::path dir;
  if (const char* state = std::getenv("SWITCHBOARD_STATE_DIR"); state && *state) {
    dir = state;
  } else if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) {
    dir = fs::path(xdg) / "switchboard";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = fs::path(home) / ".local" / "state" / "switchboard";
  } else {
    dir = fs::temp_directory_path() / "switchboard";
  }
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    // The runs hold users' requests: the directory is the user's alone.
    if (!ec) fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  if (ec) {
    throw std::runtime_error("cannot create the state directory '" + dir.string() + "': " + ec.message() +
                             " (set SWITCHBOARD_STATE_DIR or pass --store sqlite:PATH)");
  }
  return fs::absolute(dir);
}

std::string default_store_spec() { return "sqlite:" + (state_directory() / "workflows.db").string(); }

std::shared_ptr<orch::checkpoint_store> open_state_store(const std::string& spec) {
  auto store = orch::open_checkpoint_store(spec.empty() ? default_store_spec() : spec);
  if (const char* kill = std::getenv("SWITCHBOARD_FAULT_KILL_AFTER_WRITES"); kill && *kill) {
    const long writes = std::strtol(kill, nullptr, 10);
    if (writes > 0) store = std::make_shared<kill_after_writes>(std::move(store), writes);
  }
  return store;
}

}  // namespace switchboard::cli
