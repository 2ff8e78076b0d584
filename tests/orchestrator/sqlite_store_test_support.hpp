// Helpers of the SQLite store's tests (checkpoint_store_test.cpp,
// sqlite_store_file_test.cpp): child processes with their own connection,
// file permissions and sizes, raw SQL on a database file.
#pragma once

#include <switchboard/stores/sqlite_store.hpp>
#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

#include <sqlite3.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace switchboard::orchestrator::testing {

inline std::filesystem::path database_in(const std::filesystem::path& dir) { return dir / "checkpoints.db"; }

// Forks; the child runs `child` and exits with the int it returns (3 when
// it throws a std::exception, 4 for anything else). The child opens its own
// connection (SQLite connections must not cross a fork); _exit skips the
// parent's atexit handlers.
template <class Child>
pid_t start_child_process(Child child) {
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    int code = 3;
    try {
      code = child();
    } catch (const std::exception&) {
      code = 3;
    } catch (...) {
      code = 4;
    }
    ::_exit(code);
  }
  return pid;
}

inline int wait_for_child_process(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

template <class Child>
int run_in_child_process(Child child) {
  return wait_for_child_process(start_child_process(std::move(child)));
}

inline void expect_refused_naming(const std::filesystem::path& path, const std::string& reason) {
  try {
    stores::make_sqlite_checkpoint_store(path);
    ADD_FAILURE() << "opened " << path;
  } catch (const checkpoint_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(path.string()));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(reason));
  }
}

inline unsigned permissions_of(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw std::runtime_error("cannot stat " + path.string());
  }
  return info.st_mode & 07777;
}

inline std::uintmax_t size_with_wal(const std::filesystem::path& db) {
  std::error_code ignored;
  const auto wal = std::filesystem::file_size(db.string() + "-wal", ignored);
  return std::filesystem::file_size(db) + (wal == static_cast<std::uintmax_t>(-1) ? 0 : wal);
}

// Sets the process umask for its lifetime.
class scoped_umask {
 public:
  explicit scoped_umask(mode_t mask) : previous_(::umask(mask)) {}
  ~scoped_umask() { ::umask(previous_); }
  scoped_umask(const scoped_umask&) = delete;
  scoped_umask& operator=(const scoped_umask&) = delete;

 private:
  mode_t previous_;
};

// Runs SQL on a database file directly, without the store.
inline void execute_sql(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    const std::string message = sqlite3_errmsg(db);
    sqlite3_close(db);
    throw std::runtime_error("cannot open " + path.string() + ": " + message);
  }
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  if (rc != SQLITE_OK) {
    throw std::runtime_error("SQL failed: " + message);
  }
}

}  // namespace switchboard::orchestrator::testing
