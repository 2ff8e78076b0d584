// bench_serve_load: the load generator of bench/serve. Drives any server of
// the LangGraph Agent Server API (`switchboard serve`, the LangGraph JS dev
// server) over HTTP with the project's client (net::http_client), and
// reads the server process's CPU time and memory from /proc.
//
//   bench_serve_load --url http://127.0.0.1:PORT --server-pid PID [--graph G]
//                    [--mode runs|hold|park] [--runs N] [--concurrency C]
//                    [--warmup W] [--stream] [--hold-ms H] [--settle-ms S]
//                    [--label TEXT]
//
// --url and --server-pid may be repeated: servers sharing one store
// (bench/serve/many_hubs.sh). Runs are posted to them round robin, and
// CPU and memory are the servers' summed.
//
// --mode runs (default): closed loop, C runs in flight; each run is
//   POST /threads/{new uuid}/runs/wait {"assistant_id": G, "if_not_exists":
//   "create", "input": {...}} and its JSON answer, or with --stream POST
//   /threads/{new uuid}/runs/stream read to the end of its SSE; a finished
//   run starts the next until N have run (after W unmeasured ones). A run
//   counts only when its final values say "status": "completed".
//   Reported: runs/s, p50/p99/max latency, the server's CPU per run
//   (utime + stime from /proc/PID/stat over the measured phase), its RSS
//   before and after, and this process's CPU per run.
// --mode hold: memory per open stream. Opens N streams (50 connecting at a
//   time) on runs that hold in their first step for H ms (input "hold_ms");
//   once every stream has its first event (metadata) and S ms more have
//   passed, the server's RSS against the RSS before, divided by the streams
//   open: KiB per open stream (the stream's connection and its run in
//   flight); and against the RSS once the first half was open (and S ms
//   more): KiB per open stream of the second half. Then waits for all to
//   end.
// --mode park: memory per parked run. Makes N runs of a graph that pauses
//   for a person (C at a time, runs/wait); each must end interrupted. The
//   server's RSS S ms after the last against the RSS before: KiB per parked
//   run; and against the RSS after the first half (N/2 made, then S ms):
//   KiB per parked run of the second half, without the costs that do not
//   grow with the runs kept.
//
// One JSON line on stdout, a summary on stderr. Exits 1 when a run failed.
#include <switchboard/net/http_client.hpp>
#include <switchboard/net/sse_parser.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

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
#include <random>
#include <sstream>
#include <thread>
#include <string>
#include <memory>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace net = switchboard::net;
using clock_type = std::chrono::steady_clock;

struct options {
  std::vector<std::string> urls;  // several: servers sharing a store, runs posted round robin
  std::string graph = "bench_serve";
  std::string mode = "runs";
  std::string label;
  long runs = 1000;
  long concurrency = 1;
  long warmup = 0;
  long hold_ms = 20000;
  long settle_ms = 1000;
  std::vector<int> server_pids;  // several: their CPU and memory summed
  bool stream = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "bench_serve_load: " << problem << "\n"
            << "usage: bench_serve_load --url http://127.0.0.1:PORT --server-pid PID [--graph G]\n"
            << "                        (--url and --server-pid repeatable: servers sharing a store)\n"
            << "                        [--mode runs|hold|park] [--runs N] [--concurrency C] [--warmup W]\n"
            << "                        [--stream] [--hold-ms H] [--settle-ms S] [--label TEXT]\n";
  std::exit(2);
}

long integer(std::string_view flag, std::string_view text, long minimum) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < minimum)
    usage(std::string(flag) + ": '" + std::string(text) + "' is not an integer >= " + std::to_string(minimum));
  return value;
}

options parse_args(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") usage("help");
    if (flag == "--stream") {
      o.stream = true;
      continue;
    }
    if (i + 1 >= argc) usage(std::string(flag) + " needs a value");
    const std::string_view value = argv[++i];
    if (flag == "--url") o.urls.emplace_back(value);
    else if (flag == "--graph") o.graph = value;
    else if (flag == "--mode") o.mode = value;
    else if (flag == "--label") o.label = value;
    else if (flag == "--runs") o.runs = integer(flag, value, 1);
    else if (flag == "--concurrency") o.concurrency = integer(flag, value, 1);
    else if (flag == "--warmup") o.warmup = integer(flag, value, 0);
    else if (flag == "--hold-ms") o.hold_ms = integer(flag, value, 0);
    else if (flag == "--settle-ms") o.settle_ms = integer(flag, value, 0);
    else if (flag == "--server-pid") o.server_pids.push_back(static_cast<int>(integer(flag, value, 1)));
    else usage("unknown option " + std::string(flag));
  }
  if (o.urls.empty()) usage("--url is required");
  if (o.server_pids.empty()) usage("--server-pid is required");
  if (o.mode != "runs" && o.mode != "hold" && o.mode != "park") usage("--mode must be runs, hold or park");
  return o;
}

