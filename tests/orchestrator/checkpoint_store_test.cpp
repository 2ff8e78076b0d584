#include <switchboard/orchestrator/checkpoint_store.hpp>

#include "checkpoint_store_conformance.hpp"

#include <sqlite3.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

namespace switchboard::orchestrator {
namespace {

using testing::checkpoint_store_backend;
using testing::checkpoint_store_conformance;
using testing::claim_for;
using testing::claim_refusal;
using testing::ids_of;
using testing::long_lease;
using testing::new_run;
using testing::next_step;
using testing::reason_name;
using testing::run_now;
using testing::scratch_directory;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

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

int wait_for_child_process(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return status;
}

template <class Child>
int run_in_child_process(Child child) {
  return wait_for_child_process(start_child_process(std::move(child)));
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

unsigned permissions_of(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw std::runtime_error("cannot stat " + path.string());
  }
  return info.st_mode & 07777;
}

std::uintmax_t size_with_wal(const std::filesystem::path& db) {
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
void execute_sql(const std::filesystem::path& path, const std::string& sql) {
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

// ---------------------------------------------------------------- durability

TEST(sqlite_checkpoint_store, checkpoints_survive_reopening_the_file) {
  scratch_directory dir;
  const checkpoint first = new_run("first", "worker-a", "{}", {"first created"});
  {
    auto store = make_sqlite_checkpoint_store(database_in(dir.path()));
    run_now(store->create(first, long_lease));
    run_now(store->create(new_run("second"), long_lease));
    run_now(store->save(next_step(first, 2, "awaiting_clarification", R"({"question":"Which Sunday?"})",
                                  {"first paused"})));
  }
  auto reopened = make_sqlite_checkpoint_store(database_in(dir.path()));
  const std::optional<checkpoint> loaded = run_now(reopened->load("first"));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 2);
  EXPECT_EQ(loaded->status, "awaiting_clarification");
  EXPECT_EQ(loaded->state_json, R"({"question":"Which Sunday?"})");
  EXPECT_EQ(loaded->journal, (std::vector<std::string>{"first created", "first paused"}));
  EXPECT_EQ(loaded->fence, 1);
  EXPECT_EQ(ids_of(run_now(reopened->list(""))), (std::vector<std::string>{"second", "first"}));
  EXPECT_EQ(run_now(reopened->load("second"))->owner, "worker-a");
  // Ownership survives too: the released owner's fence stays stale after a restart...
  EXPECT_EQ(reason_name(claim_refusal(reopened->save(next_step(first, 3, "running", "{}")))->why()), "stale_fence");
  // ...and the fence keeps counting from where it was.
  EXPECT_EQ(run_now(reopened->claim(claim_for("first", "worker-b", "awaiting_clarification", 2))).fence, 2);
}

TEST(sqlite_checkpoint_store, a_second_process_reads_what_a_killed_process_wrote) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  const int status = run_in_child_process([&] {
    auto store = make_sqlite_checkpoint_store(path);
    const checkpoint paused = new_run("paused", "child", "{}", {"created"});
    run_now(store->create(paused, long_lease));
    run_now(store->save(next_step(paused, 4, "awaiting_clarification", R"({"question":"Which day?"})", {"asked"})));
    run_now(store->create(new_run("working", "child", R"({"working":true})", {"started"}), long_lease));
    ::raise(SIGKILL);  // dies without closing the database or releasing "working"
    return 0;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  auto store = make_sqlite_checkpoint_store(path);
  const std::optional<checkpoint> loaded = run_now(store->load("paused"));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, "awaiting_clarification");
  EXPECT_EQ(loaded->step, 4);
  EXPECT_EQ(loaded->state_json, R"({"question":"Which day?"})");
  EXPECT_EQ(loaded->journal, (std::vector<std::string>{"created", "asked"}));

  // The killed process still holds a live lease on "working"; knowing it is
  // dead, this process takes it over at once.
  EXPECT_EQ(run_now(store->load("working"))->status, "running");
  claim_request takeover = claim_for("working", "parent", "interrupted", 0);
  takeover.dead_owner = "child";
  const checkpoint claimed = run_now(store->claim(takeover));
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(claimed.journal, std::vector<std::string>{"started"});
}

TEST(sqlite_checkpoint_store, a_second_process_sees_the_first_ones_writes_while_it_is_open) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  auto store = make_sqlite_checkpoint_store(path);
  const checkpoint parent_run = new_run("from-parent", "parent", "{}");
  run_now(store->create(parent_run, long_lease));
  run_now(store->save(next_step(parent_run, 9, "awaiting_clarification", R"({"who":"parent"})", {"parent"})));

  // 0: saw the parent's run, claimed it and wrote its own; 1: did not see it.
  const int status = run_in_child_process([&] {
    auto child_store = make_sqlite_checkpoint_store(path);
    const std::optional<checkpoint> seen = run_now(child_store->load("from-parent"));
    if (!seen || seen->step != 9 || seen->state_json != R"({"who":"parent"})") {
      return 1;
    }
    run_now(child_store->claim(claim_for("from-parent", "child", "awaiting_clarification", 9)));
    const checkpoint child_run = new_run("from-child", "child", "{}");
    run_now(child_store->create(child_run, long_lease));
    run_now(child_store->save(next_step(child_run, 1, "completed", R"({"who":"child"})", {"child"})));
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);

  // The parent's open connection sees the child's commits.
  const std::optional<checkpoint> from_child = run_now(store->load("from-child"));
  ASSERT_TRUE(from_child.has_value());
  EXPECT_EQ(from_child->state_json, R"({"who":"child"})");
  EXPECT_EQ(from_child->journal, std::vector<std::string>{"child"});
  EXPECT_EQ(run_now(store->load("from-parent"))->owner, "child");
  EXPECT_EQ(ids_of(run_now(store->list(""))), (std::vector<std::string>{"from-parent", "from-child"}));
}

TEST(sqlite_checkpoint_store, two_processes_writing_at_once_lose_nothing) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  constexpr int runs = 100;
  auto write_many = [&](const std::string& prefix) {
    auto store = make_sqlite_checkpoint_store(path);
    for (int i = 0; i < runs; ++i) {
      const checkpoint run = new_run(prefix + std::to_string(i), prefix, "{}", {"created"});
      run_now(store->create(run, long_lease));
      run_now(store->save(next_step(run, 1, "completed", "{}", {"done"})));
    }
    return 0;
  };
  // The child starts before the parent writes, so their transactions interleave.
  const pid_t child = start_child_process([&] { return write_many("child-"); });
  write_many("parent-");
  const int status = wait_for_child_process(child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto store = make_sqlite_checkpoint_store(path);
  EXPECT_EQ(run_now(store->list("completed")).size(), std::size_t{2 * runs});
  for (const std::string prefix : {"child-", "parent-"}) {
    for (int i = 0; i < runs; ++i) {
      const std::optional<checkpoint> loaded = run_now(store->load(prefix + std::to_string(i)));
      ASSERT_TRUE(loaded.has_value());
      EXPECT_EQ(loaded->journal, (std::vector<std::string>{"created", "done"}));
    }
  }
}

// Two processes race to claim the same paused run, round after round, each
// round started together: exactly one of them wins each round.
TEST(sqlite_checkpoint_store, two_processes_racing_claims_have_one_winner_per_round) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  constexpr int rounds = 50;
  auto round_id = [](int round) { return "round-" + std::to_string(round); };
  {
    auto store = make_sqlite_checkpoint_store(path);
    for (int round = 0; round < rounds; ++round) {
      const checkpoint run = new_run(round_id(round), "setup");
      run_now(store->create(run, long_lease));
      run_now(store->save(next_step(run, 1, "awaiting_clarification", "{}")));
    }
  }
  // A two-process barrier: each side writes a byte to the other and waits for one.
  int to_child[2];
  int to_parent[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  auto meet = [](int write_fd, int read_fd) {
    char byte = 'x';
    if (::write(write_fd, &byte, 1) != 1 || ::read(read_fd, &byte, 1) != 1) {
      throw std::runtime_error("barrier broken");
    }
  };
  // Returns true when `owner` won the round, false when it was refused the
  // way a loser must be; throws on anything else.
  auto contend = [&](checkpoint_store& store, int round, const std::string& owner) {
    try {
      run_now(store.claim(claim_for(round_id(round), owner, "awaiting_clarification", 1)));
      return true;
    } catch (const claim_error& e) {
      const std::string why = reason_name(e.why());
      if (why == "owned" || why == "wrong_status" || why == "step_changed") return false;
      throw;
    }
  };

  // The child's exit code is how many rounds it won (100 + n: it failed in round n).
  const pid_t child = start_child_process([&] {
    auto store = make_sqlite_checkpoint_store(path);
    int wins = 0;
    for (int round = 0; round < rounds; ++round) {
      try {
        meet(to_parent[1], to_child[0]);
        wins += contend(*store, round, "child") ? 1 : 0;
      } catch (...) {
        return 100 + round;
      }
    }
    return wins;
  });
  auto store = make_sqlite_checkpoint_store(path);
  std::vector<bool> parent_won;
  for (int round = 0; round < rounds; ++round) {
    meet(to_child[1], to_parent[0]);
    parent_won.push_back(contend(*store, round, "parent"));
  }
  const int status = wait_for_child_process(child);
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) ::close(fd);
  ASSERT_TRUE(WIFEXITED(status));
  const int child_wins = WEXITSTATUS(status);
  ASSERT_LE(child_wins, rounds) << "the child failed in round " << child_wins - 100;

  int rounds_won_by_child = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::optional<checkpoint> loaded = run_now(store->load(round_id(round)));
    ASSERT_TRUE(loaded.has_value());
    EXPECT_EQ(loaded->fence, 2) << "round " << round;  // exactly one claim took it
    EXPECT_EQ(loaded->owner, parent_won[round] ? "parent" : "child") << "round " << round;
    rounds_won_by_child += loaded->owner == "child" ? 1 : 0;
  }
  EXPECT_EQ(child_wins, rounds_won_by_child);
}

// A load sees a head and the journal of the same save, even while another
// process saves in between its reads.
TEST(sqlite_checkpoint_store, a_load_sees_one_save_while_another_process_saves) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  constexpr int saves = 300;
  const checkpoint run = new_run("busy", "child", "0", {"0"});
  run_now(make_sqlite_checkpoint_store(path)->create(run, long_lease));

