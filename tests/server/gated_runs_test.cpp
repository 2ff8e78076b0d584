// Runs held inside a step (the gated test workflow: `first` counts, `wait`
// waits for the test to open its gate), so the tests see what a running
// run does to its thread: busy, not deleted, a second run refused or
// queued by the multitask strategy; cancel (interrupt, rollback); a failed
// run; streams joined while the run goes, and a client that goes away.
#include "server_test_support.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace switchboard::server::testing {
namespace {

using ::testing::HasSubstr;

class gated_test : public ::testing::Test {
 protected:
  gated_test() {
    server::serve_options o;
    o.workflows = {gated_settings(dir_.path())};
    o.store_url = "memory";
    server_.emplace(std::move(o));
  }
  std::uint16_t port() const { return server_->port(); }

  void open_gate() const { std::ofstream(dir_.path() / "open") << "open\n"; }
  int gate_calls() const { return lines_in(dir_.path() / "gate.log"); }
  int count_calls() const { return lines_in(dir_.path() / "count.log"); }
  void wait_for_gate_calls(int n) const {
    while (gate_calls() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  std::string new_thread() {
    const auto r = post(port(), "/threads", json::object{});
    EXPECT_EQ(r.status, 200) << r.describe();
    return std::string(r.json().at("thread_id").as_string());
  }
  reply start(const std::string& thread, json::object extra = {}, const std::string& how = "") {
    json::object body{{"assistant_id", "gated"}, {"input", json::object{{"n", 1}}}};
    for (auto& [k, v] : extra) body[k] = v;
    return post(port(), "/threads/" + thread + "/runs" + how, body);
  }
  std::string start_run(const std::string& thread, json::object extra = {}) {
    const auto r = start(thread, std::move(extra));
    EXPECT_EQ(r.status, 200) << r.describe();
    return r.status == 200 ? std::string(r.json().at("run_id").as_string()) : std::string{};
  }
  std::string run_status(const std::string& thread, const std::string& run) {
    const auto r = get(port(), "/threads/" + thread + "/runs/" + run);
    if (r.status != 200) return "HTTP " + std::to_string(r.status);
    return std::string(r.json().at("status").as_string());
  }
  std::string thread_status(const std::string& thread) {
    const auto r = get(port(), "/threads/" + thread);
    EXPECT_EQ(r.status, 200) << r.describe();
    return std::string(r.json().at("status").as_string());
  }
  // Polls (the hang guard bounds it) until the run has `status`.
  void wait_for_run_status(const std::string& thread, const std::string& run, const std::string& status) {
    while (run_status(thread, run) != status) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  json::value join(const std::string& thread, const std::string& run) {
    const auto r = get(port(), "/threads/" + thread + "/runs/" + run + "/join");
    EXPECT_EQ(r.status, 200) << r.describe();
    return r.json();
  }

  const switchboard::testing::hang_guard guard_{"a gated run test"};
  temp_dir dir_{"sb-server-gated"};
  std::optional<running_server> server_;
};

TEST_F(gated_test, a_running_run_keeps_its_thread_busy) {
  const auto thread = new_thread();
  const auto run = start_run(thread);
  wait_for_gate_calls(1);
  EXPECT_EQ(run_status(thread, run), "running");
  EXPECT_EQ(thread_status(thread), "busy");
  const auto busy = post(port(), "/threads/search", json::object{{"status", "busy"}});
  EXPECT_EQ(busy.json().as_array().size(), 1u);

  const auto deleted = del(port(), "/threads/" + thread);
  EXPECT_EQ(deleted.status, 409) << deleted.describe();
  const auto rejected = start(thread, {{"multitask_strategy", "reject"}});
  EXPECT_EQ(rejected.status, 409) << rejected.describe();
  EXPECT_THAT(std::string(rejected.json().at("detail").as_string()), HasSubstr("already running"));
  const auto resumed = post(port(), "/threads/" + thread + "/runs",
                            json::object{{"assistant_id", "gated"}, {"command", json::object{{"resume", "x"}}}});
  EXPECT_EQ(resumed.status, 409) << resumed.describe();
  EXPECT_EQ(del(port(), "/threads/" + thread + "/runs/" + run).status, 409);  // cancel it first
  const auto updated = post(port(), "/threads/" + thread + "/state",
                            json::object{{"values", json::object{}}, {"as_node", "wait"}});
  EXPECT_EQ(updated.status, 409) << updated.describe();  // POST /threads/{id}/state
  EXPECT_THAT(std::string(updated.json().at("detail").as_string()), HasSubstr("busy"));

  open_gate();
  EXPECT_EQ(join(thread, run).at("status"), "completed");
  EXPECT_EQ(run_status(thread, run), "success");
  EXPECT_EQ(thread_status(thread), "idle");
  EXPECT_EQ(count_calls(), 1);
}

TEST_F(gated_test, enqueued_runs_run_one_after_another) {
  const auto thread = new_thread();
  const auto first = start_run(thread);
  wait_for_gate_calls(1);
  const auto second = start_run(thread);  // enqueue: the default
  EXPECT_EQ(run_status(thread, second), "pending");
  EXPECT_EQ(count_calls(), 1);
  open_gate();
  EXPECT_EQ(join(thread, second).at("status"), "completed");
  EXPECT_EQ(run_status(thread, first), "success");
  EXPECT_EQ(run_status(thread, second), "success");
  EXPECT_EQ(thread_status(thread), "idle");
  EXPECT_EQ(count_calls(), 2);
  // Listed newest first.
  const auto runs = get(port(), "/threads/" + thread + "/runs").json();
  ASSERT_EQ(runs.as_array().size(), 2u);
  EXPECT_EQ(runs.at(0).at("run_id"), json::value(second));
  EXPECT_EQ(runs.at(1).at("run_id"), json::value(first));
}

TEST_F(gated_test, a_thread_stays_busy_while_its_next_run_goes) {
  const auto thread = new_thread();
  const auto first = start_run(thread, {{"input", json::object{{"gate", "a"}}}});
  wait_for_gate_calls(1);
  const auto second = start_run(thread, {{"input", json::object{{"gate", "b"}}}});
  std::ofstream(dir_.path() / "a") << "open\n";
  EXPECT_EQ(join(thread, first).at("status"), "completed");
  wait_for_gate_calls(2);  // the second run is at its own gate
  EXPECT_EQ(run_status(thread, second), "running");
  EXPECT_EQ(thread_status(thread), "busy");
  std::ofstream(dir_.path() / "b") << "open\n";
  EXPECT_EQ(join(thread, second).at("status"), "completed");
  EXPECT_EQ(thread_status(thread), "idle");
}

TEST_F(gated_test, a_thread_is_free_as_soon_as_its_run_is_answered) {
  // A client that got a run's answer (wait, join, the stream's end) acts on
  // the thread at once: resumes it, deletes it, starts the next run.
  open_gate();
  for (int i = 0; i < 30; ++i) {
    const auto thread = new_thread();
    const auto done = start(thread, {}, "/wait");
    ASSERT_EQ(done.status, 200) << done.describe();
    ASSERT_EQ(done.json().at("status"), "completed");
    const auto next = start(thread, {{"multitask_strategy", "reject"}});
    EXPECT_EQ(next.status, 200) << "round " << i << ": " << next.describe();
    if (next.status == 200) join(thread, std::string(next.json().at("run_id").as_string()));
    const auto failed = post(port(), "/threads/" + thread + "/runs/wait",
                             json::object{{"assistant_id", "gated"}, {"input", json::object{{"fail", true}}}});
    ASSERT_EQ(failed.status, 200) << failed.describe();
    const auto deleted = del(port(), "/threads/" + thread);
    EXPECT_EQ(deleted.status, 204) << "round " << i << ": " << deleted.describe();
  }
}

TEST_F(gated_test, a_cancelled_run_is_interrupted_and_its_thread_idle) {
  const auto thread = new_thread();
  const auto run = start_run(thread);
  wait_for_gate_calls(1);
  const auto cancelled = post(port(), "/threads/" + thread + "/runs/" + run + "/cancel?wait=1&action=interrupt",
                              json::object{});
  EXPECT_EQ(cancelled.status, 204) << cancelled.describe();
  EXPECT_TRUE(cancelled.body.empty());
  EXPECT_EQ(run_status(thread, run), "interrupted");
  EXPECT_EQ(thread_status(thread), "idle");
  EXPECT_EQ(join(thread, run).at("status"), "interrupted");
  const auto again = post(port(), "/threads/" + thread + "/runs/" + run + "/cancel", json::object{});
  EXPECT_EQ(again.status, 409) << again.describe();

  // The thread takes a new run.
  open_gate();
  const auto next = start_run(thread);
  EXPECT_EQ(join(thread, next).at("status"), "completed");
}

TEST_F(gated_test, a_pending_run_cancelled_never_starts) {
  const auto thread = new_thread();
  const auto first = start_run(thread);
  wait_for_gate_calls(1);
  const auto second = start_run(thread);
  const auto cancelled = post(port(), "/threads/" + thread + "/runs/" + second + "/cancel", json::object{});
  EXPECT_EQ(cancelled.status, 202) << cancelled.describe();
  EXPECT_EQ(run_status(thread, second), "interrupted");
  open_gate();
  EXPECT_EQ(join(thread, first).at("status"), "completed");
  EXPECT_EQ(thread_status(thread), "idle");
  EXPECT_EQ(count_calls(), 1);
}

TEST_F(gated_test, a_run_rolled_back_is_gone) {
  const auto thread = new_thread();
  const auto run = start_run(thread);
  wait_for_gate_calls(1);
  const auto cancelled = post(port(), "/threads/" + thread + "/runs/" + run + "/cancel?wait=1&action=rollback",
                              json::object{});
  EXPECT_EQ(cancelled.status, 204) << cancelled.describe();
  EXPECT_EQ(get(port(), "/threads/" + thread + "/runs/" + run).status, 404);
  EXPECT_TRUE(get(port(), "/threads/" + thread + "/runs").json().as_array().empty());
  EXPECT_EQ(thread_status(thread), "idle");
}

TEST_F(gated_test, the_interrupt_strategy_stops_the_running_run_for_the_new_one) {
  const auto thread = new_thread();
  const auto first = start_run(thread);
  wait_for_gate_calls(1);
  const auto second = start_run(thread, {{"multitask_strategy", "interrupt"}});
  wait_for_run_status(thread, first, "interrupted");
  wait_for_gate_calls(2);  // the second run is at its gate
  EXPECT_EQ(run_status(thread, second), "running");
  open_gate();
  EXPECT_EQ(join(thread, second).at("status"), "completed");
  EXPECT_EQ(run_status(thread, first), "interrupted");
  EXPECT_EQ(thread_status(thread), "idle");
}

TEST_F(gated_test, a_failed_run_is_an_error_and_its_thread_too) {
  const auto thread = new_thread();
  const auto r = post(port(), "/threads/" + thread + "/runs/wait",
                      json::object{{"assistant_id", "gated"}, {"input", json::object{{"fail", true}}}});
  ASSERT_EQ(r.status, 200) << r.describe();
  const auto error = r.json().at("__error__");
  EXPECT_THAT(std::string(error.at("message").as_string()), HasSubstr("asked to fail"));
  EXPECT_EQ(thread_status(thread), "error");
  const auto runs = get(port(), "/threads/" + thread + "/runs").json();
  ASSERT_EQ(runs.as_array().size(), 1u);
  EXPECT_EQ(runs.at(0).at("status"), "error");
  // The stream says so too.
  const std::string run(runs.at(0).at("run_id").as_string());
  const auto events = parse_sse(get(port(), "/threads/" + thread + "/runs/" + run + "/stream",
                                    {{"last-event-id", "-1"}}).body);
  EXPECT_TRUE(std::ranges::any_of(events, [](const sse_event& e) { return e.event == "error"; }));
}

TEST_F(gated_test, streams_joined_while_the_run_goes_all_get_every_event) {
  const auto thread = new_thread();
  const auto run = start_run(thread, {{"stream_mode", json::array{"values", "updates", "debug"}}});
  reply joined[2];
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i)
    clients.emplace_back([&, i] {
      joined[i] = get(port(), "/threads/" + thread + "/runs/" + run + "/stream", {{"last-event-id", "-1"}});
    });
  wait_for_gate_calls(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a few heartbeats (100 ms) while it waits
  open_gate();
  for (auto& c : clients) c.join();
  for (const auto& r : joined) {
    ASSERT_EQ(r.status, 200) << r.describe();
    EXPECT_THAT(r.body, HasSubstr(": heartbeat\n\n"));
  }
  const auto a = parse_sse(joined[0].body);
  const auto b = parse_sse(joined[1].body);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].data, b[i].data);
  }
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.front().event, "metadata");
  EXPECT_EQ(a.back().event, "values");
  EXPECT_EQ(a.back().json().at("status"), "completed");
}

