#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/stores/sqlite_store.hpp>

#include <switchboard/testing/checkpoint_store_conformance.hpp>

#include "sqlite_store_test_support.hpp"

#include <fstream>

namespace switchboard::orchestrator {
namespace {

using testing::checkpoint_store_backend;
using testing::checkpoint_store_conformance;
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

checkpoint_store_backend in_memory_backend() {
  return {"in_memory", [](const std::filesystem::path&) { return make_in_memory_checkpoint_store(); },
          [](const std::filesystem::path&, store_clock clock) { return make_in_memory_run_queue(std::move(clock)); },
          [](const std::filesystem::path&, store_clock clock) { return make_in_memory_event_feed(std::move(clock)); },
          false};
}

checkpoint_store_backend sqlite_backend() {
  return {"sqlite",
          [](const std::filesystem::path& dir) { return stores::make_sqlite_checkpoint_store(database_in(dir)); },
          [](const std::filesystem::path& dir, store_clock clock) {
            return stores::make_sqlite_run_queue(database_in(dir), std::move(clock));
          },
          [](const std::filesystem::path& dir, store_clock clock) {
            return stores::make_sqlite_event_feed(database_in(dir), std::move(clock));
          }};
}

INSTANTIATE_TEST_SUITE_P(stores, checkpoint_store_conformance,
                         ::testing::Values(in_memory_backend(), sqlite_backend()),
                         testing::checkpoint_store_backend_name);

// ---------------------------------------------------------------- durability

TEST(sqlite_checkpoint_store, checkpoints_survive_reopening_the_file) {
  scratch_directory dir;
  const save_request first = new_run("first", "worker-a", "{}", {"first created"});
  {
    auto store = stores::make_sqlite_checkpoint_store(database_in(dir.path()));
    run_now(store->create(first, long_lease));
    run_now(store->create(new_run("second"), long_lease));
    run_now(store->save(next_step(first, 2, workflow_status::awaiting_clarification, R"({"question":"Which Sunday?"})",
                                  {"first paused"})));
  }
  auto reopened = stores::make_sqlite_checkpoint_store(database_in(dir.path()));
  const std::optional<checkpoint> loaded = run_now(reopened->load("first"));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 2);
  EXPECT_EQ(loaded->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(loaded->state_json, R"({"question":"Which Sunday?"})");
  EXPECT_EQ(loaded->journal, (std::vector<std::string>{"first created", "first paused"}));
  EXPECT_EQ(loaded->fence, 1);
  EXPECT_EQ(ids_of(run_now(list_all(*reopened))), (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(run_now(reopened->load("second"))->owner, "worker-a");
  // Ownership survives too: the released owner's fence stays stale after a restart...
  EXPECT_EQ(reason_name(claim_refusal(reopened->save(next_step(first, 3, workflow_status::running, "{}")))->why()), "stale_fence");
  // ...and the fence keeps counting from where it was.
  EXPECT_EQ(run_now(reopened->claim(claim_for("first", "worker-b", workflow_status::awaiting_clarification, 2))).fence, 2);
}

TEST(sqlite_checkpoint_store, a_second_process_reads_what_a_killed_process_wrote) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  const int status = run_in_child_process([&] {
    auto store = stores::make_sqlite_checkpoint_store(path);
    const save_request paused = new_run("paused", "child", "{}", {"created"});
    run_now(store->create(paused, long_lease));
    run_now(store->save(next_step(paused, 4, workflow_status::awaiting_clarification, R"({"question":"Which day?"})", {"asked"})));
    run_now(store->create(new_run("working", "child", R"({"working":true})", {"started"}), long_lease));
    ::raise(SIGKILL);  // dies without closing the database or releasing "working"
    return 0;
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  auto store = stores::make_sqlite_checkpoint_store(path);
  const std::optional<checkpoint> loaded = run_now(store->load("paused"));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(loaded->step, 4);
  EXPECT_EQ(loaded->state_json, R"({"question":"Which day?"})");
  EXPECT_EQ(loaded->journal, (std::vector<std::string>{"created", "asked"}));

  // The killed process still holds a live lease on "working"; knowing it is
  // dead, this process takes it over at once.
  EXPECT_EQ(run_now(store->load("working"))->status, workflow_status::running);
  claim_request takeover = claim_for("working", "parent", workflow_status::interrupted, 0);
  takeover.dead_owner = "child";
  const checkpoint claimed = run_now(store->claim(takeover));
  EXPECT_EQ(claimed.fence, 2);
  EXPECT_EQ(claimed.journal, std::vector<std::string>{"started"});
}

TEST(sqlite_checkpoint_store, a_second_process_sees_the_first_ones_writes_while_it_is_open) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  auto store = stores::make_sqlite_checkpoint_store(path);
  const save_request parent_run = new_run("from-parent", "parent", "{}");
  run_now(store->create(parent_run, long_lease));
  run_now(store->save(next_step(parent_run, 9, workflow_status::awaiting_clarification, R"({"who":"parent"})", {"parent"})));

  // 0: saw the parent's run, claimed it and wrote its own; 1: did not see it.
  const int status = run_in_child_process([&] {
    auto child_store = stores::make_sqlite_checkpoint_store(path);
    const std::optional<checkpoint> seen = run_now(child_store->load("from-parent"));
    if (!seen || seen->step != 9 || seen->state_json != R"({"who":"parent"})") {
      return 1;
    }
    run_now(child_store->claim(claim_for("from-parent", "child", workflow_status::awaiting_clarification, 9)));
    const save_request child_run = new_run("from-child", "child", "{}");
    run_now(child_store->create(child_run, long_lease));
    run_now(child_store->save(next_step(child_run, 1, workflow_status::completed, R"({"who":"child"})", {"child"})));
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
  EXPECT_EQ(ids_of(run_now(list_all(*store))), (std::vector<std::string>{"from-child", "from-parent"}));
}

TEST(sqlite_checkpoint_store, two_processes_writing_at_once_lose_nothing) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  constexpr int runs = 100;
  auto write_many = [&](const std::string& prefix) {
    auto store = stores::make_sqlite_checkpoint_store(path);
    for (int i = 0; i < runs; ++i) {
      const save_request run = new_run(prefix + std::to_string(i), prefix, "{}", {"created"});
      run_now(store->create(run, long_lease));
      run_now(store->save(next_step(run, 1, workflow_status::completed, "{}", {"done"})));
    }
    return 0;
  };
  // The child starts before the parent writes, so their transactions interleave.
  const pid_t child = start_child_process([&] { return write_many("child-"); });
  write_many("parent-");
  const int status = wait_for_child_process(child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto store = stores::make_sqlite_checkpoint_store(path);
  EXPECT_EQ(run_now(list_all(*store, in_status(workflow_status::completed))).size(), std::size_t{2 * runs});
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
    auto store = stores::make_sqlite_checkpoint_store(path);
    for (int round = 0; round < rounds; ++round) {
      const save_request run = new_run(round_id(round), "setup");
      run_now(store->create(run, long_lease));
      run_now(store->save(next_step(run, 1, workflow_status::awaiting_clarification, "{}")));
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
      run_now(store.claim(claim_for(round_id(round), owner, workflow_status::awaiting_clarification, 1)));
      return true;
    } catch (const claim_error& e) {
      const std::string why = reason_name(e.why());
      if (why == "owned" || why == "wrong_status" || why == "step_changed") return false;
      throw;
    }
  };

  // The child's exit code is how many rounds it won (100 + n: it failed in round n).
  const pid_t child = start_child_process([&] {
    auto store = stores::make_sqlite_checkpoint_store(path);
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
  auto store = stores::make_sqlite_checkpoint_store(path);
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
  const save_request run = new_run("busy", "child", "0", {"0"});
  run_now(stores::make_sqlite_checkpoint_store(path)->create(run, long_lease));

  const pid_t child = start_child_process([&] {
    auto store = stores::make_sqlite_checkpoint_store(path);
    for (int step = 1; step <= saves; ++step) {
      run_now(store->save(next_step(run, step, workflow_status::running, std::to_string(step), {std::to_string(step)})));
    }
    return 0;
  });
  auto store = stores::make_sqlite_checkpoint_store(path);
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

// ---------------------------------------------------------------- shutdown order

// A waiter still asleep when its feed is destroyed, and whose io_context
// goes after the feed (a server's shutdown order: the io_context is
// declared first), is destroyed with that io_context without touching the
// feed that is gone (the sanitizer build catches a use after free).
TEST(event_feed_wait, a_waiter_asleep_when_its_feed_goes_is_destroyed_with_its_io_context) {
  boost::asio::io_context io;
  auto feed = make_in_memory_event_feed();
  bool returned = false;
  boost::asio::co_spawn(io, feed->wait("wf", 0, 0, std::chrono::hours(1)),
                        [&returned](std::exception_ptr, std::vector<feed_event>) { returned = true; });
  io.run_for(20ms);  // the in-memory feed reads at once: the waiter is asleep
  EXPECT_FALSE(returned);
  feed.reset();
}  // `io` goes here, and the waiter's frames with it

}  // namespace
}  // namespace switchboard::orchestrator
