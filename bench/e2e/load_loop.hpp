// The closed-loop driver and the measurements shared by the end-to-end load
// program (over HTTP) and the in-process benchmark (native agents):
// `concurrency` workflows in flight on one io_context run by `threads`
// threads, each finished workflow starting the next; CPU time of this
// process (getrusage), peak RSS (ru_maxrss) against the RSS before the first
// workflow, and the report as one JSON line plus a readable summary.
#pragma once

#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/orchestrator/workflow.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bench {

namespace asio = boost::asio;
namespace json = boost::json;
namespace so = switchboard::orchestrator;
using clock_type = std::chrono::steady_clock;

struct usage_sample {
  double cpu_seconds = 0;  // user + system
  long max_rss_kib = 0;
};

inline usage_sample sample_usage() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return {seconds(ru.ru_utime) + seconds(ru.ru_stime), ru.ru_maxrss};
}

inline long current_rss_kib() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Parses a non-negative integer option or exits with a message naming it.
inline long integer_arg(std::string_view flag, std::string_view text, long minimum,
                        void (*usage)(const std::string&)) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < minimum) {
    usage(std::string(flag) + ": '" + std::string(text) + "' is not an integer >= " + std::to_string(minimum));
  }
  return value;
}

// What the workflows of one phase produced. Each workflow writes its own
// latency slot; the maps take a lock once per workflow.
struct results {
  explicit results(long n) : latency_us(static_cast<std::size_t>(n), 0) {}

  std::vector<std::uint32_t> latency_us;
  std::atomic<long> next{0};
  std::mutex mutex;
  std::map<std::string, long> failures;  // type -> count
  std::map<std::string, long> branches;  // the node chosen after `branch_node` -> count
  long failed_workflows = 0;

  void record(long index, clock_type::duration took, const so::workflow_state& state, std::string_view branch_node) {
    set_latency(index, took);
    std::string branch = "(none)";
    for (const auto& entry : state.audit) {
      if (entry.node == branch_node && !entry.route.empty()) branch = entry.route;
    }
    std::lock_guard lock(mutex);
    ++branches[branch];
    // A coordinator that fell back to its default agent completes, but
    // records an error: that counts as a failure here.
    if (state.status != so::workflow_status::completed || !state.errors.empty()) {
      ++failed_workflows;
      const auto* first = state.first_error();
      const std::string type = first ? first->type : std::string(so::to_string(state.status));
      if (++failures[type] <= 3) {
        std::cerr << "workflow " << state.id << " " << so::to_string(state.status) << ": "
                  << (first ? first->message : std::string("no error record")) << "\n";
      }
    }
  }

  void record_exception(long index, clock_type::duration took, const std::string& what) {
    set_latency(index, took);
    std::lock_guard lock(mutex);
    ++failed_workflows;
    if (++failures["exception"] <= 3) std::cerr << "hub.run threw: " << what << "\n";
  }

 private:
  void set_latency(long index, clock_type::duration took) {
    latency_us[static_cast<std::size_t>(index)] =
        static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(took).count());
  }
};

struct workload {
  so::hub& hub;
  std::shared_ptr<const so::compiled_workflow> workflow;
  const json::value& input;
  std::string branch_node;  // whose route is reported as the branch taken
};

inline asio::awaitable<void> worker(const workload& w, results& out, long total) {
  for (long i = out.next.fetch_add(1); i < total; i = out.next.fetch_add(1)) {
    const auto started = clock_type::now();
    std::string failure;
    try {
      // run_options passed explicitly: g++ 12 destroys a defaulted
      // coroutine argument twice.
      so::run_options options;
      auto state = co_await w.hub.run(w.workflow, w.input, std::move(options));
      out.record(i, clock_type::now() - started, state, w.branch_node);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!failure.empty()) out.record_exception(i, clock_type::now() - started, failure);
  }
}

// Runs `total` workflows with `concurrency` in flight on `threads` threads
// of `io`; returns when all have finished.
inline void run_phase(asio::io_context& io, const workload& w, results& out, long total, long concurrency,
                      int threads) {
  const long workers = std::min(total, concurrency);
  for (long i = 0; i < workers; ++i) asio::co_spawn(io, worker(w, out, total), asio::detached);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : pool) t.join();
  io.restart();
}