TEST_F(gated_test, a_join_after_the_last_event_of_a_finished_run_ends_at_once) {
  open_gate();
  const auto thread = new_thread();
  const auto run = start_run(thread);
  EXPECT_EQ(join(thread, run).at("status"), "completed");
  const auto all = parse_sse(get(port(), "/threads/" + thread + "/runs/" + run + "/stream",
                                 {{"last-event-id", "-1"}}).body);
  ASSERT_FALSE(all.empty());
  // An id at or past the end (a client's stale or made-up id): nothing
  // more will come, so the stream ends instead of sending heartbeats.
  for (const auto& id : {all.back().id, std::to_string(std::stoll(all.back().id) + 1), std::string("100000")}) {
    const auto r = get(port(), "/threads/" + thread + "/runs/" + run + "/stream", {{"last-event-id", id}});
    EXPECT_EQ(r.status, 200) << r.describe();
    EXPECT_TRUE(parse_sse(r.body).empty()) << id << ": " << r.body;
  }
}

// /metrics counts a stream while it is open: a join-stream of a held run is
// counted until the run ends and the stream with it.
TEST_F(gated_test, metrics_count_a_stream_while_it_is_open) {
  const auto open_streams = [&] {
    const auto page = get(port(), "/metrics");
    EXPECT_EQ(page.status, 200);
    for (const char* n : {"0", "1", "2"})
      if (page.body.find(std::string("\nswitchboard_serve_open_streams ") + n + "\n") != std::string::npos)
        return std::stoi(n);
    return -1;
  };
  EXPECT_EQ(open_streams(), 0);
  const auto thread = new_thread();
  const auto run = start_run(thread);
  std::thread joining([&] { get(port(), "/threads/" + thread + "/runs/" + run + "/stream"); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (open_streams() != 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(open_streams(), 1);
  open_gate();
  joining.join();
  EXPECT_EQ(open_streams(), 0);  // counted down before its last chunk was sent
}

TEST_F(gated_test, a_stream_whose_client_goes_away_cancels_its_run_when_asked_to) {
  const auto thread = new_thread();
  // The request by hand: read up to the first event, then hang up.
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port()));
  const std::string body = json::serialize(json::object{
      {"assistant_id", "gated"}, {"input", json::object{{"n", 1}}}, {"on_disconnect", "cancel"}});
  const std::string request_text = "POST /threads/" + thread + "/runs/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   "Content-Type: application/json\r\nContent-Length: " +
                                   std::to_string(body.size()) + "\r\n\r\n" + body;
  asio::write(socket, asio::buffer(request_text));
  std::string received;
  while (received.find("event: metadata") == std::string::npos) {
    char chunk[1024];
    const auto n = socket.read_some(asio::buffer(chunk));
    received.append(chunk, n);
  }
  const auto at = received.find("\"run_id\":\"");
  ASSERT_NE(at, std::string::npos) << received;
  const auto run = received.substr(at + 10, 36);
  wait_for_gate_calls(1);
  socket.close();

  wait_for_run_status(thread, run, "interrupted");  // noticed at a heartbeat
  EXPECT_EQ(join(thread, run).at("status"), "interrupted");  // once over, its thread is updated too
  EXPECT_EQ(thread_status(thread), "idle");
}

}  // namespace
}  // namespace switchboard::server::testing