  const pid_t child = start_child_process([&] {
    auto store = make_sqlite_checkpoint_store(path);
    for (int step = 1; step <= saves; ++step) {
      run_now(store->save(next_step(run, step, "running", std::to_string(step), {std::to_string(step)})));
    }
    return 0;
  });
  auto store = make_sqlite_checkpoint_store(path);
  int torn = 0;
  int loads = 0;
  std::int64_t seen = 0;
  int status = 0;
  // Loads until the child has exited, and once more after.
  for (bool exited = false; !exited; ++loads) {
    exited = ::waitpid(child, &status, WNOHANG) == child;
    const std::optional<checkpoint> loaded = run_now(store->load("busy"));
    ASSERT_TRUE(loaded.has_value());
    seen = loaded->step;
    if (loaded->state_json != std::to_string(seen) || loaded->journal.size() != static_cast<std::size_t>(seen) + 1 ||
        loaded->journal.back() != loaded->state_json) {
      ++torn;
    }
  }
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(seen, saves);
  EXPECT_EQ(torn, 0) << "of " << loads << " loads";
}

// ---------------------------------------------------------------- file permissions

TEST(sqlite_checkpoint_store, a_new_database_is_private_whatever_the_umask) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  const scoped_umask umask(022);
  auto store = make_sqlite_checkpoint_store(path);
  run_now(store->create(new_run("wf"), long_lease));  // the write-ahead log and its index exist now
  for (const std::string suffix : {"", "-wal", "-shm"}) {
    const std::filesystem::path file = path.string() + suffix;
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    EXPECT_EQ(permissions_of(file), 0600u) << file;
  }
}

