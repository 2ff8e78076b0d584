// Group commit in the SQLite checkpoint store and event feed: the writes
// ready at the same moment share one transaction, and each caller still
// gets its own outcome.
//
// To have many writes ready at once without relying on timing, a second
// connection holds the database's write lock while the test starts the
// writes: the store's thread waits on the lock (busy timeout), the writes
// queue behind it, and they are all ready when the lock is released.
#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/event_feed.hpp>
#include <switchboard/stores/sqlite_store.hpp>

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

#include "sqlite_store_test_support.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <string>
#include <vector>

namespace switchboard::orchestrator {
namespace {

using testing::claim_for;
using testing::database_in;
using testing::execute_sql;
using testing::long_lease;
using testing::new_run;
using testing::next_step;
using testing::run_now;
using testing::scratch_directory;
using ::testing::HasSubstr;

constexpr int run_count = 16;

std::string run_id(int i) { return "run-" + std::to_string(i); }

// A second connection to the file holding the write lock until release().
class write_lock {
 public:
  explicit write_lock(const std::filesystem::path& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot open " + path.string());
    exec("BEGIN IMMEDIATE");
  }
  ~write_lock() {
    if (held_) exec("ROLLBACK");
    sqlite3_close(db_);
  }
  void release() {
    exec("COMMIT");
    held_ = false;
  }

 private:
  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string(sql) + ": " + sqlite3_errmsg(db_));
    }
  }
  sqlite3* db_ = nullptr;
  bool held_ = true;
};

// Starts every request's save at once, while `lock` holds the database,
// and returns each one's outcome (null: saved) in the requests' order.
std::vector<std::exception_ptr> save_all_at_once(checkpoint_store& store, const std::vector<save_request>& requests,
                                                 write_lock& lock) {
  boost::asio::io_context io;
  std::vector<std::exception_ptr> outcomes(requests.size());
  std::size_t finished = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    boost::asio::co_spawn(io, store.save(requests[i]), [&, i](std::exception_ptr error) {
      outcomes[i] = error;
      ++finished;
    });
  }
  io.poll();  // every save is now waiting for the store's thread
  lock.release();
  io.run();
  EXPECT_EQ(finished, requests.size());
  return outcomes;
}

class sqlite_group_commit : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < run_count; ++i) run_now(store->create(new_run(run_id(i)), long_lease));
  }

  stores::sqlite_write_counts counts() const { return *stores::write_counts_of(*store); }

  // Every run's next step: step 1, a new head and one journal record.
  std::vector<save_request> next_steps() const {
    std::vector<save_request> requests;
    for (int i = 0; i < run_count; ++i) {
      requests.push_back(next_step(new_run(run_id(i)), 1, workflow_status::running, R"({"step":1})",
                                   {"step 1 of " + run_id(i)}));
    }
    return requests;
  }

  scratch_directory dir;
  std::filesystem::path path = database_in(dir.path());
  std::shared_ptr<checkpoint_store> store = stores::make_sqlite_checkpoint_store(path);
};

TEST_F(sqlite_group_commit, saves_of_many_runs_ready_together_share_transactions) {
  const auto before = counts();
  EXPECT_EQ(before.writes, std::uint64_t(run_count));  // the creates
  write_lock lock(path);
  const auto outcomes = save_all_at_once(*store, next_steps(), lock);

  for (int i = 0; i < run_count; ++i) {
    EXPECT_FALSE(outcomes[i]) << run_id(i) << " was refused";
    const auto loaded = run_now(store->load(run_id(i)));
    ASSERT_TRUE(loaded.has_value());
    EXPECT_EQ(loaded->step, 1);
    EXPECT_EQ(loaded->journal, std::vector<std::string>{"step 1 of " + run_id(i)});
  }
  const auto after = counts();
  EXPECT_EQ(after.writes - before.writes, std::uint64_t(run_count));
  // The first save may have been taken alone before the lock was seen;
  // the rest were all waiting and commit together.
  EXPECT_LE(after.transactions - before.transactions, 2u);
}

