// Durable runs through the `switchboard` binary: a run killed at any commit
// point, or stopped by a signal, continues with `switchboard resume`; a
// stored run never decides which code runs or where credentials go; `runs`
// lists, shows, cancels and prunes; state files are private.
#include "cli_support.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <regex>

namespace switchboard::testing {
namespace {

namespace json = boost::json;

class durable_cli : public ::testing::Test {
 protected:
  std::string store() const { return "sqlite:" + db().string(); }
  std::filesystem::path db() const { return scratch_.path() / "runs.db"; }

  cli_result run(const std::string& request, std::vector<std::string> extra = {},
                 const std::vector<std::string>& env = {}) {
    std::vector<std::string> args{"run", sample_workflow.string(), "--input", request, "--store", store()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_switchboard(args, scratch_, env);
  }
  cli_result resume(const std::string& id, std::vector<std::string> extra = {},
                    const std::vector<std::string>& env = {}) {
    std::vector<std::string> args{"resume", id, "--workflow", sample_workflow.string(), "--store", store()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_switchboard(args, scratch_, env);
  }
  // The runs the store holds: id -> status.
  std::map<std::string, std::string> runs() {
    const auto r = run_switchboard({"runs", "--json", "--store", store()}, scratch_);
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    std::map<std::string, std::string> out;
    const auto listed = json::parse(r.out);
    for (const auto& v : listed.as_array()) {
      out[std::string(v.at("id").as_string())] = std::string(v.at("status").as_string());
    }
    return out;
  }

  temp_dir scratch_;
};

std::string id_in(const std::string& text) {
  std::smatch m;
  return std::regex_search(text, m, std::regex{R"(workflow id: (\S+))"}) ? m[1].str() : std::string{};
}

// Every write `run` and `resume` commit is a point where the process may
// die. Killed right after each one, the run is always found again, paused
// or interrupted, and one more `resume` (with the answer only when it was
// paused) finishes it with the same booking.
TEST_F(durable_cli, a_run_killed_after_any_commit_continues_to_the_same_booking) {
  const std::string request = "Piano lesson for Leo sometime next week";
  for (int kill_after = 1;; ++kill_after) {
    SCOPED_TRACE("killed after write " + std::to_string(kill_after));
    std::filesystem::remove(db());
    // A fresh calendar too: the lesson booked by the previous round would
    // be a conflict in this one.
    std::filesystem::remove_all(scratch_.path() / "scheduling");
    auto r = run(request, {"--answer", "Wednesday 5-6pm"},
                 {"SWITCHBOARD_FAULT_KILL_AFTER_WRITES=" + std::to_string(kill_after)});
    if (r.exit_code == 0) {
      // Past the last commit: nothing was killed.
      EXPECT_NE(r.out.find("Confirmed: \"Piano lesson\", Wed 2026-03-11 17:00"), std::string::npos) << describe(r);
      EXPECT_GT(kill_after, 4);
      break;
    }
    ASSERT_EQ(r.exit_code, 128 + SIGKILL) << describe(r);
    auto stored = runs();
    ASSERT_EQ(stored.size(), 1u);
    const auto [id, status] = *stored.begin();
    ASSERT_TRUE(status == "interrupted" || status == "awaiting_clarification" || status == "completed") << status;
    if (status == "completed") continue;
    const auto continued = status == "awaiting_clarification" ? resume(id, {"--answer", "Wednesday 5-6pm"})
                                                               : resume(id);
    if (status == "interrupted") {
      // Interrupted before the answer was saved, the question comes again;
      // after, the run completes.
      ASSERT_TRUE(continued.exit_code == 3 || continued.exit_code == 0) << describe(continued);
    } else {
      ASSERT_EQ(continued.exit_code, 0) << describe(continued);
    }
    if (continued.exit_code == 3) {
      const auto answered = resume(id, {"--answer", "Wednesday 5-6pm"});
      ASSERT_EQ(answered.exit_code, 0) << describe(answered);
      EXPECT_NE(answered.out.find("Confirmed: \"Piano lesson\", Wed 2026-03-11 17:00"), std::string::npos);
    } else {
      EXPECT_NE(continued.out.find("Confirmed: \"Piano lesson\", Wed 2026-03-11 17:00"), std::string::npos);
    }
    EXPECT_EQ(runs().at(id), "completed");
    ASSERT_LT(kill_after, 50) << "the run never completed without a kill";
  }
}

// A model server that accepts connections and never answers: the run's
// first step waits on it until a signal stops the run.
class silent_server {
 public:
  silent_server() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(fd_, 8);
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~silent_server() {
    if (client_ >= 0) ::close(client_);
    ::close(fd_);
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  // Waits (up to 30 s) until a request arrived.
  bool wait_for_request() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 30'000) != 1) return false;
    client_ = ::accept(fd_, nullptr, nullptr);
    pollfd c{client_, POLLIN, 0};
    return ::poll(&c, 1, 30'000) == 1;
  }

 private:
  int fd_ = -1;
  int client_ = -1;
  int port_ = 0;
};

class interrupted_by_signal : public durable_cli, public ::testing::WithParamInterface<int> {};

// SIGINT, SIGTERM and SIGHUP stop the step in flight; the run is saved as
// interrupted, and resume continues it (here offline: resume takes the
// model settings from its own command line, not from the stored run).
TEST_P(interrupted_by_signal, leaves_the_run_resumable) {
  const int signal_number = GetParam();
  silent_server server;
  const auto out = scratch_.path() / "signal-out.txt";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv("SWITCHBOARD_STATE_DIR", scratch_.path().c_str(), 1);
    ::setenv("OPENAI_API_KEY", "test-key", 1);
    ::unsetenv("OPENAI_BASE_URL");
    const std::string base_url = server.base_url();
    const std::string store_spec = store();
    std::freopen(out.c_str(), "w", stdout);
    std::freopen((out.string() + ".err").c_str(), "w", stderr);
    ::execl(switchboard_binary.c_str(), "switchboard", "run", sample_workflow.c_str(), "--input",
            "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan", "--base-url", base_url.c_str(),
            "--model", "gpt-test", "--store", store_spec.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_TRUE(server.wait_for_request());
  ::kill(child, signal_number);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const std::string printed = file_text(out) + file_text(out.string() + ".err");
  ASSERT_TRUE(WIFEXITED(status)) << "killed instead of stopping cleanly: " << printed;
  EXPECT_EQ(WEXITSTATUS(status), 128 + signal_number) << printed;
  const std::string id = id_in(printed);
  ASSERT_FALSE(id.empty()) << printed;
  EXPECT_NE(printed.find("switchboard resume " + id + " --workflow"), std::string::npos) << printed;
  EXPECT_EQ(runs().at(id), "interrupted");

  const auto continued = resume(id);
  ASSERT_EQ(continued.exit_code, 0) << describe(continued);
  EXPECT_NE(continued.out.find("offline: rule-based"), std::string::npos) << describe(continued);
  EXPECT_NE(continued.out.find("Confirmed: \"Soccer practice\", Sat 2026-03-07 14:00"), std::string::npos)
      << describe(continued);
}

INSTANTIATE_TEST_SUITE_P(signals, interrupted_by_signal, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& info) { return std::string(strsignal(info.param)).substr(0, 4); });

TEST_F(durable_cli, racing_resumes_have_one_winner) {
  const auto paused = run("Piano lesson for Leo sometime next week");
  ASSERT_EQ(paused.exit_code, 3) << describe(paused);
  const std::string id = id_in(paused.out);
  // Four resumes at once, through the shell, each with its own answer.
  std::string command;
  for (int i = 0; i < 4; ++i) {
    // In a subshell each, so that the four really run at once; in the
    // test's state directory, so that the calendar is the test's own.
    command += "( " + test::isolated_environment(scratch_.path()) + " " + shell_quoted(switchboard_binary.string()) +
               " resume " + id + " --workflow " + shell_quoted(sample_workflow.string()) + " --store " +
               shell_quoted(store()) + " --answer " + shell_quoted(i % 2 ? "Wednesday 5-6pm" : "Thursday 5-6pm") +
               " > " + shell_quoted((scratch_.path() / ("race" + std::to_string(i))).string()) + " 2>&1; echo $? >> " +
               shell_quoted((scratch_.path() / ("race" + std::to_string(i))).string()) + " ) &\n";
  }
  command += "wait\n";
  ASSERT_EQ(std::system(command.c_str()), 0);
  int winners = 0;
  for (int i = 0; i < 4; ++i) {
    const auto text = file_text(scratch_.path() / ("race" + std::to_string(i)));
    if (text.find("Confirmed:") != std::string::npos) {
      ++winners;
      continue;
    }
    const bool refused = text.find("is being resumed by another process (owner ") != std::string::npos ||
                         text.find("is completed") != std::string::npos ||
                         text.find("moved on since it was read") != std::string::npos;
    EXPECT_TRUE(refused) << text;
    EXPECT_NE(text.find("\n1\n"), std::string::npos) << text;
  }
  EXPECT_EQ(winners, 1);
  EXPECT_EQ(runs().at(id), "completed");
}

// The stored run is edited to name a plugin and a model server, as the old
// run settings in the input did: resume loads neither.
TEST_F(durable_cli, a_tampered_checkpoint_chooses_no_code_and_no_server) {
  const auto paused = run("Piano lesson for Leo sometime next week");
  ASSERT_EQ(paused.exit_code, 3) << describe(paused);
  const std::string id = id_in(paused.out);
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &handle), SQLITE_OK);
  const std::string evil = R"({"_switchboard":{"plugins":["/nonexistent/evil.so"],"base_url":"http://127.0.0.1:9/v1",)"
                           R"("workflow_file":"/nonexistent/workflow.json","model":"evil"},"request":"x"})";
  const std::string sql = "UPDATE journal SET record = json_set(record, '$.input', json('" + evil +
                          "')) WHERE seq = 1";
  char* message = nullptr;
  ASSERT_EQ(sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK) << (message ? message : "");
  ASSERT_GT(sqlite3_changes(handle), 0);
  sqlite3_close(handle);

  const auto resumed = resume(id, {"--answer", "Wednesday 5-6pm"});
  EXPECT_EQ(resumed.out.find("evil"), std::string::npos) << describe(resumed);
  EXPECT_EQ(resumed.err.find("evil.so"), std::string::npos) << describe(resumed);
  EXPECT_EQ(resumed.err.find("127.0.0.1:9"), std::string::npos) << describe(resumed);
  EXPECT_NE(resumed.out.find("offline: rule-based"), std::string::npos) << describe(resumed);
}

TEST_F(durable_cli, resume_needs_the_workflow_file_from_its_own_command_line) {
  const auto paused = run("Piano lesson for Leo sometime next week");
  const std::string id = id_in(paused.out);
  const auto r = run_switchboard({"resume", id, "--answer", "Wednesday", "--store", store()}, scratch_);
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("missing --workflow FILE: the file of workflow 'family_scheduling'"), std::string::npos)
      << describe(r);
  // No answer: the run stays paused, reported as a paused run is (exit 3).
  const auto no_answer = resume(id);
  EXPECT_EQ(no_answer.exit_code, 3) << describe(no_answer);
  EXPECT_NE(no_answer.err.find("is awaiting clarification and needs an answer"), std::string::npos)
      << describe(no_answer);
  EXPECT_EQ(runs().at(id), "awaiting_clarification");
}

TEST_F(durable_cli, a_changed_workflow_file_is_refused_and_the_run_kept) {
  const auto copy = scratch_.path() / "sample";
  std::filesystem::copy(sample_workflow.parent_path(), copy, std::filesystem::copy_options::recursive);
  const auto workflow = copy / "workflow.json";
  auto r = run_switchboard({"run", workflow.string(), "--input", "Piano lesson for Leo sometime next week", "--store",
                            store()},
                           scratch_);
  ASSERT_EQ(r.exit_code, 3) << describe(r);
  const std::string id = id_in(r.out);
  std::string text = file_text(workflow);
  text = std::regex_replace(text, std::regex{R"("auto_confirm")"}, R"("confirm_now")");
  std::ofstream(workflow) << text;
  r = run_switchboard({"resume", id, "--workflow", workflow.string(), "--answer", "Wednesday 5-6pm", "--store",
                       store()},
                      scratch_);
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("changed since workflow '" + id + "' started: nodes removed: auto_confirm; nodes added: "
                       "confirm_now"),
            std::string::npos)
      << describe(r);
  EXPECT_EQ(runs().at(id), "awaiting_clarification");
}

TEST_F(durable_cli, runs_lists_shows_cancels_and_prunes) {
  const auto done = run("Soccer practice for Maya on Saturday 2-4pm");
  ASSERT_EQ(done.exit_code, 0) << describe(done);
  const auto paused = run("Piano lesson for Leo sometime next week");
  const std::string id = id_in(paused.out);
  auto all = runs();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all.at(id), "awaiting_clarification");

