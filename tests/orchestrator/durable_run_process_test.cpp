// Durable, exactly-once runs under injected faults: a process killed right
// after each store write, processes racing to answer one question, an owner
// that died or stalled, interrupt(), a changed definition, values that
// cannot be stored. The processes are switchboard_orchestrator_durable_helper
// (durable_helper.cpp); every agent call of every process is counted in a
// file (durable_workflow.hpp).
#include <switchboard/orchestrator/hub.hpp>

#include <switchboard/orchestrator/error.hpp>
#include <switchboard/protocol/limits.hpp>

#include "durable_workflow.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

extern char** environ;

namespace switchboard::orchestrator {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::read_calls;

using calls_t = std::map<std::string, int>;
// A run + one answer, nothing run twice: "ask" asks, then answers.
const calls_t once_each{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", 1}};

std::shared_ptr<spdlog::logger> silent() { return std::make_shared<spdlog::logger>("durable-test"); }

// The exit status the helper uses for an orchestrator_error.
int exit_code_of(orchestrator_errc code) { return 40 + static_cast<int>(code); }

bool exited_with(int status, int code) { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
bool was_killed(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// The value of the line "key=value" of a helper's output ("" if none).
std::string field(const std::string& output, const std::string& key) {
  const std::string prefix = key + "=";
  std::size_t at = 0;
  while (at < output.size()) {
    auto end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    if (output.compare(at, prefix.size(), prefix) == 0) return output.substr(at + prefix.size(), end - at - prefix.size());
    at = end + 1;
  }
  return {};
}

struct outcome {
  int status = 0;
  std::string output;
  std::string describe() const { return describe_status(status) + ", output:\n" + output; }
};

// One helper process with its stdout on a pipe. Reads give up after 60 s
// (the process is then killed): a hang fails the test instead of stalling it.
// The destructor kills and reaps a process still running.
class helper_process {
 public:
  explicit helper_process(std::vector<std::string> args, int stdin_fd = -1) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    if (stdin_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    args.insert(args.begin(), SWITCHBOARD_DURABLE_HELPER);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    if (rc != 0) {
      ::close(out[0]);
      pid_ = -1;
      throw std::system_error(rc, std::generic_category(), "posix_spawn " + args[0]);
    }
    out_ = out[0];
  }
  helper_process(const helper_process&) = delete;
  helper_process& operator=(const helper_process&) = delete;
  ~helper_process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      reap();
    }
    if (out_ >= 0) ::close(out_);
  }

  pid_t pid() const noexcept { return pid_; }

  // The next line it prints, without its newline ("" at end of output).
  std::string read_line() {
    std::string line;
    char c;
    while (read_byte(c) && c != '\n') line += c;
    return line;
  }

  // Everything it still prints, then its wait status.
  outcome finish() {
    outcome o;
    char c;
    while (read_byte(c)) o.output += c;
    o.output += pending_note_;
    o.status = reap();
    return o;
  }

  void kill_now() { ::kill(pid_, SIGKILL); }

  int output_fd() const noexcept { return out_; }
  // One read of what it printed (after poll() said there is something);
  // false at the end of its output.
  bool read_available(std::string& into) {
    char buffer[4096];
    const auto n = ::read(out_, buffer, sizeof buffer);
    if (n > 0) into.append(buffer, static_cast<std::size_t>(n));
    if (n > 0 || (n < 0 && errno == EINTR)) return true;
    ::close(out_);
    out_ = -1;
    return false;
  }

  int reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  bool read_byte(char& c) {
    if (out_ < 0) return false;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{out_, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        pending_note_ = "\n[the helper printed nothing for 60 s and was killed]\n";
        kill_now();
        ::close(out_);
        out_ = -1;
        return false;
      }
      const auto n = ::read(out_, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n == 1) return true;
      ::close(out_);
      out_ = -1;
      return false;
    }
  }

  pid_t pid_ = -1;
  int out_ = -1;
  std::string pending_note_;
};

// Finishes every process, each reaped as soon as its output ends: in the
// order they exit, so that none lingers as a zombie (still "alive" for the
// dead-owner check) while the others still run. Gives up after 60 s.
std::vector<outcome> finish_all(std::vector<std::unique_ptr<helper_process>>& processes) {
  std::vector<outcome> outcomes(processes.size());
  std::vector<bool> done(processes.size(), false);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < processes.size(); ++i) {
      if (done[i]) continue;
      fds.push_back(pollfd{processes[i]->output_fd(), POLLIN, 0});
      which.push_back(i);
    }
    if (fds.empty()) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      for (auto i : which) {
        processes[i]->kill_now();
        auto rest = processes[i]->finish();
        outcomes[i].output += rest.output + "\n[still running after 60 s: killed]\n";
        outcomes[i].status = rest.status;
        done[i] = true;
      }
      break;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      const auto i = which[k];
      if (!processes[i]->read_available(outcomes[i].output)) {
        outcomes[i].status = processes[i]->reap();
        done[i] = true;
      }
    }
  }
  return outcomes;
}

