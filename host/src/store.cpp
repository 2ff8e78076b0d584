// The store by URL and the state directory (see store.hpp).
#include <switchboard/host/store.hpp>

#include <switchboard/host/error.hpp>
#include <switchboard/stores/sqlite_store.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace switchboard::host {
namespace {

namespace fs = std::filesystem;
namespace orch = switchboard::orchestrator;

constexpr std::string_view sqlite_prefix = "sqlite:";

// The directory as it must be: a real directory (not a symlink) of this
// user's, 0700. One this user owns with looser modes is tightened; one of
// another user's is refused, since runs and plugins' state would be
// readable or planted there.
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

fs::path chosen_state_directory() {
  if (const char* state = std::getenv("SWITCHBOARD_STATE_DIR"); state && *state) return state;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) return fs::path(xdg) / "switchboard";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".local" / "state" / "switchboard";
  // A shared directory: one name per user, checked like any other.
  return fs::temp_directory_path() / ("switchboard-" + std::to_string(::geteuid()));
}

}  // namespace

store_url parse_store_url(std::string_view url) {
  if (url == "memory") return {store_url::backend::memory, {}};
  if (url.starts_with(sqlite_prefix)) {
    const std::string_view path = url.substr(sqlite_prefix.size());
    if (path.empty())
      throw host_error(host_errc::bad_store_url,
                       "checkpoint store '" + std::string(url) + "': missing path after 'sqlite:'");
    return {store_url::backend::sqlite, fs::path(std::string(path))};
  }
  throw host_error(host_errc::bad_store_url,
                   "unknown checkpoint store '" + std::string(url) + "': expected 'memory' or 'sqlite:PATH'");
}

std::string absolute_store_url(std::string_view url) {
  if (!url.starts_with(sqlite_prefix) || url.size() == sqlite_prefix.size()) return std::string(url);
  const fs::path path{std::string(url.substr(sqlite_prefix.size()))};
  return std::string(sqlite_prefix) + fs::absolute(path).lexically_normal().string();
}

fs::path state_directory() {
  const fs::path dir = fs::absolute(chosen_state_directory());
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

std::string default_store_url() { return std::string(sqlite_prefix) + (state_directory() / "workflows.db").string(); }

std::shared_ptr<orch::checkpoint_store> open_store(std::string_view url) {
  const std::string chosen = url.empty() ? default_store_url() : std::string(url);
  const store_url parsed = parse_store_url(chosen);
  switch (parsed.scheme) {
    case store_url::backend::memory: return orch::make_in_memory_checkpoint_store();
    // The one call of the SQLite backend: a new backend is a new scheme here.
    case store_url::backend::sqlite: return stores::make_sqlite_checkpoint_store(parsed.path);
  }
  throw host_error(host_errc::bad_store_url, "unknown checkpoint store '" + chosen + "'");
}

std::shared_ptr<orch::event_feed> open_event_feed(std::string_view url) {
  const std::string chosen = url.empty() ? default_store_url() : std::string(url);
  const store_url parsed = parse_store_url(chosen);
  switch (parsed.scheme) {
    case store_url::backend::memory: return orch::make_in_memory_event_feed();
    case store_url::backend::sqlite: return stores::make_sqlite_event_feed(parsed.path);
  }
  throw host_error(host_errc::bad_store_url, "unknown event feed '" + chosen + "'");
}

}  // namespace switchboard::host