  auto r = run_switchboard({"runs", "--status", "awaiting_clarification", "--store", store()}, scratch_);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find(id), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("completed"), std::string::npos) << describe(r);

  r = run_switchboard({"runs", "show", id, "--store", store()}, scratch_);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const auto state = json::parse(r.out);
  EXPECT_EQ(state.at("clarification").at("node").as_string(), "parse");

  r = run_switchboard({"runs", "cancel", id, "--store", store()}, scratch_);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(runs().at(id), "cancelled");
  r = run_switchboard({"runs", "cancel", id, "--store", store()}, scratch_);
  EXPECT_EQ(r.exit_code, 1) << describe(r);

  r = run_switchboard({"runs", "prune", "--older-than", "1d", "--store", store()}, scratch_);
  EXPECT_NE(r.out.find("Removed 0 finished run(s)"), std::string::npos) << describe(r);
  r = run_switchboard({"runs", "prune", "--older-than", "0s", "--store", store()}, scratch_);
  EXPECT_NE(r.out.find("Removed 2 finished run(s)"), std::string::npos) << describe(r);
  EXPECT_TRUE(runs().empty());

  r = run_switchboard({"runs", "prune", "--store", store()}, scratch_);
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  r = run_switchboard({"runs", "--status", "sleeping", "--store", store()}, scratch_);
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  r = run_switchboard({"runs", "show", "wf-unknown", "--store", store()}, scratch_);
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("wf-unknown"), std::string::npos) << describe(r);
}

TEST_F(durable_cli, the_default_state_directory_and_database_are_private) {
  const auto state_dir = scratch_.path() / "state";
  const auto r = run_switchboard({"run", sample_workflow.string(), "--input", "Soccer practice for Maya on Saturday"},
                                 scratch_, {"SWITCHBOARD_STATE_DIR=" + state_dir.string()});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  struct stat info {};
  ASSERT_EQ(::stat(state_dir.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((state_dir / "workflows.db").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST_F(durable_cli, an_input_that_cannot_be_stored_is_refused_naming_the_field) {
  const auto input = scratch_.path() / "input.json";
  std::ofstream(input) << R"({"request": "Soccer practice for Maya on Saturday", "budget": 1e999})";
  const auto r = run_switchboard({"run", sample_workflow.string(), "--input-file", input.string(), "--store", store()},
                                 scratch_);
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("the number at /budget is not finite"), std::string::npos) << describe(r);
  EXPECT_TRUE(runs().empty());
}

}  // namespace
}  // namespace switchboard::testing
