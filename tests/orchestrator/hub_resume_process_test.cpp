// Durable clarification: a workflow paused in one process (which then exits,
// or is killed) is resumed by this process from the SQLite store.
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/stores/sqlite_store.hpp>

#include <switchboard/orchestrator/error.hpp>

#include "resume_workflow.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace switchboard::orchestrator {
namespace {

struct child_result {
  int status = 0;
  std::string output;
};

child_result run_helper(const std::filesystem::path& db, const char* mode) {
  std::string command = std::string(SWITCHBOARD_PAUSE_HELPER) + " '" + db.string() + "' " + mode;
  child_result result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {-1, {}};
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) result.output += buffer;
  result.status = ::pclose(pipe);
  while (!result.output.empty() && (result.output.back() == '\n' || result.output.back() == '\r')) {
    result.output.pop_back();
  }
  return result;
}

class resume_process : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    db_ = std::filesystem::temp_directory_path() /
          ("switchboard_resume_" + std::to_string(::getpid()) + "_" + GetParam() + ".sqlite");
    std::filesystem::remove(db_);
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_.string() + suffix);
  }
  std::filesystem::path db_;
};

TEST_P(resume_process, a_second_process_resumes_the_paused_workflow) {
  auto child = run_helper(db_, GetParam());
  if (std::string(GetParam()) == "kill") {
    // popen runs the helper through sh, which reports a killed child as
    // exit status 128 + signal (or is itself replaced by the helper).
    const bool killed = (WIFSIGNALED(child.status) && WTERMSIG(child.status) == SIGKILL) ||
                        (WIFEXITED(child.status) && WEXITSTATUS(child.status) == 128 + SIGKILL);
    ASSERT_TRUE(killed) << "the helper should have been killed, status " << child.status;
  } else {
    ASSERT_TRUE(WIFEXITED(child.status));
    ASSERT_EQ(WEXITSTATUS(child.status), 0);
  }
  ASSERT_FALSE(child.output.empty()) << "the helper printed no workflow id";

  agents::agent_registry registry(testing::test_schemas());
  testing::register_resume_agents(registry);
  auto workflow = testing::resume_workflow().compile(registry);
  boost::asio::io_context io;
  hub h{io.get_executor(), registry,
        testing::options(stores::make_sqlite_checkpoint_store(db_), {}, std::make_shared<spdlog::logger>("test"))};

  auto paused = testing::run_sync(h.find(child.output));
  ASSERT_TRUE(paused);
  EXPECT_EQ(paused->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(paused->clarification->question, "Which day do you mean?");

  auto future = boost::asio::co_spawn(io, h.resume(workflow, child.output, "Tuesday 14:00"), boost::asio::use_future);
  io.run();
  auto s = future.get();
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(s.input.at("request"), "meet Tuesday");            // from the first process
  EXPECT_EQ(s.history("parse").size(), 2u);                     // the first run came from the store
  EXPECT_EQ(s.latest("book")->data.at("status"), "Tuesday 14:00");
  EXPECT_EQ(s.audit.size(), 3u);

  // Once completed, another resume is refused with a clear error.
  io.restart();
  auto again = boost::asio::co_spawn(io, h.resume(workflow, child.output, "again"), boost::asio::use_future);
  io.run();
  EXPECT_THROW(again.get(), orchestrator_error);
}

INSTANTIATE_TEST_SUITE_P(exit_modes, resume_process, ::testing::Values("exit", "kill"));

}  // namespace
}  // namespace switchboard::orchestrator
