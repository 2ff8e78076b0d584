// The SQLite store's file: permissions, format and migration, space given
// back, and what opening refuses.
#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/stores/sqlite_store.hpp>

#include "sqlite_store_test_support.hpp"

#include <fstream>

namespace switchboard::orchestrator {
namespace {

using testing::claim_for;
using testing::claim_refusal;
using testing::ids_of;
using testing::in_status;
using testing::long_lease;
using testing::new_run;
using testing::next_step;
using testing::reason_name;
using testing::run_now;
using testing::scratch_directory;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

using testing::database_in;
using testing::expect_refused_naming;
using testing::permissions_of;
using testing::run_in_child_process;
using testing::start_child_process;
using testing::wait_for_child_process;
using testing::size_with_wal;
using testing::scoped_umask;
using testing::execute_sql;

// ---------------------------------------------------------------- file permissions

TEST(sqlite_checkpoint_store, a_new_database_is_private_whatever_the_umask) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  const scoped_umask umask(022);
  auto store = stores::make_sqlite_checkpoint_store(path);
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
  run_now(stores::make_sqlite_checkpoint_store(path)->create(new_run("wf"), long_lease));
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);

  auto store = stores::make_sqlite_checkpoint_store(path);
  EXPECT_EQ(permissions_of(path), 0600u);
  EXPECT_TRUE(run_now(store->load("wf")).has_value());

  // An empty file someone created ahead of us, too.
  const auto empty = dir.path() / "empty.db";
  std::ofstream{empty}.close();
  ASSERT_EQ(::chmod(empty.c_str(), 0666), 0);
  stores::make_sqlite_checkpoint_store(empty);
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
    auto store = stores::make_sqlite_checkpoint_store(path);
    const std::optional<checkpoint> paused = run_now(store->load("paused"));
    ASSERT_TRUE(paused.has_value());
    EXPECT_EQ(paused->workflow_name, "scheduling");
    EXPECT_EQ(paused->status, workflow_status::awaiting_clarification);
    EXPECT_EQ(paused->step, 4);
    EXPECT_EQ(paused->state_json, R"({"whole":"paused","question":"Which day?"})");
    EXPECT_TRUE(paused->journal.empty());
    EXPECT_EQ(paused->owner, "");
    EXPECT_EQ(paused->updated_at, system_time(std::chrono::seconds(1700000001)));
    // A run that was running under format 1 has no lease: it is interrupted.
    EXPECT_EQ(run_now(store->load("crashed"))->status, workflow_status::interrupted);
    EXPECT_EQ(ids_of(run_now(list_all(*store))), (std::vector<std::string>{"crashed", "paused"}));

    const checkpoint claimed = run_now(store->claim(claim_for("paused", "worker-b", workflow_status::awaiting_clarification, 4)));
    run_now(store->save(next_step(claimed, 5, workflow_status::completed, R"({"head":5})", {"answered"})));
  }
  auto reopened = stores::make_sqlite_checkpoint_store(path);  // format 2 now: opens without migrating again
  const std::optional<checkpoint> answered = run_now(reopened->load("paused"));
  ASSERT_TRUE(answered.has_value());
  EXPECT_EQ(answered->state_json, R"({"head":5})");
  EXPECT_EQ(answered->journal, std::vector<std::string>{"answered"});
  EXPECT_EQ(run_now(list_all(*reopened, in_status(workflow_status::interrupted))).size(), 1u);
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
      auto store = stores::make_sqlite_checkpoint_store(path);
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
  EXPECT_EQ(run_now(list_all(*stores::make_sqlite_checkpoint_store(path))).size(), std::size_t{process_count});
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
  EXPECT_EQ(run_now(list_all(*stores::make_sqlite_checkpoint_store(path))).size(), 2u);
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
  auto store = stores::make_sqlite_checkpoint_store(path);
  run_now(store->create(new_run("kept", "worker-a", "{}", {"small"}), long_lease));
  const save_request big = new_run("big");
  run_now(store->create(big, long_lease));
  const std::string record(100 * 1024, 'j');
  for (int step = 1; step <= 50; ++step) {  // a 5 MB journal
    run_now(store->save(next_step(big, step, step == 50 ? workflow_status::completed : workflow_status::running, "{}", {record})));
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
  run_now(stores::make_sqlite_checkpoint_store(path)->create(new_run("wf"), long_lease));
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
  EXPECT_THROW(stores::make_sqlite_checkpoint_store(""), checkpoint_error);
}

TEST(sqlite_checkpoint_store, errors_name_the_file) {
  scratch_directory dir;
  const auto path = dir.path() / "missing" / "x.db";
  try {
    stores::make_sqlite_checkpoint_store(path);
    FAIL() << "opened " << path;
  } catch (const checkpoint_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.string()));
  }
}

}  // namespace
}  // namespace switchboard::orchestrator