TEST(sqlite_checkpoint_store, an_existing_world_readable_database_is_made_private) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  run_now(make_sqlite_checkpoint_store(path)->create(new_run("wf"), long_lease));
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);

  auto store = make_sqlite_checkpoint_store(path);
  EXPECT_EQ(permissions_of(path), 0600u);
  EXPECT_TRUE(run_now(store->load("wf")).has_value());

  // An empty file someone created ahead of us, too.
  const auto empty = dir.path() / "empty.db";
  std::ofstream{empty}.close();
  ASSERT_EQ(::chmod(empty.c_str(), 0666), 0);
  make_sqlite_checkpoint_store(empty);
  EXPECT_EQ(permissions_of(empty), 0600u);
}

TEST(sqlite_checkpoint_store, a_directory_given_as_the_path_keeps_its_permissions) {
  scratch_directory dir;
  const auto shared = dir.path() / "shared";
  std::filesystem::create_directory(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 0755), 0);
  expect_refused_naming(shared, "cannot open");
  EXPECT_EQ(permissions_of(shared), 0755u);
}

// ---------------------------------------------------------------- format

// Writes a database the way format 1 did: one row per run with its whole
// state, user_version 1.
void write_format_1_database(const std::filesystem::path& path) {
  execute_sql(path, R"sql(
    PRAGMA journal_mode=WAL;
    CREATE TABLE checkpoints (
      workflow_id   TEXT    PRIMARY KEY NOT NULL,
      workflow_name TEXT    NOT NULL,
      status        TEXT    NOT NULL,
      step          INTEGER NOT NULL,
      state_json    TEXT    NOT NULL,
      updated_at_ns INTEGER NOT NULL,
      save_seq      INTEGER NOT NULL
    );
    CREATE INDEX checkpoints_by_save_seq ON checkpoints (save_seq);
    CREATE INDEX checkpoints_by_status ON checkpoints (status, save_seq);
    INSERT INTO checkpoints VALUES ('crashed', 'scheduling', 'running', 2, '{"whole":"crashed"}',
                                    1700000000000000000, 2);
    INSERT INTO checkpoints VALUES ('paused', 'scheduling', 'awaiting_clarification', 4,
                                    '{"whole":"paused","question":"Which day?"}', 1700000001000000000, 1);
    PRAGMA user_version=1;
  )sql");
}