class durable_run : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("switchboard_durable_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = (dir_ / "runs.sqlite").string();
    store_ = make_sqlite_checkpoint_store(db_);
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    guard_.reset();
    io_.stop();
    thread_.join();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Runs `operation` on the test's io_context (a thread of its own) and
  // waits for it; rethrows its exception.
  template <class T>
  T await(asio::awaitable<T> operation) {
    return asio::co_spawn(io_, std::move(operation), asio::use_future).get();
  }

  std::string counter(const std::string& name) const { return (dir_ / (name + ".calls")).string(); }

  hub_options hub_opts() const { return testing::options(store_, {}, silent()); }

  // resume() that must be refused: returns the error.
  orchestrator_error refused_resume(hub& h, std::shared_ptr<const compiled_workflow> workflow, const std::string& id,
                                    resume_options options) {
    try {
      auto s = await(h.resume(std::move(workflow), id, std::move(options)));
      ADD_FAILURE() << "resume of '" << id << "' was accepted; it ended " << to_string(s.status);
    } catch (const orchestrator_error& e) {
      return e;
    }
    return orchestrator_error(orchestrator_errc::invalid_workflow, "accepted");
  }

  resume_options answer(std::string text) const {
    resume_options o;
    o.answer = std::move(text);
    return o;
  }

  std::filesystem::path dir_;
  std::string db_;
  std::shared_ptr<checkpoint_store> store_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_ = asio::make_work_guard(io_);
  std::thread thread_;
};

json::object durable_input() { return json::object{{"request", "durable"}}; }

run_options with_id(std::string id) {
  run_options o;
  o.workflow_id = std::move(id);
  return o;
}

// ---------------------------------------------------------------- 1. SIGKILL after every write

// A process killed right after a write has no step in flight: the write
// that recorded a step's result came before the next agent call. So however
// a run + resume is cut, continuing it in new processes must end it with
// every agent called exactly as often as in an uninterrupted run.
TEST_F(durable_run, a_run_killed_right_after_any_store_write_continues_without_running_a_step_again) {
  auto reference = helper_process({"run", db_, counter("reference"), "reference", "0", "end"}).finish();
  ASSERT_TRUE(exited_with(reference.status, 0)) << reference.describe();
  EXPECT_EQ(field(reference.output, "status"), "completed");
  EXPECT_EQ(field(reference.output, "result"), "done with the answer");
  EXPECT_EQ(read_calls(counter("reference")), once_each);
  const int writes = std::stoi("0" + field(reference.output, "writes"));
  // create, a save after each of 5 steps, the pause, the claim, the answer, the end
  ASSERT_GE(writes, 8) << reference.output;

  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, "");
  hub reader{io_.get_executor(), registry, hub_opts()};

  for (int n = 1; n <= writes; ++n) {
    SCOPED_TRACE("killed right after store write " + std::to_string(n) + " of " + std::to_string(writes));
    const std::string id = "kill-" + std::to_string(n);
    const std::string calls = counter(id);
    helper_process first({"run", db_, calls, id, std::to_string(n), "end"});
    const pid_t dead = first.pid();
    auto killed = first.finish();
    ASSERT_TRUE(was_killed(killed.status)) << killed.describe();

    // Never stuck: paused, finished, interrupted, or running under the
    // dead process (which the next claim recognizes at once).
    auto cp = await(store_->load(id));
    ASSERT_TRUE(cp) << "the first write creates the run";
    ASSERT_THAT(cp->status, AnyOf("running", "interrupted", "awaiting_clarification", "completed"));
    if (cp->status == "running") {
      EXPECT_THAT(cp->owner, HasSubstr(":" + std::to_string(dead) + ":"));
    }

    std::string trail = "after the kill: " + cp->status;
    bool needs_answer = false;  // a continue was refused: the run still waits for its answer
    for (int round = 0; round < 4; ++round) {
      cp = await(store_->load(id));
      ASSERT_TRUE(cp);
      if (cp->status == "completed") break;
      std::vector<std::string> args;
      if (cp->status == "awaiting_clarification" || needs_answer) {
        args = {"answer", db_, calls, id, "the answer"};
      } else {
        ASSERT_THAT(cp->status, AnyOf("running", "interrupted")) << trail;
        args = {"continue", db_, calls, id};
      }
      auto next = helper_process(args).finish();
      trail += "; " + args[0] + " -> " + field(next.output, "status") + field(next.output, "error");
      if (args[0] == "continue" && exited_with(next.status, exit_code_of(orchestrator_errc::answer_required))) {
        needs_answer = true;
        continue;
      }
      // The helper's lease is 30 s: only the dead-owner check lets this
      // claim through now; run_owned here means the run was stuck.
      ASSERT_TRUE(exited_with(next.status, 0)) << trail << "\n" << next.describe();
    }
    auto final_state = await(reader.find(id));
    ASSERT_TRUE(final_state);
    EXPECT_EQ(final_state->status, workflow_status::completed) << trail;
    ASSERT_TRUE(final_state->result) << trail;
    EXPECT_EQ(final_state->result->data.at("status"), "done with the answer") << trail;
    EXPECT_EQ(final_state->history("one").size(), 1u) << trail;
    EXPECT_EQ(final_state->clarification_answers, std::vector<std::string>{"the answer"}) << trail;
    EXPECT_EQ(read_calls(calls), once_each) << trail;
  }
}

