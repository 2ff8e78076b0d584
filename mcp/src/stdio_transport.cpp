// The stdio transport: the server is a child process the client starts
// (posix_spawnp, in its own process group) and stops (standard input
// closed, then SIGTERM, then SIGKILL to the group, each after
// shutdown_grace). Messages are newline-delimited JSON on its standard
// input and output; its standard error is drained into the debug log (each
// line cut at max_stderr_line) so a chatty server can never block on a full
// pipe, and the last bytes of it are kept to explain an unexpected exit.
#include "transport.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

extern char** environ;

namespace switchboard::mcp::detail {

namespace asio = boost::asio;
using asio::posix::stream_descriptor;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_stderr_line = 1000;   // logged per line
constexpr std::size_t stderr_tail_bytes = 600;  // kept for error messages
constexpr std::chrono::milliseconds exit_poll{10};

// Closes the descriptors it holds unless released.
struct pipe_pair {
  int fd[2] = {-1, -1};
  ~pipe_pair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  int release(int i) { return std::exchange(fd[i], -1); }
};

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

// The environment of the child: ours, with the configuration's variables
// added or replaced.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    if (!extra.contains(std::string(name))) out.emplace_back(entry);
  }
  for (const auto& [k, v] : extra) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct stdio_state : std::enable_shared_from_this<stdio_state> {
  stdio_state(const server_config& c, strand_type s, std::shared_ptr<spdlog::logger> l)
      : config(c), strand(std::move(s)), logger(std::move(l)), in(strand), out(strand), err(strand) {}

  server_config config;
  strand_type strand;
  std::shared_ptr<spdlog::logger> logger;
  stream_descriptor in, out, err;
  pid_t pid = -1;
  bool reaped = false;
  int status = 0;
  transport_handlers handlers;
  std::deque<std::string> queue;
  bool writing = false;
  bool closing = false;
  std::string stderr_tail;

  void spawn();
  bool try_reap() {
    if (pid <= 0 || reaped) return true;
    if (::waitpid(pid, &status, WNOHANG) == pid) reaped = true;
    return reaped;
  }
  void signal_group(int sig) const {
    if (pid > 0 && !reaped) ::kill(-pid, sig);
  }
  void kill_now() noexcept {
    closing = true;
    signal_group(SIGKILL);
    if (pid > 0 && !reaped) {
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      reaped = true;
    }
    boost::system::error_code ignored;
    in.close(ignored);
    out.close(ignored);
    err.close(ignored);
  }
  void fatal(mcp_errc code, const std::string& what) {
    if (closing) return;
    closing = true;
    if (handlers.on_fatal) handlers.on_fatal(mcp_error(code, server_prefix(config.name) + what));
  }
  std::string stderr_hint() const {
    return stderr_tail.empty() ? std::string() : "; its last standard error: " + quote(stderr_tail, stderr_tail_bytes);
  }

  asio::awaitable<void> read_messages();
  asio::awaitable<void> drain_stderr();
  asio::awaitable<void> write_queue();
  asio::awaitable<bool> wait_for_exit(std::chrono::milliseconds limit);
  asio::awaitable<void> explain_end(const std::string& how);
};

