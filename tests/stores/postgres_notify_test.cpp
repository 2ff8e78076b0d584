// Wake-ups across processes through LISTEN/NOTIFY. Two store objects on one
// database stand for two hubs: separate pools, separate listening
// connections. Their poll fallback is set to an hour, so within a test's
// hang guard (minutes) only a notification can wake a waiter: a test that
// passes shows the notification did it, and nothing measures how fast.
#include <switchboard/stores/postgres_store.hpp>

#include <switchboard/testing/checkpoint_store_conformance_support.hpp>

#include "postgres_test_server.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <sys/select.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <sstream>
#include <thread>

namespace switchboard::orchestrator {
namespace {

using namespace std::chrono_literals;
using stores::postgres_wakeup_options;
using stores::testing::connect_blocking;
using stores::testing::exec_sql;
using stores::testing::url_for;
using switchboard::testing::hang_guard;
using testing::long_lease;
using testing::run_now;
using testing::scratch_directory;
using ::testing::HasSubstr;

// No polling worth the name: a waiter wakes by a notification or not at all.
postgres_wakeup_options notifications_only() {
  postgres_wakeup_options options;
  options.poll_while_listening = 1h;
  options.poll_without_listener = 1h;
  return options;
}

enqueue_request new_request(const std::string& id) { return {id, "wf", ready_reason::new_run, "{}"}; }

// Waits that must not have ended yet: the waiter is asleep (a sleep that
// orders the test's steps, not a measurement).
template <class T>
bool still_waiting(std::future<T>& waiting) {
  return waiting.wait_for(300ms) == std::future_status::timeout;
}

// An application_name no other test, nor another run of the tests on the
// same server, uses: what identifies a feed's sessions in pg_stat_activity.
std::string session_name() {
  static std::atomic<int> made{0};
  return "swb-reader-" + std::to_string(::getpid()) + "-" + std::to_string(++made);
}

// The session of the listener whose connection string carries
// application_name `name` (its last statement, finished, was the LISTEN);
// "" if none.
std::string listener_pid(const std::string& url, const std::string& name) {
  return exec_sql(url, "SELECT pid FROM pg_stat_activity WHERE application_name = '" + name +
                           "' AND query LIKE 'LISTEN %' AND state = 'idle' ORDER BY backend_start DESC LIMIT 1");
}

// Blocks until a feed whose connection string carries application_name
// `name` has read events (a waiter's first read, which found none): what
// the test writes next comes while the waiter sleeps.
void wait_for_a_read(const std::string& url, const std::string& name) {
  const hang_guard guard("the waiter's first read");
  while (exec_sql(url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + name +
                           "' AND query LIKE 'SELECT position, event%' AND state = 'idle'") == "0") {
    std::this_thread::sleep_for(10ms);
  }
}

TEST(postgres_notify, an_append_through_one_feed_wakes_a_wait_on_another) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  auto writer = stores::make_postgres_event_feed(url, {}, notifications_only());
  const auto reader_name = session_name();
  auto reader = stores::make_postgres_event_feed(url + "&application_name=" + reader_name, {}, notifications_only());
  auto waiting = std::async(std::launch::async, [&] { return run_now(reader->wait("run-1", 0, 0, 1h)); });
  wait_for_a_read(url, reader_name);
  ASSERT_TRUE(still_waiting(waiting));

  run_now(writer->append("run-1", R"({"n":1})"));
  const hang_guard guard("a feed wait that only another feed's notification can wake");
  const auto events = waiting.get();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].event, R"({"n":1})");
}

TEST(postgres_notify, an_enqueue_through_one_queue_wakes_wait_for_ready_on_another) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  auto producer = stores::make_postgres_run_queue(url, {}, notifications_only());
  auto worker = stores::make_postgres_run_queue(url, {}, notifications_only());
  EXPECT_FALSE(run_now(worker->claim_next("hub-b", long_lease)).has_value());
  auto waiting = std::async(std::launch::async, [&] { run_now(worker->wait_for_ready(1h)); });
  ASSERT_TRUE(still_waiting(waiting));

  run_now(producer->enqueue(new_request("run-1")));
  {
    const hang_guard guard("a wait_for_ready that only another queue's notification can wake");
    waiting.get();
  }
  const auto claimed = run_now(worker->claim_next("hub-b", long_lease));
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(claimed->workflow_id, "run-1");
}

