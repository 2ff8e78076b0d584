// The fixture of the durable-run tests (durable_run_process_test.cpp with
// helper processes, durable_run_test.cpp in one process): the helper
// process driver, the test fixture with its SQLite store and call counter,
// and small helpers. The processes are switchboard_orchestrator_durable_helper
// (durable_helper.cpp); every agent call of every process is counted in a
// file (durable_workflow.hpp).
#pragma once

#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/stores/sqlite_store.hpp>

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

namespace switchboard::orchestrator::durable_testing {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::read_calls;

using calls_t = std::map<std::string, int>;
// A run + one answer, nothing run twice: "ask" asks, then answers.
inline const calls_t once_each{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", 1}};

inline std::shared_ptr<spdlog::logger> silent() { return std::make_shared<spdlog::logger>("durable-test"); }

// The exit status the helper uses for an orchestrator_error.
inline int exit_code_of(orchestrator_errc code) { return 40 + static_cast<int>(code); }

inline bool exited_with(int status, int code) { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
inline bool was_killed(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }

inline std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// The value of the line "key=value" of a helper's output ("" if none).
inline std::string field(const std::string& output, const std::string& key) {
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
  // `program`: the durable-run helper unless another helper is named.
  explicit helper_process(std::vector<std::string> args, int stdin_fd = -1,
                          std::string program = SWITCHBOARD_DURABLE_HELPER) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    if (stdin_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    args.insert(args.begin(), std::move(program));
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
inline std::vector<outcome> finish_all(std::vector<std::unique_ptr<helper_process>>& processes) {
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
    store_ = stores::make_sqlite_checkpoint_store(db_);
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

inline json::object durable_input() { return json::object{{"request", "durable"}}; }

inline run_options with_id(std::string id) {
  run_options o;
  o.workflow_id = std::move(id);
  return o;
}


}  // namespace switchboard::orchestrator::durable_testing