// ------------------------------------------------------------ /proc

struct proc_sample {
  double cpu_s = 0;    // utime + stime
  long rss_kib = 0;    // VmRSS
  long hwm_kib = 0;    // VmHWM (peak RSS)
  long threads = 0;
};

proc_sample sample_process(int pid) {
  proc_sample s;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) throw std::runtime_error("cannot read /proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(text.substr(paren + 2));
  std::vector<std::string> f;
  for (std::string t; fields >> t;) f.push_back(t);
  // After "pid (comm) ": f[0] is field 3 (state); utime is field 14, stime 15.
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  s.cpu_s = (std::stod(f.at(11)) + std::stod(f.at(12))) / tick;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    auto number = [&] { return std::stol(line.substr(line.find(':') + 1)); };
    if (line.starts_with("VmRSS:")) s.rss_kib = number();
    else if (line.starts_with("VmHWM:")) s.hwm_kib = number();
    else if (line.starts_with("Threads:")) s.threads = number();
  }
  return s;
}

// The servers' samples summed (servers sharing a store).
proc_sample sample_processes(const std::vector<int>& pids) {
  proc_sample sum;
  for (const int pid : pids) {
    const auto s = sample_process(pid);
    sum.cpu_s += s.cpu_s;
    sum.rss_kib += s.rss_kib;
    sum.hwm_kib += s.hwm_kib;
    sum.threads += s.threads;
  }
  return sum;
}

double own_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return seconds(ru.ru_utime) + seconds(ru.ru_stime);
}

// ------------------------------------------------------------ requests

std::string random_uuid() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  const auto a = engine(), b = engine();
  char out[37];
  std::snprintf(out, sizeof out, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0x0fff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return out;
}

// What a finished run must show in its final values.
enum class expect { completed, interrupted };

// The final values of a run as the server answered them: "" when fine,
// otherwise why not.
std::string check_values(std::string_view text, expect wanted) {
  boost::system::error_code ec;
  const auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return "the answer is not a JSON object: " + std::string(text.substr(0, 200));
  const auto& o = v.get_object();
  if (o.contains("__error__")) return "the run failed: " + json::serialize(o.at("__error__"));
  if (wanted == expect::interrupted)
    return o.contains("__interrupt__") ? "" : "the run did not pause: " + std::string(text.substr(0, 200));
  const auto* status = o.if_contains("status");
  if (!status || !status->is_string() || status->get_string() != "completed")
    return "the run did not complete: " + std::string(text.substr(0, 200));
  return {};
}

// An SSE answer: keeps the last `values` event, counts events, notes the
// first (metadata) event and an `error` event.
class sse_reader final : public net::body_stream, public net::sse_handler {
 public:
  explicit sse_reader(std::atomic<long>* opened = nullptr) : opened_(opened) {}

  void begin() override {
    parser_.reset();
    last_values_.clear();
    error_.clear();
    events_ = 0;
  }
  void data(std::string_view bytes) override {
    if (parser_.feed(bytes, *this) != net::sse_status::ok) throw std::runtime_error("an SSE event too large");
  }
  std::optional<std::string> end() override {
    if (last_values_.empty()) return std::string("the stream ended without values");
    return std::nullopt;
  }
  void on_event(const net::sse_event& e) override {
    if (events_++ == 0 && opened_) opened_->fetch_add(1);
    if (e.type == "values") last_values_ = std::string(e.data);
    else if (e.type == "error") error_ = std::string(e.data);
  }

  const std::string& last_values() const { return last_values_; }
  const std::string& error() const { return error_; }
  long events() const { return events_; }

 private:
  net::sse_parser parser_;
  std::string last_values_, error_;
  long events_ = 0;
  std::atomic<long>* opened_;
};

struct phase {
  explicit phase(long n) : total(n), latency_us(static_cast<std::size_t>(n), 0) {}
  long total;
  std::atomic<long> next{0};
  std::vector<std::uint32_t> latency_us;
  std::map<std::string, long> failures;
  long failed = 0;
  long events = 0;
  std::atomic<long> opened{0};   // hold: streams that have their first event
  std::atomic<long> finished{0};
};

