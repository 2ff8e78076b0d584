#include <switchboard/stores/postgres_store.hpp>

#include <switchboard/testing/checkpoint_store_conformance.hpp>

#include "postgres_test_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <latch>
#include <map>
#include <mutex>
#include <thread>

namespace switchboard::orchestrator {
namespace {

using stores::testing::exec_sql;
using stores::testing::server_url;
using stores::testing::url_for;
using stores::testing::url_with_schema;
using testing::checkpoint_store_backend;
using testing::checkpoint_store_conformance;
using testing::long_lease;
using testing::new_run;
using testing::next_step;
using testing::run_now;
using testing::scratch_directory;
using ::testing::HasSubstr;

// Each test's scratch directory names a schema of its own in the tests'
// database; opening again with the same directory reaches the same tables.
checkpoint_store_backend postgres_backend() {
  return {"postgres",
          [](const std::filesystem::path& dir) { return stores::make_postgres_checkpoint_store(url_for(dir)); },
          [](const std::filesystem::path& dir, store_clock clock) {
            return stores::make_postgres_run_queue(url_for(dir), std::move(clock));
          },
          [](const std::filesystem::path& dir, store_clock clock) {
            return stores::make_postgres_event_feed(url_for(dir), std::move(clock));
          }};
}

INSTANTIATE_TEST_SUITE_P(stores, checkpoint_store_conformance, ::testing::Values(postgres_backend()),
                         testing::checkpoint_store_backend_name);

// ---------------------------------------------------------------- durability and schema

TEST(postgres_store, runs_survive_reopening_and_are_shared_by_every_object) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  const save_request run = new_run("shared", "worker-a", "{}", {"created"});
  {
    auto store = stores::make_postgres_checkpoint_store(url);
    run_now(store->create(run, long_lease));
  }
  auto first = stores::make_postgres_checkpoint_store(url);
  auto second = stores::make_postgres_checkpoint_store(url);
  run_now(first->save(next_step(run, 1, workflow_status::awaiting_clarification, R"({"q":"?"})", {"asked"})));
  const auto seen = run_now(second->load("shared"));
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->step, 1);
  EXPECT_EQ(seen->journal, (std::vector<std::string>{"created", "asked"}));
}

TEST(postgres_store, processes_opening_an_empty_database_at_once_all_come_up) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  constexpr int openers = 6;
  std::latch start(openers);
  std::vector<std::string> errors(openers);
  std::vector<std::thread> threads;
  for (int i = 0; i < openers; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      try {
        auto store = stores::make_postgres_checkpoint_store(url);
        run_now(store->create(new_run("run-" + std::to_string(i)), long_lease));
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < openers; ++i) EXPECT_EQ(errors[i], "") << "opener " << i;
  EXPECT_EQ(exec_sql(url, "SELECT count(*) FROM switchboard_schema_version"), "2") << "each version applied once";
  EXPECT_EQ(exec_sql(url, "SELECT count(*) FROM switchboard_runs"), std::to_string(openers));
}