void stdio_state::spawn() {
  pipe_pair to_child, from_child, errors;
  for (auto* p : {&to_child, &from_child, &errors}) {
    if (::pipe2(p->fd, O_CLOEXEC) != 0)
      throw mcp_error(mcp_errc::spawn_failed, server_prefix(config.name) + "pipe: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child.fd[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, errors.fd[1], 2);
  // Its own process group, so stopping it reaches what it started (npx
  // runs node); default signal dispositions (the CLI ignores SIGPIPE).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults, none;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, sig);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> args = config.command;
  std::vector<std::string> env = child_environment(config.env);
  auto argv = pointers(args);
  auto envp = pointers(env);
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    pid = -1;
    throw mcp_error(mcp_errc::spawn_failed,
                    server_prefix(config.name) + "cannot start " + quote(config.command.front()) + ": " + std::strerror(rc));
  }
  in.assign(to_child.release(1));
  out.assign(from_child.release(0));
  err.assign(errors.release(0));
}

asio::awaitable<void> stdio_state::read_messages() {
  auto self = shared_from_this();
  std::string buffer;
  for (;;) {
    auto [ec, n] =
        co_await asio::async_read_until(out, asio::dynamic_buffer(buffer, max_message_bytes + 1), '\n', use_tuple);
    if (closing) co_return;
    if (ec == asio::error::not_found) {
      fatal(mcp_errc::message_too_large,
            "sent a message over " + std::to_string(max_message_bytes) + " bytes on its standard output");
      kill_now();
      co_return;
    }
    if (ec) {
      const std::string how = ec == asio::error::eof ? "closed its standard output" : "cannot be read: " + ec.message();
      co_await explain_end(how);
      co_return;
    }
    std::string_view line(buffer.data(), n - 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos && handlers.on_message) handlers.on_message(line);
    buffer.erase(0, n);
    if (closing) co_return;
  }
}

// The server ended its output: say why, with its exit status when it has
// exited (given a moment to do so) and the end of its standard error.
asio::awaitable<void> stdio_state::explain_end(const std::string& how) {
  const bool exited = co_await wait_for_exit(std::chrono::milliseconds(200));
  if (closing) co_return;
  fatal(mcp_errc::connection_lost,
        (exited ? "the server " + describe_status(status) : "the server " + how) + stderr_hint());
}

asio::awaitable<void> stdio_state::drain_stderr() {
  auto self = shared_from_this();
  std::array<char, 4096> chunk;
  std::string line;
  for (;;) {
    auto [ec, n] = co_await err.async_read_some(asio::buffer(chunk), use_tuple);
    if (ec) co_return;
    for (std::size_t i = 0; i < n; ++i) {
      const char c = chunk[i];
      if (c != '\n' && line.size() < max_stderr_line) line.push_back(c);
      if (c == '\n' || line.size() >= max_stderr_line) {
        if (!line.empty()) (logger ? logger : spdlog::default_logger())->debug("{}stderr: {}", server_prefix(config.name), quote(line, max_stderr_line));
        line.clear();  // a longer line goes on in the next record
      }
    }
    stderr_tail.append(chunk.data(), n);
    if (stderr_tail.size() > stderr_tail_bytes) stderr_tail.erase(0, stderr_tail.size() - stderr_tail_bytes);
  }
}

asio::awaitable<void> stdio_state::write_queue() {
  auto self = shared_from_this();
  while (!queue.empty() && !closing) {
    auto [ec, n] = co_await asio::async_write(in, asio::buffer(queue.front()), use_tuple);
    if (ec) {
      queue.clear();
      writing = false;
      const std::string how = "stopped reading its standard input (" + ec.message() + ")";
      co_await explain_end(how);
      co_return;
    }
    queue.pop_front();
  }
  writing = false;
}

asio::awaitable<bool> stdio_state::wait_for_exit(std::chrono::milliseconds limit) {
  asio::steady_timer timer(strand);
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!try_reap() && std::chrono::steady_clock::now() < until) {
    timer.expires_after(exit_poll);
    co_await timer.async_wait(use_tuple);
  }
  co_return reaped;
}

class stdio_transport final : public transport {
 public:
  stdio_transport(const server_config& config, strand_type strand, std::shared_ptr<spdlog::logger> logger)
      : s_(std::make_shared<stdio_state>(config, std::move(strand), std::move(logger))) {
    s_->spawn();
  }
  ~stdio_transport() override { kill(); }

  void start(transport_handlers handlers) override {
    s_->handlers = std::move(handlers);
    asio::co_spawn(s_->strand, s_->read_messages(), asio::detached);
    asio::co_spawn(s_->strand, s_->drain_stderr(), asio::detached);
  }

  void send(std::string text, std::optional<std::int64_t>, const telemetry::span_context&) override {
    if (s_->closing) return;
    text.push_back('\n');
    s_->queue.push_back(std::move(text));
    if (!s_->writing) {
      s_->writing = true;
      asio::co_spawn(s_->strand, s_->write_queue(), asio::detached);
    }
  }

  asio::awaitable<void> close() override {
    auto s = s_;
    if (s->pid <= 0 || s->reaped) {
      s->kill_now();
      co_return;
    }
    s->closing = true;
    boost::system::error_code ignored;
    s->in.close(ignored);  // a well-behaved server exits at the end of its input
    bool exited = co_await s->wait_for_exit(s->config.shutdown_grace);
    if (!exited) {
      s->logger->debug("{}still running after its input closed: SIGTERM", server_prefix(s->config.name));
      s->signal_group(SIGTERM);
      exited = co_await s->wait_for_exit(s->config.shutdown_grace);
    }
    if (!exited) s->logger->warn("{}ignored SIGTERM: SIGKILL", server_prefix(s->config.name));
    s->kill_now();
  }

  void kill() noexcept override { s_->kill_now(); }

 private:
  std::shared_ptr<stdio_state> s_;
};

}  // namespace

std::unique_ptr<transport> make_stdio_transport(const server_config& config, strand_type strand,
                                                std::shared_ptr<spdlog::logger> logger) {
  return std::make_unique<stdio_transport>(config, std::move(strand), std::move(logger));
}

}  // namespace switchboard::mcp::detail