struct load {
  const options& o;
  std::vector<std::unique_ptr<net::http_client>>& clients;  // one per server, used round robin
  std::string input;  // the run's input, as JSON
  expect wanted;
};

std::string body_of(const load& l) {
  return R"({"assistant_id":")" + l.o.graph + R"(","if_not_exists":"create","input":)" + l.input + "}";
}

// One run; returns "" when it ended as expected.
asio::awaitable<std::string> one_run(const load& l, phase& p, bool stream, long index) {
  auto& client = *l.clients[static_cast<std::size_t>(index) % l.clients.size()];
  const std::string path = "/threads/" + random_uuid() + (stream ? "/runs/stream" : "/runs/wait");
  const std::string body = body_of(l);
  if (stream) {
    static constexpr net::http_header accept[] = {{"Accept", "text/event-stream"}};
    sse_reader reader(&p.opened);
    auto r = co_await client.post_json(path, body, accept, nullptr, &reader);
    p.events += reader.events();
    if (!r.streamed) co_return "no stream: HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200);
    if (!reader.error().empty()) co_return "error event: " + reader.error();
    co_return check_values(reader.last_values(), l.wanted);
  }
  auto r = co_await client.post_json(path, body, {});
  co_return check_values(r.body, l.wanted);
}

asio::awaitable<void> worker(const load& l, phase& p, bool stream) {
  for (long i = p.next.fetch_add(1); i < p.total; i = p.next.fetch_add(1)) {
    const auto started = clock_type::now();
    std::string failure;
    try {
      failure = co_await one_run(l, p, stream, i);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    p.latency_us[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - started).count());
    p.finished.fetch_add(1);
    if (!failure.empty()) {
      ++p.failed;
      const auto kind = failure.substr(0, failure.find(':'));
      if (++p.failures[kind] <= 3) std::cerr << "run failed: " << failure.substr(0, 400) << "\n";
    }
  }
}

void run_phase(asio::io_context& io, const load& l, phase& p, long concurrency, bool stream) {
  for (long i = 0; i < std::min(p.total, concurrency); ++i) asio::co_spawn(io, worker(l, p, stream), asio::detached);
  io.run();
  io.restart();
}

double percentile_ms(const std::vector<std::uint32_t>& sorted_us, double q) {
  if (sorted_us.empty()) return 0;
  const auto rank = static_cast<std::size_t>(q * static_cast<double>(sorted_us.size() - 1) + 0.5);
  return sorted_us[std::min(rank, sorted_us.size() - 1)] / 1000.0;
}

json::object to_object(const std::map<std::string, long>& counts) {
  json::object out;
  for (const auto& [key, value] : counts) out[key] = value;
  return out;
}