TEST_F(sqlite_group_commit, a_stale_fence_in_a_batch_is_refused_alone) {
  // run-7 was paused, then claimed by worker-b: worker-a's fence 1 is stale.
  constexpr int stale = 7;
  run_now(store->save(next_step(new_run(run_id(stale)), 1, workflow_status::awaiting_clarification, "{}")));
  run_now(store->claim(claim_for(run_id(stale), "worker-b")));
  auto requests = next_steps();
  requests[stale].step = 2;
  const auto before = counts();

  write_lock lock(path);
  const auto outcomes = save_all_at_once(*store, requests, lock);

  for (int i = 0; i < run_count; ++i) {
    const auto loaded = run_now(store->load(run_id(i)));
    ASSERT_TRUE(loaded.has_value());
    if (i == stale) {
      ASSERT_TRUE(outcomes[i]);
      try {
        std::rethrow_exception(outcomes[i]);
      } catch (const claim_error& e) {
        EXPECT_EQ(e.why(), claim_error::reason::stale_fence) << e.what();
      }
      EXPECT_EQ(loaded->owner, "worker-b");  // the new owner's run, untouched
      EXPECT_EQ(loaded->step, 1);
      EXPECT_EQ(loaded->fence, 2);
      continue;
    }
    EXPECT_FALSE(outcomes[i]) << run_id(i) << " was refused with its batch";
    EXPECT_EQ(loaded->step, 1);
    EXPECT_EQ(loaded->journal, std::vector<std::string>{"step 1 of " + run_id(i)});
  }
  EXPECT_LE(counts().transactions - before.transactions, 2u);
}

// A write that fails after changing rows (here a trigger refusing one
// journal record after the run's row was updated) cannot be taken out of
// the batch's transaction alone: the batch is rolled back and every save is
// retried in a transaction of its own, so only the failing one fails.
TEST_F(sqlite_group_commit, a_write_failing_midway_fails_alone_and_the_others_land) {
  execute_sql(path,
              "CREATE TRIGGER refuse_poison BEFORE INSERT ON journal WHEN NEW.record = 'poison' "
              "BEGIN SELECT RAISE(ABORT, 'poisoned record'); END;");
  constexpr int poisoned = 5;
  auto requests = next_steps();
  requests[poisoned].journal = {"poison"};

  write_lock lock(path);
  const auto outcomes = save_all_at_once(*store, requests, lock);

  for (int i = 0; i < run_count; ++i) {
    const auto loaded = run_now(store->load(run_id(i)));
    ASSERT_TRUE(loaded.has_value());
    if (i == poisoned) {
      ASSERT_TRUE(outcomes[i]);
      try {
        std::rethrow_exception(outcomes[i]);
      } catch (const checkpoint_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("poisoned record"));
      }
      EXPECT_EQ(loaded->step, 0);  // neither its row nor its record stayed
      EXPECT_TRUE(loaded->journal.empty());
      continue;
    }
    EXPECT_FALSE(outcomes[i]) << run_id(i) << " failed with its batch";
    EXPECT_EQ(loaded->step, 1);
    EXPECT_EQ(loaded->journal, std::vector<std::string>{"step 1 of " + run_id(i)});
  }
}

TEST(sqlite_event_feed_group_commit, appends_of_many_runs_ready_together_share_transactions) {
  scratch_directory dir;
  const auto path = database_in(dir.path());
  auto feed = stores::make_sqlite_event_feed(path);
  run_now(feed->append(run_id(0), "first"));  // run-0 already has position 1
  const auto before = *stores::write_counts_of(*feed);

  write_lock lock(path);
  boost::asio::io_context io;
  std::vector<std::int64_t> last_positions(run_count, -1);
  for (int i = 0; i < run_count; ++i) {
    auto append = feed->append_all(run_id(i), {"a of " + run_id(i), "b of " + run_id(i)});
    boost::asio::co_spawn(io, std::move(append), [&, i](std::exception_ptr error, std::int64_t last) {
      EXPECT_FALSE(error) << run_id(i);
      last_positions[i] = last;
    });
  }
  io.poll();
  lock.release();
  io.run();

  for (int i = 0; i < run_count; ++i) {
    const std::int64_t offset = i == 0 ? 1 : 0;
    EXPECT_EQ(last_positions[i], offset + 2) << run_id(i);
    const auto events = run_now(feed->read(run_id(i), offset, 0));
    ASSERT_EQ(events.size(), 2u) << run_id(i);
    EXPECT_EQ(events[0].event, "a of " + run_id(i));
    EXPECT_EQ(events[1].position, offset + 2);
  }
  const auto after = *stores::write_counts_of(*feed);
  EXPECT_EQ(after.writes - before.writes, std::uint64_t(run_count));
  EXPECT_LE(after.transactions - before.transactions, 2u);
}

TEST(sqlite_write_counts, only_an_sqlite_store_or_feed_has_them) {
  EXPECT_FALSE(stores::write_counts_of(*make_in_memory_checkpoint_store()).has_value());
  EXPECT_FALSE(stores::write_counts_of(*make_in_memory_event_feed()).has_value());
}

}  // namespace
}  // namespace switchboard::orchestrator
