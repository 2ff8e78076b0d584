// The MCP servers the MCP tests talk to (tests/mcp_peers: the reference
// server @modelcontextprotocol/server-everything from npm, pinned by the
// lockfile, and misbehaving_server.mjs), and a way to run coroutines and
// child processes in a test. A missing node_modules is a failure, not a
// skip: scripts/test.sh installs it.
#pragma once

#include <switchboard/mcp/client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace switchboard::test::mcp {

namespace fs = std::filesystem;
namespace sbm = switchboard::mcp;

inline fs::path peers_dir() { return SWITCHBOARD_MCP_PEERS; }
inline std::string node() { return SWITCHBOARD_NODE; }
inline fs::path everything_js() {
  return peers_dir() / "node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}
inline fs::path misbehaving_js() { return peers_dir() / "misbehaving_server.mjs"; }

// Fails the test when the npm peers are not installed.
inline void require_peers() {
  ASSERT_TRUE(fs::exists(everything_js()))
      << everything_js() << " is missing: run scripts/test.sh, or npm ci in " << peers_dir();
}

inline sbm::server_config everything_stdio() {
  sbm::server_config c;
  c.name = "everything";
  c.command = {node(), everything_js().string(), "stdio"};
  c.request_timeout = std::chrono::seconds(20);
  return c;
}

inline sbm::server_config misbehaving(std::vector<std::string> flags = {}) {
  sbm::server_config c;
  c.name = "bad";
  c.command = {node(), misbehaving_js().string()};
  c.command.insert(c.command.end(), flags.begin(), flags.end());
  c.request_timeout = std::chrono::seconds(10);
  c.shutdown_grace = std::chrono::milliseconds(300);
  return c;
}

// Runs `op` on a fresh io_context to completion; rethrows its exception.
template <class T>
T run(boost::asio::awaitable<T> op) {
  boost::asio::io_context io;
  std::optional<T> out;
  std::exception_ptr error;
  boost::asio::co_spawn(io, std::move(op), [&](std::exception_ptr e, T v) {
    error = e;
    if (!e) out.emplace(std::move(v));
  });
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

// A child process started by the test (an HTTP server), killed at the end.
class child_process {
 public:
  child_process(std::vector<std::string> argv, std::vector<std::string> env = {}) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      for (auto& e : env) ::putenv(e.data());
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
  }
  ~child_process() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

 private:
  pid_t pid_ = -1;
};

inline unsigned short free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

inline bool accepts(unsigned short port) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  boost::system::error_code ec;
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
  return !ec;
}

// Waits until `ready` or the limit; false when it never was.
template <class F>
bool wait_until(F ready, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// server-everything in its streamableHttp mode on a free port.
struct everything_http {
  unsigned short port = free_port();
  child_process process{{node(), everything_js().string(), "streamableHttp"}, {"PORT=" + std::to_string(port)}};
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/mcp"; }
  bool ready() const { return wait_until([&] { return accepts(port); }); }
};

// misbehaving_server.mjs over HTTP; it picks its port and writes it to a file.
struct misbehaving_http {
  fs::path port_file = fs::temp_directory_path() / ("sb-mcp-port-" + std::to_string(::getpid()));
  child_process process{{node(), misbehaving_js().string(), "http", port_file.string()}};
  unsigned short port = 0;
  ~misbehaving_http() { fs::remove(port_file); }
  bool ready() {
    return wait_until([&] {
      std::ifstream in(port_file);
      return static_cast<bool>(in >> port) && port != 0;
    });
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/mcp"; }
};

// True when this process has no child left (ctest runs each test alone).
inline bool no_children_left() { return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

}  // namespace switchboard::test::mcp