inline double percentile_ms(const std::vector<std::uint32_t>& sorted_us, double p) {
  if (sorted_us.empty()) return 0;
  const auto rank = static_cast<std::size_t>(p * static_cast<double>(sorted_us.size() - 1) + 0.5);
  return sorted_us[std::min(rank, sorted_us.size() - 1)] / 1000.0;
}

inline json::object to_object(const std::map<std::string, long>& counts) {
  json::object out;
  for (const auto& [key, value] : counts) out[key] = value;
  return out;
}

struct phase_setup {
  long workflows = 0;
  long concurrency = 0;
  long warmup = 0;
  int threads = 1;
};

// Warm-up (not measured), then the measured phase; prints the JSON line on
// stdout (with `extra` members first) and the summary on stderr. Returns
// the number of failed workflows of the measured phase.
inline long measure(asio::io_context& io, const workload& w, const phase_setup& setup, json::object extra,
                    std::string_view title) {
  // Memory per in-flight workflow counts from here, before the warm-up
  // (whose peak would otherwise stay in the allocator's free lists).
  const long rss_before_kib = current_rss_kib();
  if (setup.warmup > 0) {
    results warm(setup.warmup);
    run_phase(io, w, warm, setup.warmup, setup.concurrency, setup.threads);
    if (warm.failed_workflows > 0) {
      std::cerr << warm.failed_workflows << " of " << setup.warmup << " warm-up workflows failed\n";
    }
  }
  results measured(setup.workflows);
  const usage_sample before = sample_usage();
  const auto started = clock_type::now();
  run_phase(io, w, measured, setup.workflows, setup.concurrency, setup.threads);
  const double elapsed = std::chrono::duration<double>(clock_type::now() - started).count();
  const usage_sample after = sample_usage();

  std::vector<std::uint32_t> sorted = measured.latency_us;
  std::sort(sorted.begin(), sorted.end());
  const long in_flight = std::min(setup.workflows, setup.concurrency);
  const double cpu = after.cpu_seconds - before.cpu_seconds;
  const double cpu_us = cpu * 1e6 / double(setup.workflows);
  const double rate = double(setup.workflows) / elapsed;
  const double per_inflight_kib = double(std::max(0L, after.max_rss_kib - rss_before_kib)) / double(in_flight);
  const double p50 = percentile_ms(sorted, 0.50), p99 = percentile_ms(sorted, 0.99);
  const double max = sorted.empty() ? 0.0 : sorted.back() / 1000.0;

  json::object report = std::move(extra);
  report["workflows"] = setup.workflows;
  report["concurrency"] = setup.concurrency;
  report["threads"] = setup.threads;
  report["warmup"] = setup.warmup;
  report["elapsed_s"] = elapsed;
  report["workflows_per_s"] = rate;
  report["p50_ms"] = p50;
  report["p99_ms"] = p99;
  report["max_ms"] = max;
  report["cpu_s"] = cpu;
  report["cpu_us_per_workflow"] = cpu_us;
  report["peak_rss_kib"] = after.max_rss_kib;
  report["rss_before_kib"] = rss_before_kib;
  report["rss_per_inflight_kib"] = per_inflight_kib;
  report["failed_workflows"] = measured.failed_workflows;
  report["failures"] = to_object(measured.failures);
  report["branches"] = to_object(measured.branches);
  std::cout << json::serialize(report) << std::endl;

  std::fprintf(stderr,
               "%.*s: %ld workflows, concurrency %ld, %d thread(s)\n"
               "  throughput   %.0f workflows/s over %.2f s\n"
               "  latency      p50 %.3f ms, p99 %.3f ms, max %.3f ms\n"
               "  CPU          %.2f us per workflow (%.2f s, this process only)\n"
               "  memory       peak RSS %.1f MiB, %.2f KiB per in-flight workflow\n"
               "  failures     %ld\n",
               static_cast<int>(title.size()), title.data(), setup.workflows, setup.concurrency, setup.threads,
               rate, elapsed, p50, p99, max, cpu_us, cpu, double(after.max_rss_kib) / 1024.0, per_inflight_kib,
               measured.failed_workflows);
  for (const auto& [type, n] : measured.failures) std::fprintf(stderr, "    %-28s %ld\n", type.c_str(), n);
  return measured.failed_workflows;
}

}  // namespace bench