// ---------------------------------------------------------------- 2. racing resumes

// Processes that answer one question at the same moment: exactly one wins
// and runs the rest of the workflow with its answer; the others are refused
// with a clear error; nothing after the pause runs twice.
TEST_F(durable_run, of_processes_racing_to_answer_one_question_exactly_one_wins) {
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, "");
  hub reader{io_.get_executor(), registry, hub_opts()};
  const std::vector<int> refusals{exit_code_of(orchestrator_errc::run_owned),
                                  exit_code_of(orchestrator_errc::not_awaiting_clarification),
                                  exit_code_of(orchestrator_errc::run_moved_on)};
  std::map<std::string, int> refusal_kinds;

  for (int round = 0; round < 100 && !HasFailure(); ++round) {
    const int racers = 2 + round % 7;
    SCOPED_TRACE("round " + std::to_string(round) + ", " + std::to_string(racers) + " racers");
    const std::string id = "race-" + std::to_string(round);
    const std::string calls = counter(id);
    auto paused = helper_process({"run", db_, calls, id, "0", "pause"}).finish();
    ASSERT_TRUE(exited_with(paused.status, 0)) << paused.describe();
    ASSERT_EQ(field(paused.output, "status"), "awaiting_clarification");

    // Each racer sets up its hub, prints "ready" and waits for the end of
    // its stdin: closing the pipe's last write end starts them all at once.
    int go[2];
    ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
    std::vector<std::unique_ptr<helper_process>> processes;
    for (int i = 0; i < racers; ++i) {
      processes.push_back(std::make_unique<helper_process>(
          std::vector<std::string>{"answer", db_, calls, id, "answer-" + std::to_string(i), "wait"}, go[0]));
    }
    ::close(go[0]);
    bool all_ready = true;
    for (auto& p : processes) all_ready = p->read_line() == "ready" && all_ready;
    ::close(go[1]);
    ASSERT_TRUE(all_ready);

    int winner = -1;
    auto outcomes = finish_all(processes);
    for (int i = 0; i < racers; ++i) {
      const auto& o = outcomes[i];
      if (exited_with(o.status, 0)) {
        EXPECT_EQ(winner, -1) << "racers " << winner << " and " << i << " both resumed the run";
        winner = i;
        EXPECT_EQ(field(o.output, "status"), "completed") << o.describe();
        EXPECT_EQ(field(o.output, "result"), "done with answer-" + std::to_string(i)) << o.describe();
      } else {
        const bool refused = WIFEXITED(o.status) && std::find(refusals.begin(), refusals.end(),
                                                              WEXITSTATUS(o.status)) != refusals.end();
        EXPECT_TRUE(refused) << "racer " << i << ": " << o.describe();
        const auto error = field(o.output, "error");
        EXPECT_THAT(error, HasSubstr(id)) << "the refusal names the run";
        ++refusal_kinds[error.substr(0, error.find(':'))];
      }
    }
    ASSERT_NE(winner, -1) << "nobody resumed the run";
    auto final_state = await(reader.find(id));
    ASSERT_TRUE(final_state);
    EXPECT_EQ(final_state->status, workflow_status::completed);
    ASSERT_TRUE(final_state->result);
    EXPECT_EQ(final_state->result->data.at("status"), json::value("done with answer-" + std::to_string(winner)));
    EXPECT_EQ(final_state->clarification_answers, std::vector<std::string>{"answer-" + std::to_string(winner)});
    EXPECT_EQ(read_calls(calls), once_each);
  }
  std::string kinds;
  for (const auto& [kind, count] : refusal_kinds) kinds += kind + " " + std::to_string(count) + "  ";
  RecordProperty("refusals", kinds);
}

