#include "state_store.hpp"
#include <switchboard/stores/sqlite_store.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

// The directory as it must be: a real directory (not a symlink) of this
// user's, 0700. One this user owns with looser modes is tightened; one of
// another user's is refused, since runs and calendars would be readable or
// planted there.
void check_private_directory(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    throw std::runtime_error("cannot use the state directory '" + dir.string() + "': " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    throw std::runtime_error("the state directory '" + dir.string() + "' is not a directory (a symbolic link?)");
  if (st.st_uid != ::geteuid())
    throw std::runtime_error("the state directory '" + dir.string() + "' belongs to another user (uid " +
                             std::to_string(st.st_uid) + "); set SWITCHBOARD_STATE_DIR to a directory of yours");
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0)
    throw std::runtime_error("cannot make the state directory '" + dir.string() + "' private: " + std::strerror(errno));
}

std::filesystem::path state_directory() {
  fs::path dir;
  if (const char* state = std::getenv("SWITCHBOARD_STATE_DIR"); state && *state) {
    dir = state;
  } else if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) {
    dir = fs::path(xdg) / "switchboard";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = fs::path(home) / ".local" / "state" / "switchboard";
  } else {
    // A shared directory: one name per user, checked like any other.
    dir = fs::temp_directory_path() / ("switchboard-" + std::to_string(::geteuid()));
  }
  dir = fs::absolute(dir);
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir.parent_path(), ec);
    // Created private from the start, not chmod'ed after a window.
    if (!ec && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) ec.assign(errno, std::generic_category());
    if (ec)
      throw std::runtime_error("cannot create the state directory '" + dir.string() + "': " + ec.message() +
                               " (set SWITCHBOARD_STATE_DIR or pass --store sqlite:PATH)");
  }
  check_private_directory(dir);
  return dir;
}

std::string default_store_spec() { return "sqlite:" + (state_directory() / "workflows.db").string(); }

std::shared_ptr<orch::checkpoint_store> open_state_store(const std::string& spec) {
  auto store = switchboard::stores::open_checkpoint_store(spec.empty() ? default_store_spec() : spec);
  if (const char* kill = std::getenv("SWITCHBOARD_FAULT_KILL_AFTER_WRITES"); kill && *kill) {
    const long writes = std::strtol(kill, nullptr, 10);
    if (writes > 0) store = std::make_shared<kill_after_writes>(std::move(store), writes);
  }
  return store;
}

}  // namespace switchboard::cli
