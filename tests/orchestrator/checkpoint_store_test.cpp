#include <switchboard/orchestrator/checkpoint_store.hpp>

#include "checkpoint_store_conformance.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

namespace switchboard::orchestrator {
namespace {

using testing::checkpoint_store_backend;
using testing::checkpoint_store_conformance;
using testing::make_checkpoint;
using testing::scratch_directory;
using ::testing::HasSubstr;

std::filesystem::path database_in(const std::filesystem::path& dir) { return dir / "checkpoints.db"; }

checkpoint_store_backend in_memory_backend() {
  return {"in_memory", [](const std::filesystem::path&) { return make_in_memory_checkpoint_store(); }};
}

checkpoint_store_backend sqlite_backend() {
  return {"sqlite",
          [](const std::filesystem::path& dir) { return make_sqlite_checkpoint_store(database_in(dir)); }};
}

INSTANTIATE_TEST_SUITE_P(stores, checkpoint_store_conformance,
                         ::testing::Values(in_memory_backend(), sqlite_backend()),
                         testing::checkpoint_store_backend_name);

// Runs `child` in a forked process and returns its wait status. The child
// opens its own connection (SQLite connections must not cross a fork) and
// reports through its exit code; _exit skips the parent's atexit handlers.
template <class Child>
int run_in_child_process(Child child) {
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    int code = 3;
    try {
      code = child();
    } catch (...) {
      code = 4;
    }
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

void expect_refused_naming(const std::filesystem::path& path, const std::string& reason) {
  try {
    make_sqlite_checkpoint_store(path);
    ADD_FAILURE() << "opened " << path;
  } catch (const checkpoint_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.string()));
    EXPECT_THAT(e.what(), HasSubstr(reason));
  }
}

TEST(sqlite_checkpoint_store, checkpoints_survive_reopening_the_file) {
  scratch_directory dir;
  {
    auto store = make_sqlite_checkpoint_store(database_in(dir.path()));
    store->save(make_checkpoint("first", 1, "awaiting_clarification", R"({"question":"Which Saturday?"})"));
    store->save(make_checkpoint("second", 2, "running"));
    store->save(make_checkpoint("first", 2, "awaiting_clarification", R"({"question":"Which Sunday?"})"));
  }
  auto reopened = make_sqlite_checkpoint_store(database_in(dir.path()));
  const std::optional<checkpoint> loaded = reopened->load("first");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 2);
  EXPECT_EQ(loaded->state_json, R"({"question":"Which Sunday?"})");
  EXPECT_EQ(reopened->list(), (std::vector<std::string>{"second", "first"}));
  // The stored step survives too: a stale writer after a restart is refused.
  EXPECT_THROW(reopened->save(make_checkpoint("first", 1)), checkpoint_error);
}

TEST(sqlite_checkpoint_store, a_second_process_reads_what_a_killed_process_wrote) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  const int status = run_in_child_process([&] {
    auto store = make_sqlite_checkpoint_store(path);
    store->save(make_checkpoint("paused", 4, "awaiting_clarification", R"({"question":"Which day?"})"));
    ::raise(SIGKILL);  // dies without closing the database
    return 0;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  auto store = make_sqlite_checkpoint_store(path);
  const std::optional<checkpoint> loaded = store->load("paused");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "awaiting_clarification");
  EXPECT_EQ(loaded->step, 4);
  EXPECT_EQ(loaded->state_json, R"({"question":"Which day?"})");
}

TEST(sqlite_checkpoint_store, a_second_process_sees_the_first_ones_writes_while_it_is_open) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  auto store = make_sqlite_checkpoint_store(path);
  store->save(make_checkpoint("from-parent", 9, "awaiting_clarification", R"({"who":"parent"})"));

  // 0: saw the parent's checkpoint and wrote its own; 1: did not see it.
  const int status = run_in_child_process([&] {
    auto child_store = make_sqlite_checkpoint_store(path);
    const std::optional<checkpoint> seen = child_store->load("from-parent");
    if (!seen || seen->step != 9 || seen->state_json != R"({"who":"parent"})") {
      return 1;
    }
    child_store->save(make_checkpoint("from-child", 1, "completed", R"({"who":"child"})"));
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);

  // The parent's open connection sees the child's commit.
  const std::optional<checkpoint> from_child = store->load("from-child");
  ASSERT_TRUE(from_child.has_value());
  EXPECT_EQ(from_child->state_json, R"({"who":"child"})");
  EXPECT_EQ(store->list(), (std::vector<std::string>{"from-parent", "from-child"}));
}