// What a racing process can see: load() answers what the run looked like
// a moment ago (here: once, a snapshot taken earlier); all else is the store.
class stale_once_store final : public forwarding_checkpoint_store {
 public:
  stale_once_store(std::shared_ptr<checkpoint_store> inner, checkpoint stale)
      : forwarding_checkpoint_store(std::move(inner)), stale_(std::move(stale)) {}

  asio::awaitable<std::optional<checkpoint>> load(std::string workflow_id) override {
    if (stale_ && workflow_id == stale_->workflow_id) {
      auto snapshot = std::move(stale_);
      stale_.reset();
      co_return snapshot;
    }
    co_return co_await inner().load(std::move(workflow_id));
  }

 private:
  std::optional<checkpoint> stale_;
};

// The race above, made deterministic: a resume read the run while its
// owner was still working on it; by the time it checks the owner, the owner
// has paused (or finished) the run and exited. That run was never
// interrupted: the answer must not be refused with "continue it without an
// answer" (answer_required); the run moved on since it was read.
TEST_F(durable_run, a_resume_that_read_the_run_before_its_owner_moved_on_is_not_told_it_was_interrupted) {
  const auto calls = counter("stale");
  // A run whose owner died right after creating it ...
  auto killed = helper_process({"run", db_, calls, "stale", "1", "end"}).finish();
  ASSERT_TRUE(was_killed(killed.status)) << killed.describe();
  auto stale = await(store_->load("stale"));
  ASSERT_TRUE(stale);
  ASSERT_EQ(stale->status, "running");
  // ... was continued by another process, which paused it and exited.
  auto continued = helper_process({"continue", db_, calls, "stale"}).finish();
  ASSERT_TRUE(exited_with(continued.status, 0)) << continued.describe();
  ASSERT_EQ(field(continued.output, "status"), "awaiting_clarification");

  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls);
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry,
        testing::options(std::make_shared<stale_once_store>(store_, *stale), {}, silent())};
  try {
    auto s = await(h.resume(workflow, "stale", answer("the answer")));
    EXPECT_EQ(s.status, workflow_status::completed);  // taking the answer after a fresh read is fine too
  } catch (const orchestrator_error& e) {
    EXPECT_THAT(e.errc(), AnyOf(orchestrator_errc::run_moved_on, orchestrator_errc::not_awaiting_clarification))
        << to_string(e.errc()) << ": " << e.what();
  }
  auto cp = await(store_->load("stale"));
  ASSERT_TRUE(cp);
  EXPECT_THAT(cp->status, AnyOf("awaiting_clarification", "completed"));
}

// ---------------------------------------------------------------- 3. dead owner, expired lease