// An enqueue between a claim that found nothing and the wait after it must
// not be slept through: the wait ends at once. For the in-memory queue too.
void an_enqueue_after_an_empty_claim_ends_the_next_wait(run_queue& queue) {
  EXPECT_FALSE(run_now(queue.claim_next("hub-a", long_lease)).has_value());
  run_now(queue.enqueue(new_request("run-1")));
  {
    const hang_guard guard("a wait_for_ready after an enqueue the worker has not looked at");
    run_now(queue.wait_for_ready(1h));
  }
  EXPECT_TRUE(run_now(queue.claim_next("hub-a", long_lease)).has_value());
  // Seen now: the next wait sleeps until the next enqueue, here one made
  // while it sleeps.
  auto waiting = std::async(std::launch::async, [&] { run_now(queue.wait_for_ready(1h)); });
  ASSERT_TRUE(still_waiting(waiting));
  run_now(queue.enqueue(new_request("run-2")));
  const hang_guard guard("a wait_for_ready woken by an enqueue in its own process");
  waiting.get();
}

TEST(postgres_notify, an_enqueue_in_the_same_process_ends_wait_for_ready) {
  scratch_directory dir;
  auto queue = stores::make_postgres_run_queue(url_for(dir.path()), {}, notifications_only());
  an_enqueue_after_an_empty_claim_ends_the_next_wait(*queue);
}

TEST(postgres_notify, the_in_memory_queue_ends_wait_for_ready_on_an_enqueue_too) {
  auto queue = make_in_memory_run_queue();
  an_enqueue_after_an_empty_claim_ends_the_next_wait(*queue);
}

// Reads notifications on `c` (which ran LISTEN) until one with payload
// `last` arrives; returns the payloads of those before it.
std::vector<std::string> notifications_before(PGconn* c, const std::string& last) {
  const hang_guard guard("reading notifications until the marker");
  std::vector<std::string> payloads;
  for (;;) {
    if (PQconsumeInput(c) == 0) throw std::runtime_error(PQerrorMessage(c));
    while (PGnotify* n = PQnotifies(c)) {
      const std::string payload = n->extra;
      PQfreemem(n);
      if (payload == last) return payloads;
      payloads.push_back(payload);
    }
    fd_set readable;
    FD_ZERO(&readable);
    FD_SET(PQsocket(c), &readable);
    ::select(PQsocket(c) + 1, &readable, nullptr, nullptr, nullptr);
  }
}

TEST(postgres_notify, many_appends_send_few_notifications) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  const std::string channel = "switchboard_feed_" + exec_sql(url, "SELECT md5(current_schema())");
  auto listening = connect_blocking(url);
  exec_sql(listening.get(), "LISTEN \"" + channel + "\"");

  postgres_wakeup_options options;
  options.notify_tick = 1s;  // a long tick: the coalescing shows whatever the machine's speed
  auto feed = stores::make_postgres_event_feed(url, {}, options);
  constexpr int appends = 200;
  for (int i = 0; i < appends; ++i) run_now(feed->append("run-" + std::to_string(i % 7), "{}"));
  feed.reset();  // sends the NOTIFY still owed, then stops
  // Notifications arrive in commit order: a marker sent now comes last.
  exec_sql(url, "SELECT pg_notify('" + channel + "', 'end of test')");

  const auto heard = notifications_before(listening.get(), "end of test");
  EXPECT_GE(heard.size(), 1U) << "the appends were announced";
  EXPECT_LE(heard.size(), appends / 10U) << "one NOTIFY per tick, not one per append";
  // Each names the runs appended to during its tick, one per line.
  std::set<std::string> named;
  for (const auto& payload : heard) {
    std::istringstream lines(payload);
    for (std::string run; std::getline(lines, run);) named.insert(run);
  }
  std::set<std::string> appended;
  for (int i = 0; i < 7; ++i) appended.insert("run-" + std::to_string(i));
  EXPECT_EQ(named, appended);
}