// Store objects of their own stand for hubs in other processes: separate
// pools, separate sessions, one row. Exactly one claim wins, the others are
// refused as owned, and the loser's stale fence can no longer save.
TEST(postgres_store, claims_racing_from_separate_stores_have_one_winner) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  auto creator = stores::make_postgres_checkpoint_store(url);
  const save_request run = new_run("contested", "worker-a", "{}", {"created"});
  run_now(creator->create(run, long_lease));
  run_now(creator->save(next_step(run, 3, workflow_status::awaiting_clarification, "{}", {"asked"})));

  constexpr int hubs = 6;
  std::vector<std::shared_ptr<checkpoint_store>> stores_of_hubs;
  for (int i = 0; i < hubs; ++i) stores_of_hubs.push_back(stores::make_postgres_checkpoint_store(url));
  std::latch start(hubs);
  std::vector<std::optional<checkpoint>> won(hubs);
  std::vector<std::string> refused(hubs);
  std::vector<std::thread> threads;
  for (int i = 0; i < hubs; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      try {
        won[i] = run_now(stores_of_hubs[i]->claim(
            testing::claim_for("contested", "hub-" + std::to_string(i), workflow_status::awaiting_clarification, 3)));
      } catch (const claim_error& e) {
        refused[i] = testing::reason_name(e.why());
      } catch (const std::exception& e) {
        refused[i] = std::string("unexpected: ") + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  int winners = 0;
  int winner = -1;
  for (int i = 0; i < hubs; ++i) {
    if (won[i]) {
      ++winners;
      winner = i;
    } else {
      EXPECT_EQ(refused[i], "owned") << "hub " << i;
    }
  }
  ASSERT_EQ(winners, 1);
  EXPECT_EQ(won[winner]->fence, 2);
  EXPECT_EQ(won[winner]->journal, (std::vector<std::string>{"created", "asked"}));
  // The first owner's fence is stale now, from any store.
  EXPECT_EQ(testing::reason_name(
                testing::claim_refusal(creator->save(next_step(run, 4, workflow_status::running, "{}")))->why()),
            "stale_fence");
  run_now(stores_of_hubs[winner]->save(next_step(*won[winner], 4, workflow_status::completed, "{}", {"done"})));
  EXPECT_EQ(run_now(creator->load("contested"))->journal, (std::vector<std::string>{"created", "asked", "done"}));
}

TEST(postgres_store, a_database_of_a_newer_schema_is_refused) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  stores::make_postgres_checkpoint_store(url);
  exec_sql(url, "INSERT INTO switchboard_schema_version (version) VALUES (99)");
  try {
    stores::make_postgres_checkpoint_store(url);
    ADD_FAILURE() << "opened a database of schema version 99";
  } catch (const checkpoint_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("schema version 99"));
  }
}

// A database of version 1 numbered claims from the queue's row; version 2
// from one sequence, which starts above every fence already queued.
TEST(postgres_store, a_version_1_database_is_migrated_and_its_claims_keep_counting_up) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  {
    auto queue = stores::make_postgres_run_queue(url);
    run_now(queue->enqueue(testing::queued("thread")));
  }
  exec_sql(url, "DROP SEQUENCE switchboard_claim_fence_seq");
  exec_sql(url, "DELETE FROM switchboard_schema_version WHERE version = 2");
  exec_sql(url, "UPDATE switchboard_queue SET fence = 41");  // claimed 41 times under version 1

  auto queue = stores::make_postgres_run_queue(url);
  const auto claimed = run_now(queue->claim_next("worker-a", long_lease));
  ASSERT_TRUE(claimed.has_value());
  EXPECT_GT(claimed->fence, 41) << "a fence the run had before";
  EXPECT_EQ(exec_sql(url, "SELECT max(version) FROM switchboard_schema_version"), "2");
}

TEST(postgres_store, texts_round_trip_byte_for_byte) {
  scratch_directory dir;
  auto store = stores::make_postgres_checkpoint_store(url_for(dir.path()));
  const std::vector<std::string> journal{R"({"quote":"\"","backslash":"\\"})", "{}", "", "ünïcødé ✓", "a,b}{c"};
  run_now(store->create(new_run("texts", "worker-a", R"({"head":"\\\""})", journal), long_lease));
  const auto loaded = run_now(store->load("texts"));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->journal, journal);
  EXPECT_EQ(loaded->state_json, R"({"head":"\\\""})");
}

TEST(postgres_store, a_text_postgresql_cannot_hold_is_refused_with_a_clear_error) {
  scratch_directory dir;
  auto store = stores::make_postgres_checkpoint_store(url_for(dir.path()));
  const std::string with_nul("{\"a\":\"\0\"}", 9);
  EXPECT_THAT(testing::refusal_message(store->create(new_run("nul", "worker-a", with_nul), long_lease)),
              HasSubstr("NUL byte"));
  // The connection is still good for the next operation.
  run_now(store->create(new_run("fine"), long_lease));
}

TEST(postgres_store, the_schema_follows_the_connections_search_path) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  run_now(stores::make_postgres_checkpoint_store(url)->create(new_run("here"), long_lease));
  scratch_directory other;
  const auto elsewhere = url_for(other.path());
  EXPECT_FALSE(run_now(stores::make_postgres_checkpoint_store(elsewhere)->load("here")).has_value());
}