// The owner process dies with a step in flight (SIGKILL): on this host its
// run is continued at once, without waiting for its 30 s lease; the step in
// flight runs again (its result was never recorded), the saved one does not.
TEST_F(durable_run, a_run_whose_owner_process_died_is_continued_at_once) {
  const auto calls = counter("dead-owner");
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls);
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  helper_process owner({"run", db_, calls, "dead-owner", "0", "end", "block-two"});
  ASSERT_EQ(owner.read_line(), "blocking");
  auto cp = await(store_->load("dead-owner"));
  ASSERT_TRUE(cp);
  EXPECT_EQ(cp->status, "running");
  EXPECT_EQ(cp->step, 1) << "step 1 (one) is saved, step 2 (two) is in flight";
  EXPECT_THAT(cp->owner, HasSubstr(":" + std::to_string(owner.pid()) + ":"));

  // While its owner lives, the run is refused, naming the owner.
  auto live = refused_resume(h, workflow, "dead-owner", resume_options{});
  EXPECT_EQ(live.errc(), orchestrator_errc::run_owned) << live.what();
  EXPECT_THAT(live.what(), HasSubstr(cp->owner));

  owner.kill_now();
  EXPECT_TRUE(was_killed(owner.reap()));
  cp = await(store_->load("dead-owner"));
  ASSERT_TRUE(cp);
  EXPECT_THAT(cp->status, AnyOf("running", "interrupted"));

  auto s = await(h.resume(workflow, "dead-owner", resume_options{}));
  EXPECT_EQ(s.status, workflow_status::awaiting_clarification) << (s.first_error() ? s.first_error()->message : "");
  EXPECT_EQ(s.history("one").size(), 1u);
  s = await(h.resume(workflow, "dead-owner", answer("the answer")));
  EXPECT_EQ(s.status, workflow_status::completed);
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->data.at("status"), "done with the answer");
  EXPECT_EQ(read_calls(calls), (calls_t{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", 2}}));
}

// Another host's owner stalls (a frozen process, a partition): its run is
// refused while its lease holds, continued once it expired, and the stalled
// owner, when it wakes up, can no longer save over the new owner's run.
TEST_F(durable_run, a_run_abandoned_by_another_host_is_continued_once_its_lease_expired) {
  const auto calls = counter("abandoned");
  std::atomic<bool> two_in_flight{false};
  asio::steady_timer* stalled = nullptr;  // the first call of "two", on io_a
  testing::durable_hooks hooks;
  hooks.hold_two = [&](int call) -> asio::awaitable<void> {
    if (call != 1) co_return;
    asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
    stalled = &timer;
    two_in_flight = true;
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));  // woken: answers normally
    stalled = nullptr;
  };
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls, std::move(hooks));
  auto workflow = testing::durable_workflow().compile(registry);

  // The other host's hub, on an io_context this test runs by hand.
  asio::io_context io_a;
  auto other_options = hub_opts();
  other_options.owner_id = "other-host:1:1";
  other_options.lease = 50ms;
  hub other{io_a.get_executor(), registry, other_options};
  auto stalled_run = other.start(workflow, durable_input(), with_id("abandoned"));
  while (!two_in_flight && io_a.run_one() > 0) {
  }
  ASSERT_TRUE(two_in_flight);
  // From here io_a does not run: the other host's hub is frozen.

  hub h{io_.get_executor(), registry, hub_opts()};
  // While the lease holds (renewed here as the frozen owner would, so the
  // test does not depend on how fast it runs), the run is refused.
  EXPECT_EQ(await(store_->renew("other-host:1:1", 10min)), 1u);
  auto owned = refused_resume(h, workflow, "abandoned", resume_options{});
  EXPECT_EQ(owned.errc(), orchestrator_errc::run_owned) << owned.what();
  EXPECT_THAT(owned.what(), HasSubstr("other-host:1:1"));

  // Its last renewal was for 50 ms; then it stopped.
  EXPECT_EQ(await(store_->renew("other-host:1:1", 50ms)), 1u);
  std::this_thread::sleep_for(100ms);
  auto cp = await(store_->load("abandoned"));
  ASSERT_TRUE(cp);
  EXPECT_EQ(cp->status, "interrupted") << "a running run whose lease expired reads as interrupted";
  const auto stale_fence = cp->fence;

  auto s = await(h.resume(workflow, "abandoned", resume_options{}));
  EXPECT_EQ(s.status, workflow_status::awaiting_clarification) << (s.first_error() ? s.first_error()->message : "");
  s = await(h.resume(workflow, "abandoned", answer("the answer")));
  ASSERT_EQ(s.status, workflow_status::completed);
  auto finished = await(store_->load("abandoned"));
  ASSERT_TRUE(finished);
  EXPECT_GT(finished->fence, stale_fence);

  // The frozen owner wakes up: "two" answers, but the save of its step
  // carries the old fence and is refused; the stored run is untouched.
  asio::post(io_a, [&] {
    if (stalled) stalled->cancel();
  });
  io_a.run();
  ASSERT_TRUE(stalled_run.done());
  auto woken = stalled_run.wait();
  EXPECT_EQ(woken.status, workflow_status::failed);
  ASSERT_TRUE(woken.first_error());
  EXPECT_EQ(woken.first_error()->type, "lost_ownership") << woken.first_error()->message;
  auto after = await(store_->load("abandoned"));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, "completed");
  EXPECT_EQ(after->step, finished->step);
  EXPECT_EQ(after->fence, finished->fence);
  EXPECT_EQ(after->state_json, finished->state_json);
  EXPECT_EQ(after->journal, finished->journal);
  EXPECT_EQ(read_calls(calls), (calls_t{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", 2}}));
}

// ---------------------------------------------------------------- 4. interrupt()

TEST_F(durable_run, an_interrupted_run_gives_up_its_step_in_flight_and_continues_later) {
  const auto calls = counter("interrupted");
  std::promise<void> two_started;
  testing::durable_hooks hooks;
  hooks.hold_two = [&](int call) -> asio::awaitable<void> {
    if (call != 1) co_return;
    asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
    two_started.set_value();
    co_await timer.async_wait(asio::use_awaitable);  // cancelled by interrupt(): throws
  };
  agents::agent_registry registry(testing::test_schemas());
  auto agents = testing::register_durable_agents(registry, calls, std::move(hooks));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  auto handle = h.start(workflow, durable_input(), with_id("interrupted"));
  ASSERT_EQ(two_started.get_future().wait_for(60s), std::future_status::ready);
  handle.interrupt();
  auto s = handle.wait();
  EXPECT_EQ(s.status, workflow_status::interrupted) << (s.first_error() ? s.first_error()->message : "");
  EXPECT_EQ(s.step, 1) << "the step in flight was given up";
  EXPECT_EQ(s.history("one").size(), 1u);
  EXPECT_TRUE(s.history("two").empty());
  handle.interrupt();  // no-op once done
  handle.cancel();
  EXPECT_EQ(handle.wait().status, workflow_status::interrupted);

  auto cp = await(store_->load("interrupted"));
  ASSERT_TRUE(cp);
  EXPECT_EQ(cp->status, "interrupted");
  EXPECT_EQ(cp->step, 1);
  EXPECT_EQ(cp->owner, "") << "an interrupted run is released";
  EXPECT_EQ(await(h.find("interrupted"))->status, workflow_status::interrupted);

  // It is continued, not answered.
  auto wrong = refused_resume(h, workflow, "interrupted", answer("an answer"));
  EXPECT_EQ(wrong.errc(), orchestrator_errc::answer_required) << wrong.what();

  s = await(h.resume(workflow, "interrupted", resume_options{}));
  EXPECT_EQ(s.status, workflow_status::awaiting_clarification);
  s = await(h.resume(workflow, "interrupted", answer("the answer")));
  EXPECT_EQ(s.status, workflow_status::completed);
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->data.at("status"), "done with the answer");
  EXPECT_EQ(agents.one->calls(), 1);
  EXPECT_EQ(agents.two->calls(), 2);
  EXPECT_EQ(read_calls(calls), (calls_t{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", 2}}));
}

TEST_F(durable_run, interrupting_a_paused_run_leaves_it_paused) {
  const auto calls = counter("paused");
  // The interrupt arrives while "ask" asks its question, so it lands while
  // the pause is being saved: the save completes (store operations are not
  // cancellable) and the run stays paused. Many rounds: the interrupt meets
  // the save at different moments.
  std::mutex mutex;
  std::map<std::string, std::shared_future<workflow_handle>> handles;
  testing::durable_hooks hooks;
  hooks.on_question = [&] {
    std::shared_future<workflow_handle> handle;
    {
      std::lock_guard lock(mutex);
      for (const auto& [id, h] : handles) {
        if (h.wait_for(0s) == std::future_status::ready && !h.get().done()) handle = h;
      }
    }
    if (handle.valid()) handle.get().interrupt();
  };
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls, std::move(hooks));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  for (int round = 0; round < 100 && !HasFailure(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string id = "paused-" + std::to_string(round);
    std::promise<workflow_handle> started;
    {
      std::lock_guard lock(mutex);
      handles.clear();
      handles.emplace(id, started.get_future().share());
    }
    auto handle = h.start(workflow, durable_input(), with_id(id));
    started.set_value(handle);
    auto s = handle.wait();
    EXPECT_EQ(s.status, workflow_status::awaiting_clarification) << (s.first_error() ? s.first_error()->message : "");
    auto before = await(store_->load(id));
    ASSERT_TRUE(before);
    EXPECT_EQ(before->status, "awaiting_clarification");
    EXPECT_EQ(before->owner, "");

    // Once paused, interrupt() changes nothing.
    handle.interrupt();
    EXPECT_EQ(handle.wait().status, workflow_status::awaiting_clarification);
    auto after = await(store_->load(id));
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, "awaiting_clarification");
    EXPECT_EQ(after->step, before->step);
    EXPECT_EQ(after->fence, before->fence);
    EXPECT_EQ(after->state_json, before->state_json);

    s = await(h.resume(workflow, id, answer("the answer")));
    EXPECT_EQ(s.status, workflow_status::completed);
  }
  // Every round called every agent once ("ask" twice).
  auto total = read_calls(calls);
  const int rounds = total["one"];
  EXPECT_GT(rounds, 0);
  EXPECT_EQ(total, (calls_t{{"ask", 2 * rounds}, {"four", rounds}, {"one", rounds}, {"three", rounds}, {"two", rounds}}));
}

// ---------------------------------------------------------------- 5. changed definition

TEST_F(durable_run, a_changed_definition_is_refused_and_the_stored_run_kept) {
  const auto calls = counter("changed");
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls);
  auto original = testing::durable_workflow().compile(registry);
  auto renamed = testing::durable_workflow("confirm").compile(registry);  // the paused node "ask" renamed
  auto relimited = testing::durable_workflow().max_steps(50).compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  auto s = await(h.run(original, durable_input(), with_id("changed")));
  ASSERT_EQ(s.status, workflow_status::awaiting_clarification);
  auto before = await(store_->load("changed"));
  ASSERT_TRUE(before);

  auto mismatch = refused_resume(h, renamed, "changed", answer("the answer"));
  EXPECT_EQ(mismatch.errc(), orchestrator_errc::workflow_mismatch) << mismatch.what();
  EXPECT_THAT(mismatch.what(), HasSubstr("nodes removed: ask"));
  EXPECT_THAT(mismatch.what(), HasSubstr("nodes added: confirm"));
  auto limits = refused_resume(h, relimited, "changed", answer("the answer"));
  EXPECT_EQ(limits.errc(), orchestrator_errc::workflow_mismatch) << limits.what();

  // A separate hub (another process would do the same) sees the run as it was.
  auto after = await(store_->load("changed"));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, "awaiting_clarification");
  EXPECT_EQ(after->step, before->step);
  EXPECT_EQ(after->fence, before->fence);
  EXPECT_EQ(after->owner, before->owner);
  EXPECT_EQ(after->state_json, before->state_json);
  EXPECT_EQ(after->journal, before->journal);
  EXPECT_EQ(after->updated_at, before->updated_at);

  hub other{io_.get_executor(), registry, testing::options(make_sqlite_checkpoint_store(db_), {}, silent())};
  s = await(other.resume(original, "changed", answer("the answer")));
  EXPECT_EQ(s.status, workflow_status::completed);
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->data.at("status"), "done with the answer");
  EXPECT_EQ(read_calls(calls), once_each);
}

