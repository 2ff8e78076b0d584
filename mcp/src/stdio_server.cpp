// The stdio transport of the MCP server (stdio_server.hpp): a reader thread
// that splits standard input into lines, bounded in size and in how many
// wait for the session, and a writer that puts one message per line on
// standard output.
#include <switchboard/mcp/stdio_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace switchboard::mcp {

namespace asio = boost::asio;

namespace {

// Messages read but not yet handled by the session: the reader waits when
// this many are queued, so a client that floods cannot grow memory.
constexpr std::size_t max_queued_messages = 16;

// Writes `message` and a newline whole; false when the reader went away.
bool write_line(int fd, std::string message) {
  message.push_back('\n');
  std::size_t done = 0;
  while (done < message.size()) {
    const ssize_t n = ::write(fd, message.data() + done, message.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// How many read messages wait for the session, and the reader's stop flag.
class message_queue {
 public:
  // Waits for room; false when the reader must stop.
  bool wait_for_room() {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return stopping_ || queued_ < max_queued_messages; });
    if (stopping_) return false;
    ++queued_;
    return true;
  }
  void handled() {
    std::lock_guard lock(mutex_);
    --queued_;
    room_.notify_one();
  }
  void stop() {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    room_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable room_;
  std::size_t queued_ = 0;
  bool stopping_ = false;
};

struct line_handlers {
  std::function<bool(std::string)> on_line;           // false: stop reading
  std::function<bool(std::size_t bytes)> on_oversized;  // false: stop reading
  std::function<void()> on_end;
};

// Splits what `fd` yields into lines of at most `max` bytes until its end,
// or until `wake_fd` becomes readable (the session ended first).
void read_lines(int fd, int wake_fd, std::size_t max, const line_handlers& handlers) {
  std::string line;
  bool skipping = false;  // inside a line over `max`: dropped up to its newline
  std::size_t skipped = 0;
  std::vector<char> buffer(64 * 1024);
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) return;
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    const char* p = buffer.data();
    const char* const end = p + n;
    while (p < end) {
      const auto* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      const char* stop = newline ? newline : end;
      const auto length = static_cast<std::size_t>(stop - p);
      if (skipping) {
        skipped += length;
      } else if (line.size() + length > max) {
        skipping = true;
        skipped = line.size() + length;
        std::string().swap(line);
      } else {
        line.append(p, length);
      }
      p = newline ? newline + 1 : end;
      if (!newline) continue;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const bool go_on = skipping ? handlers.on_oversized(skipped) : line.empty() || handlers.on_line(std::move(line));
      line.clear();
      skipping = false;
      skipped = 0;
      if (!go_on) return;
    }
  }
  // A last message without its newline still counts.
  if (!skipping && !line.empty() && !handlers.on_line(std::move(line))) return;
  handlers.on_end();
}

}  // namespace

void serve_stdio(asio::io_context& io, std::shared_ptr<tool_provider> provider, server_info info,
                 stdio_server_options options) {
  int wake[2];
  if (::pipe(wake) != 0) throw std::runtime_error(std::string("MCP server: pipe: ") + std::strerror(errno));
  auto strand = asio::make_strand(io);
  auto work = asio::make_work_guard(io);
  auto queue = std::make_shared<message_queue>();
  asio::signal_set signals(strand);
  if (options.handle_signals) {
    signals.add(SIGINT);
    signals.add(SIGTERM);
    signals.add(SIGHUP);
  }

  // What ends the session, for handlers that may outlive this call (held
  // weakly: once serve_stdio returns they do nothing).
  auto ender = std::make_shared<std::function<void()>>();
  const std::weak_ptr<std::function<void()>> weak_ender = ender;
  auto end_later = [strand, weak_ender] {
    asio::post(strand, [weak_ender] {
      if (auto end = weak_ender.lock(); end && *end) (*end)();
    });
  };
  auto output_broken = std::make_shared<bool>(false);
  const int out_fd = options.out_fd;
  auto send = [out_fd, output_broken, end_later](std::string message, const boost::json::value&) {
    if (*output_broken) return;
    if (write_line(out_fd, std::move(message))) return;
    *output_broken = true;
    spdlog::warn("MCP server: standard output is closed: ending the session");
    end_later();
  };
  auto session = server_session::make(strand, std::move(provider), std::move(info), std::move(send), options.limits);

  // Ends the session once (input ended, a signal, output closed): its calls
  // are asked to stop, and the io_context stops when they have ended.
  bool ending = false;
  auto end_session = [&] {
    if (ending) return;
    ending = true;
    queue->stop();
    [[maybe_unused]] const auto ignored = ::write(wake[1], "x", 1);
    session->close();
    signals.cancel();
    asio::co_spawn(
        strand,
        [session, &work, &io]() -> asio::awaitable<void> {
          co_await session->calls_finished();
          work.reset();
          io.stop();
        },
        asio::detached);
  };
  *ender = end_session;
  signals.async_wait([&](const boost::system::error_code& ec, int signal_number) {
    if (ec) return;
    spdlog::info("MCP server: signal {}: ending the session", signal_number);
    end_session();
  });

  line_handlers handlers{
      .on_line =
          [&](std::string line) {
            if (!queue->wait_for_room()) return false;
            asio::post(strand, [queue, session, line = std::move(line)] {
              session->receive(line);
              queue->handled();
            });
            return true;
          },
      .on_oversized =
          [&](std::size_t bytes) {
            if (!queue->wait_for_room()) return false;
            asio::post(strand, [queue, session, bytes] {
              session->receive_oversized(bytes);
              queue->handled();
            });
            return true;
          },
      .on_end = end_later,
  };
  std::thread reader([&] { read_lines(options.in_fd, wake[0], options.limits.max_message_bytes, handlers); });
  io.run();
  if (!ending) {
    // io.run() returned without the session ending (someone stopped `io`).
    queue->stop();
    [[maybe_unused]] const auto ignored = ::write(wake[1], "x", 1);
  }
  reader.join();
  ::close(wake[0]);
  ::close(wake[1]);
}

}  // namespace switchboard::mcp