TEST(sqlite_checkpoint_store, a_format_1_database_is_migrated_on_open) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  write_format_1_database(path);

  {
    auto store = make_sqlite_checkpoint_store(path);
    const std::optional<checkpoint> paused = run_now(store->load("paused"));
    ASSERT_TRUE(paused.has_value());
    EXPECT_EQ(paused->workflow_name, "scheduling");
    EXPECT_EQ(paused->status, "awaiting_clarification");
    EXPECT_EQ(paused->step, 4);
    EXPECT_EQ(paused->state_json, R"({"whole":"paused","question":"Which day?"})");
    EXPECT_TRUE(paused->journal.empty());
    EXPECT_EQ(paused->owner, "");
    EXPECT_EQ(paused->updated_at, system_time(std::chrono::seconds(1700000001)));
    // A run that was running under format 1 has no lease: it is interrupted.
    EXPECT_EQ(run_now(store->load("crashed"))->status, "interrupted");
    EXPECT_EQ(ids_of(run_now(store->list(""))), (std::vector<std::string>{"paused", "crashed"}));

    const checkpoint claimed = run_now(store->claim(claim_for("paused", "worker-b", "awaiting_clarification", 4)));
    run_now(store->save(next_step(claimed, 5, "completed", R"({"head":5})", {"answered"})));
  }
  auto reopened = make_sqlite_checkpoint_store(path);  // format 2 now: opens without migrating again
  const std::optional<checkpoint> answered = run_now(reopened->load("paused"));
  ASSERT_TRUE(answered.has_value());
  EXPECT_EQ(answered->state_json, R"({"head":5})");
  EXPECT_EQ(answered->journal, std::vector<std::string>{"answered"});
  EXPECT_EQ(run_now(reopened->list("interrupted")).size(), 1u);
}

