// A server restarted on the same SQLite file: a paused thread is listed as
// interrupted and takes its resume; a run that was inside a step when the
// server shut down (shutdown with no grace) is carried on by the next
// start, without running its saved steps again; a run that finishes within
// the grace is not run again; a pending run starts after it.
#include "server_fixture.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace switchboard::server::testing {
namespace {

using ::testing::HasSubstr;

class restart_test : public ::testing::Test {
 protected:
  restart_test() {
    fs::create_directories(dir_.path() / "state");
    fs::create_directories(gate_dir());
  }
  server::serve_options options() {
    server::serve_options o;
    o.workflows = {scheduling_settings(dir_.path() / "state"), gated_settings(gate_dir())};
    o.store_url = "sqlite:" + (dir_.path() / "runs.db").string();
    return o;
  }
  fs::path gate_dir() const { return dir_.path() / "gate"; }
  void open_gate() const { std::ofstream(gate_dir() / "open") << "open\n"; }
  int gate_calls() const { return lines_in(gate_dir() / "gate.log"); }
  int count_calls() const { return lines_in(gate_dir() / "count.log"); }
  // Waits (the hang guard bounds it) until the gate step has been entered
  // `n` times.
  void wait_for_gate_calls(int n) const {
    while (gate_calls() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }


  const switchboard::testing::hang_guard guard_{"a server restart test"};
  temp_dir dir_{"sb-server-restart"};
};

TEST_F(restart_test, a_paused_thread_survives_the_restart_and_takes_its_resume) {
  std::string thread;
  json::value interrupts;
  {
    running_server first(options());
    thread = new_thread_on(first.port());
    const auto r = post(first.port(), "/threads/" + thread + "/runs/wait",
                        json::object{{"assistant_id", "family_scheduling"},
                                     {"input", json::object{{"request", soccer}}}});
    ASSERT_EQ(r.status, 200) << r.describe();
    ASSERT_EQ(r.json().at("status"), "awaiting_approval");
    interrupts = get_json(first.port(), "/threads/" + thread).at("interrupts");
  }  // destroyed: shut down, its io_context stopped

  running_server second(options());
  const auto t = get_json(second.port(), "/threads/" + thread);
  EXPECT_EQ(t.at("status"), "interrupted");
  EXPECT_EQ(t.at("interrupts"), interrupts);  // the same ids after the restart
  const auto listed = post(second.port(), "/threads/search", json::object{{"status", "interrupted"}});
  ASSERT_EQ(listed.status, 200);
  ASSERT_EQ(listed.json().as_array().size(), 1u);
  EXPECT_EQ(listed.json().at(0).at("thread_id"), json::value(thread));
  const auto state = get_json(second.port(), "/threads/" + thread + "/state");
  EXPECT_EQ(state.at("interrupts").at(0).at("value").at("type"), "approval");

  const auto resumed = post(second.port(), "/threads/" + thread + "/runs/wait",
                            json::object{{"assistant_id", "family_scheduling"},
                                         {"command", json::object{{"resume", json::object{{"decision", "approve"}}}}}});
  ASSERT_EQ(resumed.status, 200) << resumed.describe();
  EXPECT_EQ(resumed.json().at("status"), "completed") << resumed.body;
  EXPECT_THAT(json::serialize(resumed.json().at("result")), HasSubstr("Confirmed"));
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread).at("status"), "idle");
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread + "/runs").as_array().size(), 2u);
}

TEST_F(restart_test, a_run_stopped_inside_a_step_is_carried_on_by_the_next_start) {
  std::string thread, run;
  {
    running_server first(options());
    thread = new_thread_on(first.port());
    run = start_gated_on(first.port(), thread);
    ASSERT_FALSE(run.empty());
    wait_for_gate_calls(1);  // inside the `wait` step, the gate closed
    first.stop(std::chrono::milliseconds(0));
  }
  EXPECT_EQ(count_calls(), 1);
  EXPECT_EQ(gate_calls(), 1);

  running_server second(options());
  // Carried on at once: the gate step runs again (its result was never
  // saved), the `first` step does not.
  wait_for_gate_calls(2);
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread + "/runs/" + run).at("status"), "running");
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread).at("status"), "busy");
  open_gate();
  const auto joined = get_json(second.port(), "/threads/" + thread + "/runs/" + run + "/join");
  EXPECT_EQ(joined.at("status"), "completed") << json::serialize(joined);
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread + "/runs/" + run).at("status"), "success");
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread).at("status"), "idle");
  EXPECT_EQ(count_calls(), 1);
  EXPECT_EQ(gate_calls(), 2);

  // The run's stream, replayed, holds both servers' events and ends.
  const auto replay = get(second.port(), "/threads/" + thread + "/runs/" + run + "/stream", {{"last-event-id", "-1"}});
  ASSERT_EQ(replay.status, 200) << replay.describe();
  const auto events = parse_sse(replay.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().event, "metadata");
  EXPECT_EQ(events.back().event, "values");
  EXPECT_EQ(events.back().json().at("status"), "completed");
}

TEST_F(restart_test, a_run_that_finishes_within_the_grace_is_not_run_again) {
  std::string thread, run;
  {
    running_server first(options());
    thread = new_thread_on(first.port());
    run = start_gated_on(first.port(), thread);
    ASSERT_FALSE(run.empty());
    wait_for_gate_calls(1);
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // shutdown() is waiting by then, or not: either way
      open_gate();
    });
    first.stop(std::chrono::minutes(5));  // returns once the run has finished
    opener.join();
  }
  running_server second(options());
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread + "/runs/" + run).at("status"), "success");
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread).at("status"), "idle");
  EXPECT_EQ(gate_calls(), 1);
  EXPECT_EQ(count_calls(), 1);
}

TEST_F(restart_test, a_pending_run_starts_after_the_carried_on_one) {
  std::string thread, running, pending;
  {
    running_server first(options());
    thread = new_thread_on(first.port());
    running = start_gated_on(first.port(), thread);
    wait_for_gate_calls(1);
    pending = start_gated_on(first.port(), thread);  // enqueued behind it
    ASSERT_FALSE(pending.empty());
    EXPECT_EQ(get_json(first.port(), "/threads/" + thread + "/runs/" + pending).at("status"), "pending");
    first.stop(std::chrono::milliseconds(0));
  }
  running_server second(options());
  wait_for_gate_calls(2);
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread + "/runs/" + pending).at("status"), "pending");
  open_gate();
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread + "/runs/" + pending + "/join").at("status"), "completed");
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread + "/runs/" + running).at("status"), "success");
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread + "/runs/" + pending).at("status"), "success");
  EXPECT_EQ(get_json(second.port(), "/threads/" + thread).at("status"), "idle");
  EXPECT_EQ(count_calls(), 2);  // once per run
  EXPECT_EQ(gate_calls(), 3);   // the first run's gate twice, the second's once
}

TEST_F(restart_test, a_deleted_thread_stays_deleted_after_the_restart) {
  std::string kept, gone;
  {
    running_server first(options());
    kept = new_thread_on(first.port());
    gone = new_thread_on(first.port());
    ASSERT_EQ(del(first.port(), "/threads/" + gone).status, 204);
  }
  running_server second(options());
  EXPECT_EQ(get(second.port(), "/threads/" + gone).status, 404);
  EXPECT_EQ(get(second.port(), "/threads/" + kept).status, 200);
}

}  // namespace
}  // namespace switchboard::server::testing