// ---------------------------------------------------------------- 6. values that cannot be stored

// `levels` nested arrays around a number: nested(1) is [1].
json::value nested(int levels) {
  json::value v = 1;
  for (int i = 0; i < levels; ++i) {
    json::array a;
    a.push_back(std::move(v));
    v = std::move(a);
  }
  return v;
}

TEST_F(durable_run, an_input_that_cannot_be_stored_is_refused_naming_where) {
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, counter("refused"));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  auto refusal = [&](json::value input) -> std::string {
    try {
      auto s = await(h.run(workflow, std::move(input)));
      ADD_FAILURE() << "run accepted it and ended " << to_string(s.status);
    } catch (const orchestrator_error& e) {
      EXPECT_EQ(e.errc(), orchestrator_errc::invalid_input) << e.what();
      return e.what();
    }
    return {};
  };
  EXPECT_THAT(refusal(json::object{{"request", "x"},
                                   {"numbers", json::array{1, std::numeric_limits<double>::infinity()}}}),
              HasSubstr("/numbers/1"));
  EXPECT_THAT(refusal(json::object{{"n", std::numeric_limits<double>::quiet_NaN()}}), HasSubstr("/n"));
  EXPECT_THAT(refusal(json::parse(R"({"request": {"amount": 1e999}})")), HasSubstr("/request/amount"));
  EXPECT_THAT(refusal(json::value(-std::numeric_limits<double>::infinity())), HasSubstr("not finite"));
  EXPECT_THAT(refusal(json::object{{"deep", nested(69)}}), HasSubstr("nesting deeper than 64"));  // 70 levels
  EXPECT_THAT(refusal(json::object{{"deep", nested(64)}}), HasSubstr("/deep/0/0"));              // 65 levels
  EXPECT_TRUE(await(store_->list("")).empty()) << "nothing of a refused input was stored";
  EXPECT_TRUE(read_calls(counter("refused")).empty()) << "no agent ran";
}