// Starts `process_count` processes together, each opening the store at
// `path` and running `check` on it (true: as expected); expects all of them
// to succeed.
template <class Check>
void expect_processes_opening_at_once_succeed(const std::filesystem::path& path, int process_count, Check check) {
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < process_count; ++i) {
    children.push_back(start_child_process([&] {
      ::close(start[1]);
      char byte = 0;
      (void)::read(start[0], &byte, 1);  // returns when the parent closes its end
      auto store = make_sqlite_checkpoint_store(path);
      return check(*store, i) ? 0 : 1;
    }));
  }
  ::close(start[0]);
  ::close(start[1]);  // go
  for (const pid_t child : children) {
    const int status = wait_for_child_process(child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a check failed, 3: opening or an operation threw";
  }
}

// Processes started together on a new file: one creates the tables, the
// others wait for it and open the result.
TEST(sqlite_checkpoint_store, processes_opening_a_new_database_at_once_all_open_it) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  constexpr int process_count = 4;
  expect_processes_opening_at_once_succeed(path, process_count, [](checkpoint_store& store, int i) {
    run_now(store.create(new_run("run-" + std::to_string(i)), long_lease));
    return true;
  });
  EXPECT_EQ(run_now(make_sqlite_checkpoint_store(path)->list("")).size(), std::size_t{process_count});
}

// Processes started together on a format 1 file (say, after an upgrade):
// one migrates it, the others open the migrated file.
TEST(sqlite_checkpoint_store, processes_opening_a_format_1_database_at_once_all_open_it) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  write_format_1_database(path);
  expect_processes_opening_at_once_succeed(path, 4, [](checkpoint_store& store, int) {
    const std::optional<checkpoint> paused = run_now(store.load("paused"));
    return paused && paused->step == 4 && paused->state_json == R"({"whole":"paused","question":"Which day?"})";
  });
  EXPECT_EQ(run_now(make_sqlite_checkpoint_store(path)->list("")).size(), 2u);
}

TEST(sqlite_checkpoint_store, a_database_of_a_newer_format_is_refused) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  execute_sql(path, "CREATE TABLE future (x); PRAGMA user_version=99;");
  expect_refused_naming(path, "newer Switchboard (format 99");
}

// ---------------------------------------------------------------- space

TEST(sqlite_checkpoint_store, prune_gives_the_space_back) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  auto store = make_sqlite_checkpoint_store(path);
  run_now(store->create(new_run("kept", "worker-a", "{}", {"small"}), long_lease));
  const checkpoint big = new_run("big");
  run_now(store->create(big, long_lease));
  const std::string record(100 * 1024, 'j');
  for (int step = 1; step <= 50; ++step) {  // a 5 MB journal
    run_now(store->save(next_step(big, step, step == 50 ? "completed" : "running", "{}", {record})));
  }
  const std::uintmax_t before = size_with_wal(path);
  ASSERT_GT(before, 5'000'000u);

  EXPECT_EQ(run_now(store->prune(std::chrono::system_clock::now() + 1min)), 1u);
  const std::uintmax_t after = size_with_wal(path);
  EXPECT_LT(after, before / 10) << "before " << before << " bytes, after " << after;
  EXPECT_FALSE(run_now(store->load("big")).has_value());
  EXPECT_EQ(run_now(store->load("kept"))->journal, std::vector<std::string>{"small"});
}

// ---------------------------------------------------------------- opening

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
  run_now(make_sqlite_checkpoint_store(path)->create(new_run("wf"), long_lease));
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
  run_now(store->create(new_run("wf"), long_lease));
  EXPECT_TRUE(run_now(store->load("wf")).has_value());
  // Each in-memory store is its own.
  EXPECT_FALSE(run_now(open_checkpoint_store("memory")->load("wf")).has_value());
}

TEST(open_checkpoint_store, sqlite_spec_opens_the_file_it_names) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  run_now(open_checkpoint_store("sqlite:" + path.string())->create(new_run("wf", "worker-a", R"({"v":2})"),
                                                                    long_lease));
  EXPECT_TRUE(std::filesystem::exists(path));
  const std::optional<checkpoint> loaded = run_now(make_sqlite_checkpoint_store(path)->load("wf"));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->state_json, R"({"v":2})");
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