// ---------------------------------------------------------------- group commit of appends

// Appends from many coroutines at once (several runs, one run shared by
// all of them) are written together: every run's positions are 1..N with
// no gap or repeat, each append's events are contiguous and in its order,
// and each append answers the position of its last event. Two feed objects
// (two processes) append beside each other.
TEST(postgres_store, concurrent_appends_written_together_keep_every_runs_order) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  const std::vector<std::shared_ptr<event_feed>> feeds{stores::make_postgres_event_feed(url),
                                                       stores::make_postgres_event_feed(url)};
  constexpr int appenders = 24;
  constexpr int appends_each = 6;
  boost::asio::io_context io;
  std::map<std::string, std::vector<std::pair<std::int64_t, std::vector<std::string>>>> answered;  // run -> appends
  std::mutex answered_mutex;
  for (int a = 0; a < appenders; ++a) {
    boost::asio::co_spawn(io, [&, a]() -> boost::asio::awaitable<void> {
      auto& feed = *feeds[static_cast<std::size_t>(a % 2)];
      for (int i = 0; i < appends_each; ++i) {
        const std::string run = (i % 2 == 0) ? "shared" : "run-" + std::to_string(a % 5);
        std::vector<std::string> events;
        for (int e = 0; e <= (a + i) % 3; ++e)
          events.push_back(std::to_string(a) + "/" + std::to_string(i) + "/" + std::to_string(e));
        const auto copy = events;
        const auto position = co_await feed.append_all(run, std::move(events));
        std::scoped_lock lock(answered_mutex);
        answered[run].emplace_back(position, copy);
      }
    }, boost::asio::detached);
  }
  io.run();
  for (const auto& [run, appends] : answered) {
    const auto stored = run_now(feeds[0]->read(run, 0, 0));
    std::size_t total = 0;
    for (const auto& [position, events] : appends) total += events.size();
    ASSERT_EQ(stored.size(), total) << run;
    for (std::size_t i = 0; i < stored.size(); ++i) EXPECT_EQ(stored[i].position, static_cast<std::int64_t>(i + 1)) << run;
    for (const auto& [position, events] : appends) {
      const auto first = static_cast<std::size_t>(position) - events.size();  // index of its first event
      for (std::size_t e = 0; e < events.size(); ++e) EXPECT_EQ(stored[first + e].event, events[e]) << run;
    }
  }
}

// ---------------------------------------------------------------- group commit of saves

