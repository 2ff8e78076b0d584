// --retention: finished runs older than the retention are removed with
// their streams, and stay removed after a restart; their threads stay,
// with their values and state, and a paused thread can still be answered.
#include "server_fixture.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace switchboard::server::testing {
namespace {

class retention_test : public server_test {
 protected:
  server::serve_options options() override {
    auto o = server_test::options();
    o.store_url = "sqlite:" + (dir_.path() / "runs.db").string();
    o.retention = std::chrono::seconds(1);
    return o;
  }
  // Waits (the hang guard bounds it) until GET of the run answers 404.
  void wait_until_removed(const std::string& thread, const std::string& run) {
    while (get(port(), "/threads/" + thread + "/runs/" + run).status != 404)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string only_run_of(const std::string& thread) {
    const auto r = get(port(), "/threads/" + thread + "/runs");
    EXPECT_EQ(r.status, 200) << r.describe();
    const auto runs = r.json().as_array();
    EXPECT_EQ(runs.size(), 1u);
    return runs.empty() ? std::string{} : std::string(runs.at(0).at("run_id").as_string());
  }
};

TEST_F(retention_test, a_finished_run_goes_with_its_stream_and_its_thread_stays) {
  const auto thread = create_thread();
  const auto values = values_of(run_wait(thread, question));
  ASSERT_EQ(values.at("status"), "completed");
  const auto run = only_run_of(thread);
  ASSERT_EQ(get(port(), "/threads/" + thread + "/runs/" + run + "/stream").status, 200) << "its stream, before";

  wait_until_removed(thread, run);
  EXPECT_EQ(get(port(), "/threads/" + thread + "/runs/" + run + "/stream").status, 404);
  EXPECT_TRUE(get(port(), "/threads/" + thread + "/runs").json().as_array().empty());
  EXPECT_EQ(thread_status(thread), "idle");
  EXPECT_EQ(this->thread(thread).at("values").at("status"), "completed");
  const auto state = get(port(), "/threads/" + thread + "/state");
  ASSERT_EQ(state.status, 200) << state.describe();
  EXPECT_EQ(state.json().at("values").at("status"), "completed");

  // Removed for good: a restarted server does not read it back.
  server_.reset();
  start();
  EXPECT_EQ(get(port(), "/threads/" + thread + "/runs/" + run).status, 404);
  EXPECT_EQ(thread_status(thread), "idle");
}

TEST_F(retention_test, a_paused_thread_whose_run_was_removed_still_takes_its_answer) {
  const auto thread = create_thread();
  ASSERT_EQ(values_of(run_wait(thread, soccer)).at("status"), "awaiting_approval");
  wait_until_removed(thread, only_run_of(thread));
  EXPECT_EQ(thread_status(thread), "interrupted");

  const auto done = resume(thread, json::object{{"decision", "approve"}});
  EXPECT_EQ(values_of(done).at("status"), "completed") << done.body;
}

}  // namespace
}  // namespace switchboard::server::testing