// An input as deep as allowed is stored, and read back by another hub.
TEST_F(durable_run, a_deep_input_within_the_limit_survives_a_pause_and_a_resume_in_another_hub) {
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, counter("deep"));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};
  hub other{io_.get_executor(), registry, testing::options(make_sqlite_checkpoint_store(db_), {}, silent())};

  for (int levels : {60, 64}) {
    SCOPED_TRACE(std::to_string(levels) + " levels");
    const std::string id = "deep-" + std::to_string(levels);
    json::value input = json::object{{"request", "deep"}, {"deep", nested(levels - 1)}};
    auto s = await(h.run(workflow, input, with_id(id)));
    ASSERT_EQ(s.status, workflow_status::awaiting_clarification)
        << (s.first_error() ? s.first_error()->message : "");
    auto found = await(other.find(id));
    ASSERT_TRUE(found);
    EXPECT_EQ(found->input, input);
    s = await(other.resume(workflow, id, answer("the answer")));
    EXPECT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
    EXPECT_EQ(s.input, input);
    found = await(h.find(id));
    ASSERT_TRUE(found);
    EXPECT_EQ(found->status, workflow_status::completed);
    EXPECT_EQ(found->input, input);
  }
}

// An agent's answer that cannot be stored fails its step, naming the agent
// and where; what is stored stays JSON any reader accepts. Data as deep as
// allowed is stored and read back.
TEST_F(durable_run, an_agent_answer_that_cannot_be_stored_fails_the_step_and_the_state_stays_readable) {
  testing::durable_hooks hooks;
  hooks.two_answer = [](agents::agent_context& c) {
    const auto kind = std::string(c.input.at("case").as_string());
    auto e = testing::make_envelope({{"status", "two"}}, 0.9, "Two.");
    if (kind == "infinite data") e.data["score"] = std::numeric_limits<double>::infinity();
    if (kind == "huge data") e.data["score"] = json::parse("1e999");
    if (kind == "nan confidence") e.confidence = std::numeric_limits<double>::quiet_NaN();
    if (kind == "too deep") e.data["extra"] = nested(64);  // data is level 1: 65 levels
    if (kind == "deepest") e.data["extra"] = nested(63);   // 64 levels: allowed
    return e;
  };
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, counter("answers"), std::move(hooks));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};
  hub other{io_.get_executor(), registry, testing::options(make_sqlite_checkpoint_store(db_), {}, silent())};

  struct bad_case {
    const char* kind;
    const char* names;
  };
  for (const auto& c : {bad_case{"infinite data", "/score"}, bad_case{"huge data", "/score"},
                        bad_case{"nan confidence", "confidence is not finite"},
                        bad_case{"too deep", "nesting deeper than 64"}}) {
    SCOPED_TRACE(c.kind);
    const std::string id = std::string("bad-") + c.kind;
    auto s = await(h.run(workflow, json::object{{"case", c.kind}}, with_id(id)));
    EXPECT_EQ(s.status, workflow_status::failed);
    ASSERT_TRUE(s.first_error());
    EXPECT_EQ(s.first_error()->type, "invalid_envelope");
    EXPECT_THAT(s.first_error()->message, HasSubstr("agent 'two'"));
    EXPECT_THAT(s.first_error()->message, HasSubstr(c.names));

    auto cp = await(store_->load(id));
    ASSERT_TRUE(cp);
    EXPECT_EQ(cp->status, "failed");
    EXPECT_NO_THROW(json::parse(cp->state_json)) << cp->state_json;
    // Every stored text is JSON holding only finite numbers (Boost.JSON
    // would write an infinity as 1e99999, which reads back as infinity).
    for (const auto& text : [&] {
           auto all = cp->journal;
           all.push_back(cp->state_json);
           return all;
         }()) {
      json::value parsed;
      ASSERT_NO_THROW(parsed = json::parse(text, {}, protocol::checkpoint_parse_options())) << text;
      EXPECT_EQ(protocol::check_untrusted_value(parsed, protocol::max_checkpoint_depth), std::nullopt) << text;
    }
    auto found = await(other.find(id));
    ASSERT_TRUE(found);
    EXPECT_EQ(found->status, workflow_status::failed);
    EXPECT_EQ(found->history("one").size(), 1u);
    EXPECT_TRUE(found->history("two").empty());
    ASSERT_TRUE(found->first_error());
    EXPECT_EQ(found->first_error()->type, "invalid_envelope");
  }

  auto s = await(h.run(workflow, json::object{{"case", "deepest"}}, with_id("deepest")));
  ASSERT_EQ(s.status, workflow_status::awaiting_clarification) << (s.first_error() ? s.first_error()->message : "");
  auto found = await(other.find("deepest"));
  ASSERT_TRUE(found);
  ASSERT_TRUE(found->latest("two"));
  EXPECT_EQ(found->latest("two")->data.at("extra"), nested(63));
  s = await(other.resume(workflow, "deepest", answer("the answer")));
  EXPECT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
}

}  // namespace
}  // namespace switchboard::orchestrator
