// Servers sharing one PostgreSQL store (ADR 0036), in one test process:
// a run posted to one server is seen, awaited and answered through any
// other; a thread's runs execute one at a time wherever they land; of two
// answers posted to two servers at once, one is taken (200) and the other
// refused (409); a server at its limit leaves threads to another; a server
// that stops hands its threads over and another continues them; a cancel
// posted to one server stops a run executing on another; a server that
// claims its own lapsed thread again keeps streaming the run it executes.
//
// Each server serves the gated workflow with a gate directory of its own,
// so a test can tell which server executed a step (its directory's logs).
// Killed processes and a database under faults are the fault suite's
// (tests/langgraph_sdk, label postgres).
#include "server_fixture.hpp"
#include "postgres_test_server.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace switchboard::server::testing {
namespace {

class many_hubs_test : public ::testing::Test {
 protected:
  many_hubs_test() : url_(stores::testing::url_for(dir_.path())) {}

  // A server named `name` (its gate directory) on the shared store.
  std::unique_ptr<running_server> start_server(const std::string& name, std::size_t max_threads = 16) {
    fs::create_directories(gate_dir(name));
    fs::create_directories(dir_.path() / "state");
    server::serve_options o;
    o.workflows = {scheduling_settings(dir_.path() / "state"), gated_settings(gate_dir(name))};
    o.store_url = url_;
    o.lease = std::chrono::seconds(2);
    o.max_threads = max_threads;
    return std::make_unique<running_server>(std::move(o));
  }
  fs::path gate_dir(const std::string& name) const { return dir_.path() / ("gate-" + name); }
  void open_gate(const std::string& name) const { std::ofstream(gate_dir(name) / "open") << "open\n"; }
  int gate_calls(const std::string& name) const { return lines_in(gate_dir(name) / "gate.log"); }
  int count_calls(const std::string& name) const { return lines_in(gate_dir(name) / "count.log"); }
  void wait_for_gate_calls(const std::string& name, int n) const {
    while (gate_calls(name) < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  // A gated run posted to a server of its own (`name`), held in its gate
  // step there, and the fence of the server's claim on its thread.
  struct held_run {
    std::unique_ptr<running_server> server;
    std::string thread, run, first_fence;
  };
  held_run gated_run_held_on(const std::string& name) {
    held_run h;
    h.server = start_server(name);
    h.thread = new_thread_on(h.server->port());
    h.run = start_gated_on(h.server->port(), h.thread);
    wait_for_gate_calls(name, 1);
    h.first_fence = queue_row("fence", h.thread);
    return h;
  }

  std::string sql(const std::string& statement) const { return stores::testing::exec_sql(url_, statement); }
  std::string queue_row(const std::string& column, const std::string& thread) const {
    return sql("SELECT " + column + " FROM switchboard_queue WHERE workflow_id = '" + thread + "'");
  }
  // How many records named `name` the run's stream holds.
  std::string stream_records(const std::string& run, const std::string& name) const {
    return sql("SELECT count(*) FROM switchboard_events WHERE workflow_id = '" + run + "' AND event LIKE '" + name +
               "%'");
  }

  static std::string run_status(std::uint16_t port, const std::string& thread, const std::string& run) {
    const auto v = get_json(port, "/threads/" + thread + "/runs/" + run);
    return v.is_object() ? std::string(v.at("status").as_string()) : "(none)";
  }

  const switchboard::testing::hang_guard guard_{"a many-hubs test"};
  temp_dir dir_{"sb-many-hubs"};
  std::string url_;
};

TEST_F(many_hubs_test, a_run_posted_to_one_server_is_read_and_awaited_on_another) {
  auto a = start_server("a");
  auto b = start_server("b");
  const auto thread = new_thread_on(a->port());
  // Created on A, the thread is there on B at once.
  EXPECT_EQ(get_json(b->port(), "/threads/" + thread).at("thread_id"), json::value(thread));

  const auto paused = post(b->port(), "/threads/" + thread + "/runs/wait",
                           json::object{{"assistant_id", "family_scheduling"},
                                        {"input", json::object{{"request", soccer}}}});
  ASSERT_EQ(paused.status, 200) << paused.describe();
  EXPECT_EQ(paused.json().at("status"), "awaiting_approval");
  EXPECT_EQ(get_json(a->port(), "/threads/" + thread).at("status"), "interrupted");
  const auto state = get_json(a->port(), "/threads/" + thread + "/state");
  EXPECT_EQ(state.at("interrupts").at(0).at("value").at("type"), "approval");

  const auto done = post(a->port(), "/threads/" + thread + "/runs/wait",
                         json::object{{"assistant_id", "family_scheduling"},
                                      {"command", json::object{{"resume", json::object{{"decision", "approve"}}}}}});
  ASSERT_EQ(done.status, 200) << done.describe();
  EXPECT_EQ(done.json().at("status"), "completed") << done.body;
  EXPECT_EQ(get_json(b->port(), "/threads/" + thread).at("status"), "idle");
  EXPECT_EQ(get_json(b->port(), "/threads/" + thread + "/runs").as_array().size(), 2u);
}

TEST_F(many_hubs_test, two_answers_posted_to_two_servers_at_once_one_is_taken) {
  auto a = start_server("a");
  auto b = start_server("b");
  const auto thread = new_thread_on(a->port());
  const auto paused = post(a->port(), "/threads/" + thread + "/runs/wait",
                           json::object{{"assistant_id", "family_scheduling"},
                                        {"input", json::object{{"request", soccer}}}});
  ASSERT_EQ(paused.status, 200) << paused.describe();

  const json::object approve{{"assistant_id", "family_scheduling"},
                             {"command", json::object{{"resume", json::object{{"decision", "approve"}}}}}};
  auto answer = [&](std::uint16_t port) { return post(port, "/threads/" + thread + "/runs", approve); };
  auto on_a = std::async(std::launch::async, answer, a->port());
  auto on_b = std::async(std::launch::async, answer, b->port());
  const auto reply_a = on_a.get();
  const auto reply_b = on_b.get();
  const std::multiset<int> statuses{reply_a.status, reply_b.status};
  ASSERT_EQ(statuses, (std::multiset<int>{200, 409})) << reply_a.describe() << "\n" << reply_b.describe();

  // The answer taken ends (a pending run's thread is not busy until a
  // server claims it: its status alone cannot say the run is over).
  const auto& taken = reply_a.status == 200 ? reply_a : reply_b;
  const auto taken_on = reply_a.status == 200 ? a->port() : b->port();
  const std::string run_id(taken.json().at("run_id").as_string());
  const auto joined = get_json(taken_on, "/threads/" + thread + "/runs/" + run_id + "/join");
  EXPECT_EQ(joined.at("status"), "completed") << json::serialize(joined);
  const auto runs = get_json(b->port(), "/threads/" + thread + "/runs").as_array();
  ASSERT_EQ(runs.size(), 2u) << "the refused answer left no run behind: " << json::serialize(runs);
  for (const auto& r : runs) EXPECT_EQ(r.at("status"), "success") << json::serialize(r);
  const auto values = get_json(b->port(), "/threads/" + thread + "/state").at("values");
  EXPECT_EQ(values.at("status"), "completed");
}

TEST_F(many_hubs_test, a_threads_runs_execute_one_at_a_time_in_order_across_servers) {
  auto a = start_server("a");
  const auto thread = new_thread_on(a->port());
  const auto first = start_gated_on(a->port(), thread);
  wait_for_gate_calls("a", 1);
  auto b = start_server("b");
  // Posted to B while A executes the first: it waits, then executes after it.
  const auto second = start_gated_on(b->port(), thread);
  EXPECT_EQ(run_status(b->port(), thread, second), "pending");
  EXPECT_EQ(get_json(b->port(), "/threads/" + thread).at("status"), "busy");
  open_gate("a");
  open_gate("b");
  const auto joined = get_json(b->port(), "/threads/" + thread + "/runs/" + second + "/join");
  EXPECT_EQ(joined.at("status"), "completed") << json::serialize(joined);
  EXPECT_EQ(run_status(a->port(), thread, first), "success");
  EXPECT_EQ(run_status(a->port(), thread, second), "success");
  // The thread stayed with A, which held it: both runs' steps ran there.
  EXPECT_EQ(count_calls("a"), 2);
  EXPECT_EQ(count_calls("b"), 0);
}

TEST_F(many_hubs_test, a_server_at_its_limit_leaves_threads_to_another) {
  auto a = start_server("a", /*max_threads=*/1);
  const auto t1 = new_thread_on(a->port());
  const auto t2 = new_thread_on(a->port());
  const auto r1 = start_gated_on(a->port(), t1);
  wait_for_gate_calls("a", 1);
  const auto r2 = start_gated_on(a->port(), t2);
  EXPECT_EQ(run_status(a->port(), t2, r2), "pending") << "A is full: nobody has the second thread yet";

  auto b = start_server("b");
  wait_for_gate_calls("b", 1);  // B claimed the waiting thread
  open_gate("a");
  open_gate("b");
  EXPECT_EQ(get_json(a->port(), "/threads/" + t2 + "/runs/" + r2 + "/join").at("status"), "completed");
  EXPECT_EQ(get_json(b->port(), "/threads/" + t1 + "/runs/" + r1 + "/join").at("status"), "completed");
  EXPECT_EQ(count_calls("a"), 1);
  EXPECT_EQ(count_calls("b"), 1);
}

TEST_F(many_hubs_test, a_server_that_stops_hands_its_threads_to_another_which_continues_them) {
  auto a = start_server("a");
  const auto thread = new_thread_on(a->port());
  const auto run = start_gated_on(a->port(), thread);
  wait_for_gate_calls("a", 1);
  auto b = start_server("b");
  a->stop(std::chrono::milliseconds(0));  // interrupted inside the gate step, the thread handed back

  wait_for_gate_calls("b", 1);  // B continues it: the gate step again, `first` not
  open_gate("b");
  const auto joined = get_json(b->port(), "/threads/" + thread + "/runs/" + run + "/join");
  EXPECT_EQ(joined.at("status"), "completed") << json::serialize(joined);
  EXPECT_EQ(run_status(b->port(), thread, run), "success");
  EXPECT_EQ(count_calls("a"), 1);
  EXPECT_EQ(count_calls("b"), 0);
  EXPECT_EQ(gate_calls("a"), 1);
  EXPECT_EQ(gate_calls("b"), 1);
}

TEST_F(many_hubs_test, a_cancel_posted_to_one_server_stops_the_run_executing_on_another) {
  auto a = start_server("a");
  const auto thread = new_thread_on(a->port());
  const auto run = start_gated_on(a->port(), thread);
  wait_for_gate_calls("a", 1);
  auto b = start_server("b");
  const auto cancelled = post(b->port(), "/threads/" + thread + "/runs/" + run + "/cancel?wait=1", json::object{});
  ASSERT_EQ(cancelled.status, 204) << cancelled.describe();
  EXPECT_EQ(run_status(b->port(), thread, run), "interrupted");
  EXPECT_EQ(run_status(a->port(), thread, run), "interrupted");
  EXPECT_NE(get_json(a->port(), "/threads/" + thread).at("status"), "busy");
  EXPECT_EQ(gate_calls("a"), 1);
  EXPECT_EQ(gate_calls("b"), 0);
}

// A server whose own claim on a thread lapsed (its renewal late, nobody
// else took the thread) claims it again and goes on with the run it is
// executing: the run's stream takes what it records under the new claim
// (ADR 0037), to its end.
TEST_F(many_hubs_test, a_server_that_claims_its_own_lapsed_thread_again_keeps_streaming_its_run) {
  const auto [a, thread, run, first_fence] = gated_run_held_on("a");
  // The server's renewal may come first and extend the lease: again, until it claims the thread anew.
  while (queue_row("fence", thread) == first_fence) {
    sql("UPDATE switchboard_queue SET lease_expires_ns = 0 WHERE workflow_id = '" + thread + "'");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  open_gate("a");
  const auto joined = get_json(a->port(), "/threads/" + thread + "/runs/" + run + "/join");
  EXPECT_EQ(joined.at("status"), "completed") << json::serialize(joined);
  EXPECT_EQ(stream_records(run, "__end__"), "1") << "the stream ended, once";
  EXPECT_EQ(stream_records(run, "values"), "3") << "after each step and at the end: the last two under the new claim";
  EXPECT_EQ(gate_calls("a"), 1) << "the run went on: the gate step was not run again";
}

// Another server claimed the thread while this one executed its run, and
// died before doing anything with it; this one claims the thread again and
// finishes the run (its saves were never refused: nobody took the hub run
// over). What it recorded under the broken hold is refused; the run's end is
// still written, once, under its new claim.
TEST_F(many_hubs_test, a_run_whose_thread_another_server_held_meanwhile_still_ends_its_stream_once) {
  const auto [a, thread, run, first_fence] = gated_run_held_on("a");
  // A server that claimed it and died at once: its lease already lapsed.
  sql("UPDATE switchboard_queue SET owner = 'ghost', lease_expires_ns = 0,"
      " fence = nextval('switchboard_claim_fence_seq') WHERE workflow_id = '" + thread + "'");
  while (queue_row("owner", thread) == "ghost") std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_NE(queue_row("fence", thread), first_fence);
  open_gate("a");
  const auto joined = get_json(a->port(), "/threads/" + thread + "/runs/" + run + "/join");
  EXPECT_EQ(joined.at("status"), "completed") << json::serialize(joined);
  EXPECT_EQ(stream_records(run, "__end__"), "1") << "the stream ended, once";
  EXPECT_EQ(run_status(a->port(), thread, run), "success");
  EXPECT_EQ(gate_calls("a"), 1);
}

}  // namespace
}  // namespace switchboard::server::testing