void sleep_ms(long ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

int main(int argc, char** argv) {
  const options o = parse_args(argc, argv);
  asio::io_context io(1);

  net::http_options http;
  http.retry.max_attempts = 1;  // a failure is reported, never hidden by a retry
  http.connect_timeout = std::chrono::seconds(60);
  http.request_timeout = std::chrono::minutes(10);
  http.stream_idle_timeout = std::chrono::minutes(10);
  http.max_connections_per_host = static_cast<std::size_t>(std::max(o.concurrency, o.mode == "hold" ? o.runs : 1L));
  http.idle_timeout = std::chrono::minutes(10);
  http.user_agent = "bench_serve_load";
  std::vector<std::unique_ptr<net::http_client>> clients;
  for (const auto& url : o.urls) {
    http.base_url = url;
    clients.push_back(std::make_unique<net::http_client>(http, "bench server"));
  }

  json::object input{{"request", "Summarize what changed in the quarterly report and check it for errors."},
                     {"user", "bench"}};
  const auto wanted = o.mode == "park" ? expect::interrupted : expect::completed;
  const load warm_load{o, clients, json::serialize(input), wanted};  // warm-up runs never hold
  if (o.mode == "hold") input["hold_ms"] = o.hold_ms;
  const load l{o, clients, json::serialize(input), wanted};

  json::object report{{"label", o.label}, {"mode", o.mode},           {"graph", o.graph},
                      {"stream", o.stream}, {"runs", o.runs},         {"concurrency", o.concurrency},
                      {"warmup", o.warmup}};
  long failed = 0;
  try {
    if (o.warmup > 0) {
      phase warm(o.warmup);
      run_phase(io, warm_load, warm, o.mode == "hold" ? 50 : o.concurrency, o.stream);
      if (warm.failed > 0) std::cerr << warm.failed << " of " << o.warmup << " warm-up runs failed\n";
      sleep_ms(o.settle_ms);
    }
    const auto before = sample_processes(o.server_pids);
    const double own_before = own_cpu_s();
    report["server_rss_before_kib"] = before.rss_kib;
    report["server_threads"] = before.threads;

    if (o.mode == "hold") {
      // Streams open 50 at a time (each waits for the one before it to
      // have its first event: neither server's listen backlog is what is
      // measured); a monitor samples the server once every stream is open
      // (or has failed), before any held run can have ended.
      phase p(o.runs);
      proc_sample open{};
      long opened_at_sample = 0;
      bool sampled = false;
      const auto started = clock_type::now();
      auto pause = [](long ms) -> asio::awaitable<void> {
        asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
        co_await timer.async_wait(asio::use_awaitable);
      };
      // Halfway, the launcher waits for the first half to be open and
      // samples the server: the second half's growth per stream leaves
      // out what does not grow with the streams (caches, pools, the
      // runtime's first growth).
      const long half = p.total / 2;
      proc_sample halfway{};
      long opened_at_half = 0;
      auto ended_ok = [&] { return p.finished.load() - p.failed > 0; };
      asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        for (long launched = 0; launched < p.total; ++launched) {
          if (launched == half) {
            while (p.opened.load() + p.failed < half && !ended_ok()) co_await pause(20);
            co_await pause(o.settle_ms);
            opened_at_half = p.opened.load();
            halfway = sample_processes(o.server_pids);
          }
          while (launched - p.opened.load() - p.failed >= 50) co_await pause(2);
          asio::co_spawn(co_await asio::this_coro::executor, worker(l, p, true), asio::detached);
        }
      }, asio::detached);
      asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        while (p.opened.load() + p.failed < p.total && !ended_ok()) co_await pause(20);
        co_await pause(o.settle_ms);
        opened_at_sample = p.opened.load();
        if (!ended_ok()) {
          open = sample_processes(o.server_pids);
          sampled = true;
        }
      }, asio::detached);
      io.run();
      io.restart();
      failed = p.failed;
      const double open_s = std::chrono::duration<double>(clock_type::now() - started).count();
      if (!sampled) {
        std::cerr << "hold: a run ended before all " << o.runs << " streams were open (" << opened_at_sample
                  << " were): raise --hold-ms\n";
        ++failed;
      }
      const double per_stream =
          sampled && opened_at_sample > 0 ? double(open.rss_kib - before.rss_kib) / double(opened_at_sample) : 0.0;
      const long second_half = opened_at_sample - opened_at_half;
      const double per_stream_second_half =
          sampled && second_half > 0 ? double(open.rss_kib - halfway.rss_kib) / double(second_half) : 0.0;
      report["streams_open_at_sample"] = opened_at_sample;
      report["server_rss_open_kib"] = open.rss_kib;
      report["rss_per_open_stream_kib"] = per_stream;
      report["streams_open_halfway"] = opened_at_half;
      report["server_rss_halfway_kib"] = halfway.rss_kib;
      report["rss_per_open_stream_second_half_kib"] = per_stream_second_half;
      report["elapsed_s"] = open_s;
      report["failed"] = failed;
      report["failures"] = to_object(p.failures);
      std::cout << json::serialize(report) << std::endl;
      std::fprintf(stderr, "%s hold: %ld streams open on runs held %ld ms: server RSS %.1f -> %.1f -> %.1f MiB, %.2f KiB "
                   "per open stream (second half: %.2f); failures %ld\n", o.label.c_str(), opened_at_sample, o.hold_ms,
                   before.rss_kib / 1024.0, halfway.rss_kib / 1024.0, open.rss_kib / 1024.0, per_stream,
                   per_stream_second_half, failed);
      return failed == 0 ? 0 : 1;
    }

    if (o.mode == "park") {
      // In two halves, each C at a time: the second half's growth per run
      // leaves out what does not grow with the runs kept (the high-water
      // mark of the runs in flight, caches filling up).
      phase first(o.runs / 2), second(o.runs - o.runs / 2);
      run_phase(io, l, first, o.concurrency, false);
      sleep_ms(o.settle_ms);
      const auto halfway = sample_processes(o.server_pids);
      run_phase(io, l, second, o.concurrency, false);
      const auto after = sample_processes(o.server_pids);
      sleep_ms(o.settle_ms);
      const auto settled = sample_processes(o.server_pids);
      failed = first.failed + second.failed;
      const double per_run = double(settled.rss_kib - before.rss_kib) / double(o.runs);
      const double per_run_second_half = double(settled.rss_kib - halfway.rss_kib) / double(second.total);
      const double cpu_us = (after.cpu_s - before.cpu_s) * 1e6 / double(o.runs);
      report["server_cpu_us_per_run"] = cpu_us;
      report["server_rss_halfway_kib"] = halfway.rss_kib;
      report["server_rss_after_kib"] = settled.rss_kib;
      report["rss_growth_per_run_kib"] = per_run;
      report["rss_growth_per_run_second_half_kib"] = per_run_second_half;
      report["failed"] = failed;
      auto failures = first.failures;
      for (const auto& [kind, n] : second.failures) failures[kind] += n;
      report["failures"] = to_object(failures);
      std::cout << json::serialize(report) << std::endl;
      std::fprintf(stderr, "%s park: %ld parked runs, %ld at a time: server RSS %.1f -> %.1f -> %.1f MiB, %.2f KiB per "
                   "parked run (second half: %.2f); %.1f us CPU per run; failures %ld\n", o.label.c_str(), o.runs,
                   o.concurrency, before.rss_kib / 1024.0, halfway.rss_kib / 1024.0, settled.rss_kib / 1024.0, per_run,
                   per_run_second_half, cpu_us, failed);
      return failed == 0 ? 0 : 1;
    }

    phase p(o.runs);
    const auto started = clock_type::now();
    run_phase(io, l, p, o.concurrency, o.stream);
    const double elapsed = std::chrono::duration<double>(clock_type::now() - started).count();
    const auto after = sample_processes(o.server_pids);
    const double own = own_cpu_s() - own_before;
    failed = p.failed;
    const proc_sample settled = after;

    std::vector<std::uint32_t> sorted = p.latency_us;
    std::sort(sorted.begin(), sorted.end());
    const double n = double(o.runs);
    const double rate = n / elapsed;
    const double server_cpu_us = (after.cpu_s - before.cpu_s) * 1e6 / n;
    report["elapsed_s"] = elapsed;
    report["runs_per_s"] = rate;
    report["p50_ms"] = percentile_ms(sorted, 0.50);
    report["p99_ms"] = percentile_ms(sorted, 0.99);
    report["max_ms"] = sorted.empty() ? 0.0 : sorted.back() / 1000.0;
    report["server_cpu_s"] = after.cpu_s - before.cpu_s;
    report["server_cpu_us_per_run"] = server_cpu_us;
    report["client_cpu_us_per_run"] = own * 1e6 / n;
    report["server_rss_after_kib"] = settled.rss_kib;
    report["server_peak_rss_kib"] = settled.hwm_kib;
    // Everything the server keeps of a finished run (threads, runs, their
    // events and checkpoints), with the allocator's noise.
    report["rss_growth_per_run_kib"] = double(settled.rss_kib - before.rss_kib) / n;
    if (o.stream) report["events_per_run"] = double(p.events) / n;
    report["failed"] = failed;
    report["failures"] = to_object(p.failures);
    std::cout << json::serialize(report) << std::endl;
    std::fprintf(stderr,
                 "%s %s%s: %ld runs, concurrency %ld\n"
                 "  throughput  %.0f runs/s over %.2f s\n"
                 "  latency     p50 %.2f ms, p99 %.2f ms, max %.2f ms\n"
                 "  server      %.1f us CPU per run; RSS %.1f -> %.1f MiB (%.2f KiB per run)\n"
                 "  client      %.1f us CPU per run\n"
                 "  failures    %ld\n",
                 o.label.c_str(), o.mode.c_str(), o.stream ? " (stream)" : "", o.runs, o.concurrency, rate, elapsed,
                 percentile_ms(sorted, 0.5), percentile_ms(sorted, 0.99), sorted.empty() ? 0.0 : sorted.back() / 1000.0,
                 server_cpu_us, before.rss_kib / 1024.0, settled.rss_kib / 1024.0,
                 double(settled.rss_kib - before.rss_kib) / n, own * 1e6 / n, failed);
  } catch (const std::exception& e) {
    std::cerr << "bench_serve_load: " << e.what() << "\n";
    return 2;
  }
  return failed == 0 ? 0 : 1;
}
