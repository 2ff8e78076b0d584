// Load program for the HTTP model client: `concurrency` coroutines on one
// io_context thread send `requests` chat completions in total to the
// loopback server (its own thread), over plain HTTP and over TLS. Prints
// requests/s and CPU per request (the client thread alone, and the whole
// process including the server).
//
//   switchboard_http_load [--requests N] [--concurrency C] [--connections K]
#include <switchboard/models/openai_model.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include <sys/resource.h>

namespace {

namespace asio = boost::asio;
namespace sm = switchboard::models;
namespace st = switchboard::testing;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct run_stats {
  int ok = 0;
  int failed = 0;
};

asio::awaitable<void> worker(sm::chat_model& model, std::atomic<int>& remaining, run_stats& stats) {
  sm::chat_request request;
  request.messages.push_back({sm::chat_role::user, "Suggest a meeting slot as JSON."});
  while (remaining.fetch_sub(1) > 0) {
    try {
      const auto result = co_await model.complete(request);
      stats.ok += result.text.empty() ? 0 : 1;
    } catch (const std::exception&) {
      ++stats.failed;
    }
  }
}

void measure(const char* label, bool tls, int requests, int concurrency, std::size_t connections) {
  st::loopback_model_server server({.tls = tls});
  server.set_default(st::server_action::reply(R"({"slot":"2026-11-23T10:00:00Z","room":"A","minutes":30})"));

  sm::openai_options options;
  options.http.base_url = server.base_url() + "/v1";
  options.http.ca_file = server.ca_file();
  options.http.max_connections_per_host = connections;
  options.model = "bench-model";
  options.api_key = "bench-key";

  asio::io_context io(1);
  run_stats stats;
  {
    sm::openai_model model(options);
    std::atomic<int> remaining{requests};
    for (int i = 0; i < concurrency; ++i) asio::co_spawn(io, worker(model, remaining, stats), asio::detached);
    const double cpu0 = thread_cpu_seconds();
    const double proc0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    io.run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = thread_cpu_seconds() - cpu0;
    const double proc = process_cpu_seconds() - proc0;
    std::printf("%-5s requests=%d ok=%d failed=%d concurrency=%d connections=%zu accepted=%zu\n", label,
                requests, stats.ok, stats.failed, concurrency, connections, server.accepted_connections());
    std::printf("      %.0f requests/s, client CPU %.1f us/request, process CPU (client+server) %.1f us/request\n",
                requests / wall, cpu / requests * 1e6, proc / requests * 1e6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int requests = 20000;
  int concurrency = 64;
  std::size_t connections = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (arg == "--requests") requests = value;
    else if (arg == "--concurrency") concurrency = value;
    else if (arg == "--connections") connections = static_cast<std::size_t>(value);
    else {
      std::fprintf(stderr, "usage: %s [--requests N] [--concurrency C] [--connections K]\n", argv[0]);
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::warn);
  measure("http", false, requests, concurrency, connections);
  measure("https", true, requests, concurrency, connections);
  return 0;
}