// A payload names runs one per line; a run whose id holds a line break
// cannot be named, so the NOTIFY names nothing and wakes every waiter.
TEST(postgres_notify, a_run_id_with_a_line_break_still_wakes_its_waiter) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  auto writer = stores::make_postgres_event_feed(url, {}, notifications_only());
  const auto reader_name = session_name();
  auto reader = stores::make_postgres_event_feed(url + "&application_name=" + reader_name, {}, notifications_only());
  const std::string id = "line\nbreak";
  auto waiting = std::async(std::launch::async, [&] { return run_now(reader->wait(id, 0, 0, 1h)); });
  wait_for_a_read(url, reader_name);
  ASSERT_TRUE(still_waiting(waiting));
  run_now(writer->append(id, "{}"));
  const hang_guard guard("a wait on a run whose id holds a line break");
  EXPECT_EQ(waiting.get().size(), 1U);
}

// Appends to several runs within one tick go out as one NOTIFY naming them
// all (the first append of the tick went alone, at once): the waiter of
// each named run wakes.
TEST(postgres_notify, a_notification_naming_several_runs_wakes_the_waiters_of_each) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  postgres_wakeup_options slow_tick = notifications_only();
  slow_tick.notify_tick = 1s;
  auto writer = stores::make_postgres_event_feed(url, {}, slow_tick);
  auto reader = stores::make_postgres_event_feed(url, {}, notifications_only());
  auto waiting_a = std::async(std::launch::async, [&] { return run_now(reader->wait("run-a", 0, 0, 1h)); });
  auto waiting_b = std::async(std::launch::async, [&] { return run_now(reader->wait("run-b", 0, 0, 1h)); });
  ASSERT_TRUE(still_waiting(waiting_a));
  ASSERT_TRUE(still_waiting(waiting_b));
  run_now(writer->append("run-z", "{}"));
  run_now(writer->append("run-a", "{}"));
  run_now(writer->append("run-b", "{}"));
  const hang_guard guard("waits on two runs named by one notification");
  EXPECT_EQ(waiting_a.get().size(), 1U);
  EXPECT_EQ(waiting_b.get().size(), 1U);
}

TEST(postgres_notify, a_wait_for_ready_is_not_woken_by_another_schemas_queue) {
  scratch_directory dir;
  scratch_directory other_dir;
  auto elsewhere = stores::make_postgres_run_queue(url_for(other_dir.path()), {}, notifications_only());
  auto worker = stores::make_postgres_run_queue(url_for(dir.path()), {}, notifications_only());
  EXPECT_FALSE(run_now(worker->claim_next("hub-b", long_lease)).has_value());
  auto waiting = std::async(std::launch::async, [&] { run_now(worker->wait_for_ready(1h)); });
  run_now(elsewhere->enqueue(new_request("run-elsewhere")));
  EXPECT_TRUE(still_waiting(waiting)) << "another schema's channel is not this queue's";
  // End the wait the proper way.
  auto same = stores::make_postgres_run_queue(url_for(dir.path()));
  run_now(same->enqueue(new_request("run-here")));
  const hang_guard guard("a wait_for_ready woken by its own schema's queue");
  waiting.get();
}

// An event written while nobody could hear of it (straight into the tables,
// no NOTIFY) is found when the terminated listener is back: reconnecting
// wakes every waiter once, since something may have been missed.
TEST(postgres_notify, a_terminated_listener_reconnects_and_wakes_every_waiter) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  const auto reader_name = session_name();
  auto reader = stores::make_postgres_event_feed(url + "&application_name=" + reader_name, {}, notifications_only());
  const auto first_pid = listener_pid(url, reader_name);
  ASSERT_NE(first_pid, "");
  auto waiting = std::async(std::launch::async, [&] { return run_now(reader->wait("run-1", 0, 0, 1h)); });
  wait_for_a_read(url, reader_name);
  ASSERT_TRUE(still_waiting(waiting));
  exec_sql(url, "INSERT INTO switchboard_feed_heads VALUES ('run-1', 1)");
  exec_sql(url, "INSERT INTO switchboard_events VALUES ('run-1', 1, 'unannounced', 0)");
  ASSERT_TRUE(still_waiting(waiting)) << "nothing announced the event: the waiter sleeps on";

  EXPECT_EQ(exec_sql(url, "SELECT pg_terminate_backend(" + first_pid + ")"), "t");
  const hang_guard guard("a waiter woken when the listener reconnects");
  const auto events = waiting.get();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].event, "unannounced");
  EXPECT_NE(listener_pid(url, reader_name), first_pid) << "a new session listens";
}

