// `node receiver.mjs` (this directory) run by a C++ test: the receiver
// decodes each OTLP/JSON request with the OpenTelemetry protocol
// definitions and prints one line for it ("decoded {...}", or why it
// refused it), after a first line "listening PORT". Its lines are collected
// by a thread of their own, so the receiver never blocks on a full pipe.
//
// The test's build defines SWITCHBOARD_NODE (the node executable) and
// SWITCHBOARD_OTLP_RECEIVER (this directory).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <functional>
#include <mutex>
#include <spawn.h>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace switchboard::testing {

class node_receiver {
 public:
  node_receiver() {
    int pipe_ends[2];
    if (::pipe(pipe_ends) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_ends[0]);
    posix_spawn_file_actions_addclose(&actions, pipe_ends[1]);
    std::string node = SWITCHBOARD_NODE;
    std::string script = std::string(SWITCHBOARD_OTLP_RECEIVER) + "/receiver.mjs";
    char* argv[] = {node.data(), script.data(), nullptr};
    const int spawned = ::posix_spawnp(&pid_, node.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_ends[1]);
    output_ = ::fdopen(pipe_ends[0], "r");
    if (spawned != 0) pid_ = -1;
    reader_ = std::thread([this] { read_lines(); });
  }
  ~node_receiver() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    reader_.join();
    if (output_ != nullptr) ::fclose(output_);
  }
  node_receiver(const node_receiver&) = delete;
  node_receiver& operator=(const node_receiver&) = delete;

  // The port, once it listens; "" when it exited first (no node, no node_modules).
  std::string port() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !lines_.empty() || done_; });
    if (lines_.empty() || !lines_[0].starts_with("listening ")) return {};
    return lines_[0].substr(std::string_view("listening ").size());
  }

  // Every line after "listening", once `ready` says they are enough (or the
  // receiver exited).
  std::vector<std::string> lines_when(const std::function<bool(const std::vector<std::string>&)>& ready) {
    std::unique_lock lock(mutex_);
    std::vector<std::string> after;
    changed_.wait(lock, [&] {
      after.assign(lines_.begin() + std::min<std::size_t>(1, lines_.size()), lines_.end());
      return ready(after) || done_;
    });
    return after;
  }

 private:
  void read_lines() {
    std::string line;
    for (int c = 0; output_ != nullptr && (c = std::fgetc(output_)) != EOF;) {
      if (c != '\n') {
        line.push_back(static_cast<char>(c));
        continue;
      }
      std::scoped_lock lock(mutex_);
      lines_.push_back(std::move(line));
      line.clear();
      changed_.notify_all();
    }
    std::scoped_lock lock(mutex_);
    done_ = true;
    changed_.notify_all();
  }

  pid_t pid_ = -1;
  std::FILE* output_ = nullptr;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
  bool done_ = false;
  std::thread reader_;
};

}  // namespace switchboard::testing