TEST(sqlite_checkpoint_store, two_processes_writing_at_once_lose_nothing) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  constexpr int saves = 100;
  auto write_many = [&](const std::string& prefix) {
    auto store = make_sqlite_checkpoint_store(path);
    for (int i = 0; i < saves; ++i) {
      store->save(make_checkpoint(prefix + std::to_string(i), 1));
    }
  };
  // The child starts before the parent writes, so their transactions interleave.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    try {
      write_many("child-");
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  write_many("parent-");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto store = make_sqlite_checkpoint_store(path);
  EXPECT_EQ(store->list().size(), std::size_t{2 * saves});
}

TEST(sqlite_checkpoint_store, a_file_that_is_not_a_database_is_refused_with_its_name) {
  scratch_directory dir;
  const auto path = dir.path() / "notes.txt";
  {
    std::ofstream out(path);
    for (int i = 0; i < 200; ++i) {
      out << "this is a text file, not an SQLite database\n";
    }
  }
  expect_refused_naming(path, "not a database");
}

TEST(sqlite_checkpoint_store, a_database_with_a_corrupt_header_is_refused_with_its_name) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  make_sqlite_checkpoint_store(path)->save(make_checkpoint("wf", 1));
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.write("garbage garbage!", 16);  // the 16-byte magic string
  }
  std::filesystem::remove(path.string() + "-wal");
  std::filesystem::remove(path.string() + "-shm");
  expect_refused_naming(path, "not a database");
}

TEST(sqlite_checkpoint_store, unwritable_paths_are_refused_with_their_name) {
  scratch_directory dir;
  expect_refused_naming(dir.path() / "no-such-directory" / "checkpoints.db", "cannot open");
  expect_refused_naming(dir.path(), "cannot open");  // a directory, not a file
  // /proc refuses new files even to root.
  expect_refused_naming("/proc/switchboard-checkpoints.db", "cannot open");
}

TEST(sqlite_checkpoint_store, empty_path_is_refused) {
  EXPECT_THROW(make_sqlite_checkpoint_store(""), checkpoint_error);
}

TEST(open_checkpoint_store, memory_opens_an_in_memory_store) {
  auto store = open_checkpoint_store("memory");
  ASSERT_NE(store, nullptr);
  store->save(make_checkpoint("wf", 1));
  EXPECT_TRUE(store->load("wf").has_value());
  // Each in-memory store is its own.
  EXPECT_FALSE(open_checkpoint_store("memory")->load("wf").has_value());
}

TEST(open_checkpoint_store, sqlite_spec_opens_the_file_it_names) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  open_checkpoint_store("sqlite:" + path.string())->save(make_checkpoint("wf", 2));
  EXPECT_TRUE(std::filesystem::exists(path));
  const std::optional<checkpoint> loaded = make_sqlite_checkpoint_store(path)->load("wf");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 2);
}

TEST(open_checkpoint_store, malformed_specs_are_refused_naming_the_spec) {
  for (const std::string spec : {"", "sqlite:", "sqlite", "postgres://localhost/db", "Memory"}) {
    try {
      open_checkpoint_store(spec);
      ADD_FAILURE() << "accepted '" << spec << "'";
    } catch (const checkpoint_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("'" + spec + "'"));
    }
  }
}

TEST(open_checkpoint_store, sqlite_errors_name_the_file) {
  scratch_directory dir;
  const auto path = dir.path() / "missing" / "x.db";
  try {
    open_checkpoint_store("sqlite:" + path.string());
    FAIL() << "opened " << path;
  } catch (const checkpoint_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.string()));
  }
}

}  // namespace
}  // namespace switchboard::orchestrator