// Saves of many runs at once go together (group commit), and each caller
// learns of its own save only: a stale fence is refused as stale for that
// run alone, a head PostgreSQL cannot hold fails alone (the group is then
// saved one by one), and every other run's steps and journal land in order.
TEST(postgres_store, concurrent_saves_written_together_each_learn_their_own_outcome) {
  scratch_directory dir;
  auto store = stores::make_postgres_checkpoint_store(url_for(dir.path()));
  constexpr int runs = 30;
  constexpr int steps = 4;
  std::vector<save_request> created;
  for (int r = 0; r < runs; ++r) {
    created.push_back(new_run("r" + std::to_string(r), "worker-a", "{}", {"created"}));
    run_now(store->create(created.back(), long_lease));
  }
  const auto record = [](int r, int step, char which) {
    return "r" + std::to_string(r) + "/" + std::to_string(step) + "/" + which;
  };
  const auto stale = [](int r) { return r < 5; };  // their step 2 carries a stale fence
  const auto unstorable = [](int r) { return r == 5; };  // its step 3 a NUL byte
  const std::string with_nul("{\"a\":\"\0\"}", 9);
  std::vector<std::vector<std::string>> outcomes(runs);  // per run, per step: "" or the error
  boost::asio::io_context io;
  for (int r = 0; r < runs; ++r) {
    boost::asio::co_spawn(io, [&, r]() -> boost::asio::awaitable<void> {
      for (int step = 1; step <= steps; ++step) {
        auto next = next_step(created[static_cast<std::size_t>(r)], step, workflow_status::running,
                              R"({"step":)" + std::to_string(step) + "}", {record(r, step, 'a'), record(r, step, 'b')});
        if (stale(r) && step == 2) next.fence += 7;
        if (unstorable(r) && step == 3) next.state_json = with_nul;
        std::string outcome;
        try {
          co_await store->save(std::move(next));
        } catch (const claim_error& e) {
          outcome = testing::reason_name(e.why());
        } catch (const std::exception& e) {
          outcome = e.what();
        }
        outcomes[static_cast<std::size_t>(r)].push_back(outcome);
        if (!outcome.empty() && stale(r)) co_return;
      }
    }, boost::asio::detached);
  }
  io.run();
  for (int r = 0; r < runs; ++r) {
    const auto& got = outcomes[static_cast<std::size_t>(r)];
    const auto loaded = run_now(store->load("r" + std::to_string(r)));
    ASSERT_TRUE(loaded.has_value()) << r;
    std::vector<std::string> journal{"created"};
    if (stale(r)) {
      EXPECT_EQ(got, (std::vector<std::string>{"", "stale_fence"})) << r;
      journal.insert(journal.end(), {record(r, 1, 'a'), record(r, 1, 'b')});
      EXPECT_EQ(loaded->step, 1) << r;
    } else {
      ASSERT_EQ(got.size(), static_cast<std::size_t>(steps)) << r;
      for (int step = 1; step <= steps; ++step) {
        const auto& outcome = got[static_cast<std::size_t>(step - 1)];
        if (unstorable(r) && step == 3) {
          EXPECT_THAT(outcome, HasSubstr("NUL byte")) << r;
          continue;
        }
        EXPECT_EQ(outcome, "") << r << " step " << step;
        journal.insert(journal.end(), {record(r, step, 'a'), record(r, step, 'b')});
      }
      EXPECT_EQ(loaded->step, steps) << r;
      EXPECT_EQ(loaded->state_json, R"({"step":4})") << r;
    }
    EXPECT_EQ(loaded->journal, journal) << r;
  }
}

// A group of saves locks its runs in id order, and so does the renewal of
// their owner's leases: saving many runs while their leases are renewed
// deadlocks neither (PostgreSQL would abort one of the two, and the renewal
// or the group would fail). Runs for three seconds.
TEST(postgres_store, grouped_saves_and_lease_renewals_of_one_owner_never_deadlock) {
  scratch_directory dir;
  auto store = stores::make_postgres_checkpoint_store(url_for(dir.path()));
  constexpr int runs = 40;
  std::vector<save_request> created;
  for (int r = 0; r < runs; ++r) {
    created.push_back(new_run("r" + std::to_string(r), "worker-a", "{}", {"created"}));
    run_now(store->create(created.back(), long_lease));
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::vector<std::string> failures;
  std::size_t saves = 0;
  std::size_t renewals = 0;
  boost::asio::io_context io;
  for (int r = 0; r < runs; ++r) {
    boost::asio::co_spawn(io, [&, r]() -> boost::asio::awaitable<void> {
      for (std::int64_t step = 1; std::chrono::steady_clock::now() < until; ++step) {
        auto next = next_step(created[static_cast<std::size_t>(r)], step, workflow_status::running, "{}", {"s"});
        try {
          co_await store->save(std::move(next));
          ++saves;
        } catch (const std::exception& e) {
          failures.push_back(std::string("save: ") + e.what());
          co_return;
        }
      }
    }, boost::asio::detached);
  }
  boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> {
    while (std::chrono::steady_clock::now() < until) {
      try {
        const auto renewed = co_await store->renew("worker-a", long_lease);
        if (renewed != runs) failures.push_back("renewed " + std::to_string(renewed) + " runs");
        ++renewals;
      } catch (const std::exception& e) {
        failures.push_back(std::string("renew: ") + e.what());
        co_return;
      }
    }
  }, boost::asio::detached);
  io.run();
  EXPECT_EQ(failures, std::vector<std::string>{});
  EXPECT_GT(saves, static_cast<std::size_t>(runs));
  EXPECT_GT(renewals, 0u);
}

}  // namespace
}  // namespace switchboard::orchestrator
