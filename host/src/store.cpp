// The store by URL and the state directory (see store.hpp).
#include <switchboard/host/store.hpp>

#include <switchboard/host/error.hpp>
#include <switchboard/stores/postgres_store.hpp>
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

bool is_postgres_url(std::string_view url) {
  return url.starts_with("postgres://") || url.starts_with("postgresql://");
}

// The password of a postgres URL's user information ("user:password@"),
// dropped with its colon.
std::string without_userinfo_password(std::string url) {
  const auto start = url.find("://") + 3;
  const auto authority_end = url.find_first_of("/?", start);
  const auto at = url.rfind('@', authority_end == std::string::npos ? std::string::npos : authority_end);
  if (at == std::string::npos || at < start) return url;
  const auto colon = url.find(':', start);
  if (colon == std::string::npos || colon > at) return url;
  return url.erase(colon, at - colon);
}

// A password=... query parameter dropped, with its separator.
std::string without_password_parameter(std::string url) {
  const auto query = url.find('?');
  if (query == std::string::npos) return url;
  for (auto key = url.find("password=", query); key != std::string::npos; key = url.find("password=", key)) {
    const char before = url[key - 1];
    if (before != '?' && before != '&') {
      key += 9;
      continue;
    }
    const auto end = url.find('&', key);
    if (end == std::string::npos) {
      url.erase(key - 1);  // the last parameter: its '?' or '&' goes too
    } else {
      url.erase(key, end + 1 - key);
    }
  }
  return url;
}

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
  if (url == "memory") return {store_url::backend::memory, {}, {}};
  if (url.starts_with(sqlite_prefix)) {
    const std::string_view path = url.substr(sqlite_prefix.size());
    if (path.empty())
      throw host_error(host_errc::bad_store_url,
                       "checkpoint store '" + std::string(url) + "': missing path after 'sqlite:'");
    return {store_url::backend::sqlite, fs::path(std::string(path)), {}};
  }
  if (is_postgres_url(url)) return {store_url::backend::postgres, {}, std::string(url)};
  throw host_error(host_errc::bad_store_url, "unknown checkpoint store '" + printable_store_url(url) +
                                                 "': expected 'memory', 'sqlite:PATH' or 'postgresql://...'");
}

std::string printable_store_url(std::string_view url) {
  // Any URL with an authority may carry a password, a mistyped scheme too.
  if (url.find("://") == std::string_view::npos) return std::string(url);
  return without_password_parameter(without_userinfo_password(std::string(url)));
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
    // The one call of each backend: a new backend is a new scheme here.
    case store_url::backend::sqlite: return stores::make_sqlite_checkpoint_store(parsed.path);
    case store_url::backend::postgres: return stores::make_postgres_checkpoint_store(parsed.conninfo);
  }
  throw host_error(host_errc::bad_store_url, "unknown checkpoint store '" + printable_store_url(chosen) + "'");
}

std::shared_ptr<orch::event_feed> open_event_feed(std::string_view url) {
  const std::string chosen = url.empty() ? default_store_url() : std::string(url);
  const store_url parsed = parse_store_url(chosen);
  switch (parsed.scheme) {
    case store_url::backend::memory: return orch::make_in_memory_event_feed();
    case store_url::backend::sqlite: return stores::make_sqlite_event_feed(parsed.path);
    case store_url::backend::postgres: return stores::make_postgres_event_feed(parsed.conninfo);
  }
  throw host_error(host_errc::bad_store_url, "unknown event feed '" + printable_store_url(chosen) + "'");
}

std::shared_ptr<orch::run_queue> open_run_queue(std::string_view url) {
  const std::string chosen = url.empty() ? default_store_url() : std::string(url);
  const store_url parsed = parse_store_url(chosen);
  switch (parsed.scheme) {
    case store_url::backend::memory: return orch::make_in_memory_run_queue();
    case store_url::backend::sqlite: return stores::make_sqlite_run_queue(parsed.path);
    case store_url::backend::postgres: return stores::make_postgres_run_queue(parsed.conninfo);
  }
  throw host_error(host_errc::bad_store_url, "unknown run queue '" + printable_store_url(chosen) + "'");
}

bool is_shared_store(std::string_view url) {
  return !url.empty() && parse_store_url(url).scheme == store_url::backend::postgres;
}

}  // namespace switchboard::host