TEST(postgres_notify, after_a_listener_is_terminated_notifications_still_wake_waiters) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  auto writer = stores::make_postgres_event_feed(url, {}, notifications_only());
  const auto reader_name = session_name();
  auto reader = stores::make_postgres_event_feed(url + "&application_name=" + reader_name, {}, notifications_only());
  const auto first_pid = listener_pid(url, reader_name);
  ASSERT_NE(first_pid, "");
  EXPECT_EQ(exec_sql(url, "SELECT pg_terminate_backend(" + first_pid + ")"), "t");
  {
    const hang_guard guard("the listener reconnecting");
    while (listener_pid(url, reader_name) == first_pid || listener_pid(url, reader_name).empty()) {
      std::this_thread::sleep_for(20ms);
    }
  }
  auto waiting = std::async(std::launch::async, [&] { return run_now(reader->wait("run-1", 0, 0, 1h)); });
  wait_for_a_read(url, reader_name);
  ASSERT_TRUE(still_waiting(waiting));
  run_now(writer->append("run-1", "after the reconnect"));
  const hang_guard guard("a wait woken through the new listening session");
  const auto events = waiting.get();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].event, "after the reconnect");
}

// A payload holds about 4000 bytes of run ids: a tick of appends to more
// runs than that sends a NOTIFY naming nothing, which wakes every waiter
// (here one whose run sorts after all the others).
TEST(postgres_notify, appends_to_more_runs_than_a_payload_holds_still_wake_their_waiters) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  postgres_wakeup_options slow_tick = notifications_only();
  slow_tick.notify_tick = 1s;
  auto writer = stores::make_postgres_event_feed(url, {}, slow_tick);
  const auto reader_name = session_name();
  auto reader = stores::make_postgres_event_feed(url + "&application_name=" + reader_name, {}, notifications_only());
  auto waiting = std::async(std::launch::async, [&] { return run_now(reader->wait("zzz-waited", 0, 0, 1h)); });
  wait_for_a_read(url, reader_name);
  run_now(writer->append("first-of-the-tick", "{}"));  // goes alone, at once
  for (int i = 0; i < 400; ++i) run_now(writer->append("run-with-a-longish-id-" + std::to_string(i), "{}"));
  run_now(writer->append("zzz-waited", "{}"));
  const hang_guard guard("a waiter whose run a payload could not name");
  EXPECT_EQ(waiting.get().size(), 1U);
}

// Polling stays the fallback: an event nobody announced (written straight
// into the tables) is found by the next poll while the listener is up.
TEST(postgres_notify, an_unannounced_append_is_found_by_the_poll_fallback) {
  scratch_directory dir;
  const auto url = url_for(dir.path());
  postgres_wakeup_options quick_poll = notifications_only();
  quick_poll.poll_while_listening = 50ms;
  const auto reader_name = session_name();
  auto reader = stores::make_postgres_event_feed(url + "&application_name=" + reader_name, {}, quick_poll);
  auto waiting = std::async(std::launch::async, [&] { return run_now(reader->wait("run-1", 0, 0, 1h)); });
  wait_for_a_read(url, reader_name);
  exec_sql(url, "INSERT INTO switchboard_feed_heads VALUES ('run-1', 1)");
  exec_sql(url, "INSERT INTO switchboard_events VALUES ('run-1', 1, 'unannounced', 0)");
  const hang_guard guard("a waiter that only its poll can wake");
  const auto events = waiting.get();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].event, "unannounced");
}

TEST(postgres_notify, wakeup_options_that_would_spin_are_refused_by_name) {
  postgres_wakeup_options options;
  options.poll_while_listening = 0ms;
  try {
    stores::make_postgres_event_feed("postgresql://127.0.0.1:1/none", {}, options);
    ADD_FAILURE() << "a feed polling every 0 ms was made";
  } catch (const checkpoint_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("poll_while_listening is 0 ms"));
  }
  options = {};
  options.notify_tick = -1ms;
  EXPECT_THROW(stores::make_postgres_run_queue("postgresql://127.0.0.1:1/none", {}, options), checkpoint_error);
}

}  // namespace
}  // namespace switchboard::orchestrator
