// What durable runs cost: the hub with a checkpoint store (none, in-memory,
// SQLite in a temporary directory), native agents, one io_context thread.
//
//   BM_four_agent/store:S/in_flight:F   64 four-agent workflows (parse →
//       schedule → check → confirm) per iteration, F of them in flight at
//       once (each of F workers runs 64/F in a row). Counters per workflow:
//       cpu_us (process CPU from getrusage: the hub's thread and the SQLite
//       store's thread), hub_cpu_us (the io_context thread alone), wall_us;
//       workflows/s and steps/s (wall clock).
//   BM_cycle/store:S/steps:N   one workflow whose only agent routes to
//       itself until it has run N times (a counter in its data), max_steps
//       N. Same counters, per run.
//   S: 0 = no store, 1 = in-memory, 2 = SQLite.
//
// After the benchmarks (--sizes=0 skips it): the 100- vs 1,000-step cycle
// with each store, alternating runs on one store, mean wall and CPU time of
// 2 × --repeats runs each (default 5) and their ratio; then, on fresh SQLite
// files, the same cycles and a --input_steps-step cycle (default 100) whose
// input is --input_mb MB (default 10): what the hub handed the store, the
// write-ahead log and the database's size once closed. The input is
// journaled once, so the file grows by about the input, not steps × input.
//
// Run: build/bench/durable/switchboard_durable_bench
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/stores/sqlite_store.hpp>
#include <switchboard/orchestrator/hub.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <spdlog/logger.h>
#include <sqlite3.h>

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace fs = std::filesystem;
namespace orch = switchboard::orchestrator;
using namespace switchboard;

enum store_kind { no_store = 0, memory_store = 1, sqlite_store = 2 };

// ---------------------------------------------------------------- agents and workflows

// Answers a small fixed envelope.
class fixed_agent final : public agents::agent {
 public:
  explicit fixed_agent(std::string name) : name_(std::move(name)) {}
  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "benchmark agent"; }
  std::string output_schema() const override { return "bench.output@1"; }

  asio::awaitable<protocol::envelope> run(agents::agent_context&) override {
    protocol::envelope e;
    e.data["status"] = "ok";
    e.confidence = 0.95;
    e.explanation = "Done.";
    e.reasoning = "Native agent.";
    co_return e;
  }

 private:
  std::string name_;
};

// Counts its own runs: data.n is one more than in its previous envelope.
class counter_agent final : public agents::agent {
 public:
  std::string_view name() const noexcept override { return "loop"; }
  std::string_view description() const noexcept override { return "counts its runs"; }
  std::string output_schema() const override { return "bench.counter@1"; }

  asio::awaitable<protocol::envelope> run(agents::agent_context& context) override {
    std::int64_t n = 1;
    if (const auto* previous = context.outputs.latest("loop")) {
      if (const auto* p = previous->data.if_contains("n"); p && p->is_int64()) n = p->get_int64() + 1;
    }
    protocol::envelope e;
    e.data["n"] = n;
    e.confidence = 0.95;
    e.explanation = "Counted.";
    e.reasoning = "Native agent.";
    co_return e;
  }
};

std::shared_ptr<protocol::schema_registry> schemas() {
  auto s = std::make_shared<protocol::schema_registry>();
  s->add({"bench.output", 1}, json::parse(R"({"type": "object", "properties": {"status": {"type": "string"}}})"));
  s->add({"bench.counter", 1}, json::parse(R"({"type": "object", "properties": {"n": {"type": "integer"}}})"));
  return s;
}

struct fixture {
  fixture() : registry(schemas()) {
    for (auto name : {"parse", "schedule", "check", "confirm"}) {
      registry.add(std::make_shared<fixed_agent>(name));
    }
    registry.add(std::make_shared<counter_agent>());
    orch::workflow_builder b{"four"};
    b.agent("parse").route(orch::condition::equals("/status", "ok"), "schedule").otherwise("failed");
    b.agent("schedule").otherwise("check");
    b.agent("check").route(orch::condition::exists("/status"), "confirm").otherwise("failed");
    b.agent("confirm").otherwise("done");
    b.end("done");
    b.fail("failed", "unexpected");
    four = b.compile(registry);
  }

  // The counter agent routes to itself until it has run `steps` times.
  std::shared_ptr<const orch::compiled_workflow> cycle(int steps) const {
    orch::workflow_builder b{"cycle"};
    b.max_steps(steps);
    b.agent("loop").route(orch::condition::compare("/n", orch::comparison::lt, steps), "loop").otherwise("done");
    b.end("done");
    return b.compile(registry);
  }

  agents::agent_registry registry;
  std::shared_ptr<const orch::compiled_workflow> four;
};

std::shared_ptr<spdlog::logger> quiet() {
  auto logger = std::make_shared<spdlog::logger>("bench");
  logger->set_level(spdlog::level::warn);
  return logger;
}

// ---------------------------------------------------------------- temporary files

// A private temporary directory, removed with its contents at exit.
class temp_dir {
 public:
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "switchboard-durable-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

const temp_dir& scratch() {
  static temp_dir dir;
  return dir;
}

// A database path not used before in this process.
fs::path fresh_db_path() {
  static int counter = 0;
  return scratch().path() / ("bench-" + std::to_string(++counter) + ".db");
}

void remove_db(const fs::path& db) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db.string() + suffix, ec);
}

std::uintmax_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  return ec ? 0 : size;
}

std::shared_ptr<orch::checkpoint_store> open_store(store_kind kind, const fs::path& db) {
  switch (kind) {
    case memory_store: return orch::make_in_memory_checkpoint_store();
    case sqlite_store: return switchboard::stores::make_sqlite_checkpoint_store(db);
    default: return nullptr;
  }
}

// ---------------------------------------------------------------- clocks

double process_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct meter {
  double cpu = process_cpu_seconds(), hub_cpu = thread_cpu_seconds(), wall = wall_seconds();
};

// Counters per workflow (and per step) over the benchmark's whole loop.
void report(benchmark::State& state, const meter& start, double workflows, double steps) {
  const meter end;
  const double cpu = end.cpu - start.cpu, hub_cpu = end.hub_cpu - start.hub_cpu, wall = end.wall - start.wall;
  state.counters["cpu_us"] = cpu / workflows * 1e6;
  state.counters["hub_cpu_us"] = hub_cpu / workflows * 1e6;
  state.counters["wall_us"] = wall / workflows * 1e6;
  state.counters["wf_per_s"] = workflows / wall;
  state.counters["steps_per_s"] = steps / wall;
  state.counters["cpu_us_per_step"] = cpu / steps * 1e6;
}

// SQLite: the writes (creates and saves) each transaction committed.
void report_group_commit(benchmark::State& state, const std::shared_ptr<orch::checkpoint_store>& store,
                         std::optional<stores::sqlite_write_counts> before) {
  if (!store || !before) return;
  const auto after = stores::write_counts_of(*store);
  const auto transactions = after->transactions - before->transactions;
  if (transactions > 0) state.counters["writes_per_tx"] = double(after->writes - before->writes) / double(transactions);
}

// ---------------------------------------------------------------- runs

struct totals {
  std::int64_t runs = 0;
  std::int64_t completed = 0;
  std::int64_t steps = 0;
  std::string first_problem;
};

// Runs `count` workflows one after the other.
asio::awaitable<void> worker(orch::hub& hub, std::shared_ptr<const orch::compiled_workflow> workflow,
                             const json::value& input, int count, totals& t) {
  for (int i = 0; i < count; ++i) {
    auto run = hub.run(workflow, input);
    const auto s = co_await std::move(run);
    ++t.runs;
    t.steps += s.step;
    if (s.status == orch::workflow_status::completed) {
      ++t.completed;
    } else if (t.first_problem.empty()) {
      t.first_problem = std::string(orch::to_string(s.status)) +
                        (s.errors.empty() ? std::string() : ": " + s.errors.front().message);
    }
  }
}

// `total` workflows, `in_flight` at a time, on `io` until all are done.
void run_batch(asio::io_context& io, orch::hub& hub, const std::shared_ptr<const orch::compiled_workflow>& workflow,
               const json::value& input, int total, int in_flight, totals& t) {
  for (int w = 0; w < in_flight; ++w) {
    const int count = total / in_flight + (w < total % in_flight ? 1 : 0);
    asio::co_spawn(io, worker(hub, workflow, input, count, t), asio::detached);
  }
  io.run();
  io.restart();
}

bool any_failed = false;  // a workflow that did not complete: main() fails

bool check(benchmark::State& state, const totals& t) {
  if (t.completed == t.runs) return true;
  any_failed = true;
  state.SkipWithError(("a workflow did not complete: " + t.first_problem).c_str());
  return false;
}

orch::hub_options options_for(std::shared_ptr<orch::checkpoint_store> store) {
  orch::hub_options options;
  options.logger = quiet();
  options.store = std::move(store);
  return options;
}

void BM_four_agent(benchmark::State& state) {
  const auto kind = static_cast<store_kind>(state.range(0));
  const int in_flight = static_cast<int>(state.range(1));
  constexpr int batch = 64;  // workflows per iteration
  const auto db = fresh_db_path();
  {
    fixture f;
    asio::io_context io(1);
    const auto store = open_store(kind, db);
    orch::hub hub{io.get_executor(), f.registry, options_for(store)};
    const json::value input = json::object{{"request", "meet Tuesday"}};
    totals t;
    run_batch(io, hub, f.four, input, batch, in_flight, t);  // warm-up: the first saves create the file's pages
    t = {};
    const auto writes_before = store ? stores::write_counts_of(*store) : std::nullopt;
    const meter start;
    for (auto _ : state) run_batch(io, hub, f.four, input, batch, in_flight, t);
    report(state, start, double(t.runs), double(t.steps));
    report_group_commit(state, store, writes_before);
    state.SetItemsProcessed(t.runs);
    check(state, t);
  }
  remove_db(db);
}
BENCHMARK(BM_four_agent)
    ->ArgNames({"store", "in_flight"})
    ->ArgsProduct({{no_store, memory_store, sqlite_store}, {1, 64}})
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_cycle(benchmark::State& state) {
  const auto kind = static_cast<store_kind>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  const auto db = fresh_db_path();
  {
    fixture f;
    const auto workflow = f.cycle(steps);
    asio::io_context io(1);
    orch::hub hub{io.get_executor(), f.registry, options_for(open_store(kind, db))};
    const json::value input = json::object{{"request", "count"}};
    totals t;
    run_batch(io, hub, workflow, input, 1, 1, t);  // warm-up
    t = {};
    const meter start;
    for (auto _ : state) run_batch(io, hub, workflow, input, 1, 1, t);
    report(state, start, double(t.runs), double(t.steps));
    check(state, t);
  }
  remove_db(db);
}
BENCHMARK(BM_cycle)
    ->ArgNames({"store", "steps"})
    ->ArgsProduct({{no_store, memory_store, sqlite_store}, {100, 1000}})
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- database sizes

// Forwards to a store and counts what the hub hands it.
class counting_store final : public orch::forwarding_checkpoint_store {
 public:
  explicit counting_store(std::shared_ptr<orch::checkpoint_store> inner)
      : forwarding_checkpoint_store(std::move(inner)) {}

  asio::awaitable<void> create(orch::save_request cp, std::chrono::milliseconds lease) override {
    count(cp);
    co_await inner().create(std::move(cp), lease);
  }
  asio::awaitable<void> save(orch::save_request cp) override {
    count(cp);
    co_await inner().save(std::move(cp));
  }

  std::int64_t saves = 0;
  std::uintmax_t head_bytes = 0, max_head = 0, journal_bytes = 0, max_record = 0;

 private:
  void count(const orch::save_request& cp) {
    ++saves;
    head_bytes += cp.state_json.size();
    max_head = std::max<std::uintmax_t>(max_head, cp.state_json.size());
    for (const auto& r : cp.journal) {
      journal_bytes += r.size();
      max_record = std::max<std::uintmax_t>(max_record, r.size());
    }
  }

};

struct sized_run {
  double wall_ms = 0;
  double cpu_ms = 0;
  std::int64_t steps = 0;
  std::int64_t saves = 0;
  std::uintmax_t head_bytes = 0, max_head = 0, journal_bytes = 0, max_record = 0;
  std::uintmax_t wal_bytes = 0;  // the write-ahead log just before the store closed
  std::uintmax_t db_bytes = 0;   // the file once the store closed (the log folded in)
  std::int64_t journal_rows = 0;
  std::int64_t stored_record_bytes = 0;
};

std::int64_t query_int(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  std::int64_t value = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
    value = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  return value;
}

// One cycle of `steps` in a fresh SQLite file, timed alone (a warm-up run
// in another file first), then the file's size once the store is closed.
sized_run sized_cycle(const fixture& f, int steps, const json::value& input) {
  sized_run result;
  const auto db = fresh_db_path();
  const auto workflow = f.cycle(steps);
  {
    auto counting = std::make_shared<counting_store>(switchboard::stores::make_sqlite_checkpoint_store(db));
    asio::io_context io(1);
    orch::hub hub{io.get_executor(), f.registry, options_for(counting)};
    json::value argument = input;  // the copy hub.run() takes, made before the clock starts
    totals t;
    const meter start;
    asio::co_spawn(io,
                   [&]() -> asio::awaitable<void> {
                     auto run = hub.run(workflow, std::move(argument));
                     const auto s = co_await std::move(run);
                     ++t.runs;
                     t.steps = s.step;
                     t.completed += s.status == orch::workflow_status::completed;
                     if (s.status != orch::workflow_status::completed && !s.errors.empty()) {
                       t.first_problem = s.errors.front().message;
                     }
                   },
                   asio::detached);
    io.run();
    const meter end;
    if (t.completed != 1) throw std::runtime_error("the cycle did not complete: " + t.first_problem);
    result.wall_ms = (end.wall - start.wall) * 1e3;
    result.cpu_ms = (end.cpu - start.cpu) * 1e3;
    result.steps = t.steps;
    result.saves = counting->saves;
    result.head_bytes = counting->head_bytes;
    result.max_head = counting->max_head;
    result.journal_bytes = counting->journal_bytes;
    result.max_record = counting->max_record;
    result.wal_bytes = file_size_or_zero(db.string() + "-wal");
  }  // hub and store gone: SQLite folds the log into the file and removes it
  result.db_bytes = file_size_or_zero(db) + file_size_or_zero(db.string() + "-wal");
  sqlite3* conn = nullptr;
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    result.journal_rows = query_int(conn, "SELECT COUNT(*) FROM journal");
    result.stored_record_bytes = query_int(conn, "SELECT SUM(LENGTH(record)) FROM journal");
  }
  sqlite3_close(conn);
  remove_db(db);
  return result;
}

std::uintmax_t empty_db_bytes() {
  const auto db = fresh_db_path();
  { auto store = switchboard::stores::make_sqlite_checkpoint_store(db); }
  const auto bytes = file_size_or_zero(db);
  remove_db(db);
  return bytes;
}

void print_run(const char* what, const sized_run& r) {
  std::printf("  %-26s %6lld steps %9.2f ms wall %9.2f ms cpu  %6lld saves  heads %9ju B (max %5ju)"
              "  journal %10ju B (max record %9ju) in %lld rows  wal %10ju B  db %10ju B\n",
              what, static_cast<long long>(r.steps), r.wall_ms, r.cpu_ms, static_cast<long long>(r.saves),
              r.head_bytes, r.max_head, r.journal_bytes, r.max_record, static_cast<long long>(r.journal_rows),
              r.wal_bytes, r.db_bytes);
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One run of `workflow` on `io`: {wall ms, process CPU ms}; throws unless it
// completes.
std::pair<double, double> timed_run_ms(asio::io_context& io, orch::hub& hub,
                                       const std::shared_ptr<const orch::compiled_workflow>& workflow,
                                       const json::value& input) {
  totals t;
  const meter start;
  run_batch(io, hub, workflow, input, 1, 1, t);
  const meter end;
  if (t.completed != 1) throw std::runtime_error("the cycle did not complete: " + t.first_problem);
  return {(end.wall - start.wall) * 1e3, (end.cpu - start.cpu) * 1e3};
}

// The 100- vs 1,000-step cycle in steady state: one store (and file) for
// every run, as a long-lived process has, so both lengths pay their share of
// SQLite's periodic WAL checkpoints. Runs alternate; means (a median would
// pick either side of the checkpoint every ~180 saves pays for).
void cycle_ratio(store_kind kind, int runs) {
  fixture f;
  const auto w100 = f.cycle(100), w1000 = f.cycle(1000);
  const auto db = fresh_db_path();
  {
    asio::io_context io(1);
    orch::hub hub{io.get_executor(), f.registry, options_for(open_store(kind, db))};
    const json::value input = json::object{{"request", "count"}};
    timed_run_ms(io, hub, w1000, input);  // warm-up
    std::vector<double> wall100, wall1000, cpu100, cpu1000;
    for (int i = 0; i < runs; ++i) {
      const auto [w1, c1] = timed_run_ms(io, hub, w100, input);
      wall100.push_back(w1);
      cpu100.push_back(c1);
      const auto [w2, c2] = timed_run_ms(io, hub, w1000, input);
      wall1000.push_back(w2);
      cpu1000.push_back(c2);
    }
    const double a = mean(wall100), b = mean(wall1000), c = mean(cpu100), d = mean(cpu1000);
    static const char* names[] = {"no store", "in-memory", "SQLite"};
    std::printf("  %-10s wall: 100 steps %8.2f ms, 1,000 steps %8.2f ms: %5.1fx   "
                "cpu: %8.2f ms, %8.2f ms: %5.1fx\n",
                names[kind], a, b, a > 0 ? b / a : 0.0, c, d, c > 0 ? d / c : 0.0);
  }
  remove_db(db);
}

void measure_sizes(int repeats, double input_mb, int input_steps) {
  fixture f;
  const json::value small = json::object{{"request", "count"}};
  std::printf("100- vs 1,000-step cycle, one store for all runs (mean of %d runs each):\n", 2 * repeats);
  for (auto kind : {no_store, memory_store, sqlite_store}) cycle_ratio(kind, 2 * repeats);

  std::printf("one run per fresh SQLite file (last of %d; time excludes closing the store, sizes after it):\n",
              repeats);
  std::printf("  empty database: %ju bytes\n", empty_db_bytes());
  sized_cycle(f, 100, small);  // warm-up
  std::vector<double> wall100, wall1000;
  sized_run last100, last1000;
  for (int i = 0; i < repeats; ++i) {
    last100 = sized_cycle(f, 100, small);
    wall100.push_back(last100.wall_ms);
    last1000 = sized_cycle(f, 1000, small);
    wall1000.push_back(last1000.wall_ms);
  }
  print_run("cycle of 100 steps", last100);
  print_run("cycle of 1,000 steps", last1000);
  const double m100 = median(wall100), m1000 = median(wall1000);
  std::printf("  median wall: 100 steps %.2f ms, 1,000 steps %.2f ms: ratio %.1fx\n", m100, m1000,
              m100 > 0 ? m1000 / m100 : 0.0);

  // ~input_mb MB of input: a document of printable text (no escapes).
  const auto bytes = static_cast<std::size_t>(input_mb * 1024 * 1024);
  std::string document(bytes, 'x');
  for (std::size_t i = 0; i < document.size(); i += 64) document[i] = ' ';
  const json::value big = json::object{{"request", "summarize"}, {"document", std::move(document)}};
  const auto r = sized_cycle(f, input_steps, big);
  char label[64];
  std::snprintf(label, sizeof label, "%.1f MB input, %d steps", input_mb, input_steps);
  print_run(label, r);
  std::printf("  database / input: %.2f (1 = the input written once)\n", double(r.db_bytes) / double(bytes));
}

}  // namespace

int main(int argc, char** argv) {
  bool sizes = true;
  int repeats = 5;
  double input_mb = 10;
  int input_steps = 100;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--sizes=", 8) == 0) {
      sizes = std::atoi(argv[i] + 8) != 0;
    } else if (std::strncmp(argv[i], "--repeats=", 10) == 0) {
      repeats = std::max(1, std::atoi(argv[i] + 10));
    } else if (std::strncmp(argv[i], "--input_steps=", 14) == 0) {
      input_steps = std::max(1, std::atoi(argv[i] + 14));
    } else if (std::strncmp(argv[i], "--input_mb=", 11) == 0) {
      input_mb = std::atof(argv[i] + 11);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_count = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_count, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (any_failed) {
    std::fprintf(stderr, "durable bench: a workflow did not complete\n");
    return 1;
  }
  if (sizes) {
    try {
      measure_sizes(repeats, input_mb, input_steps);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "durable bench: %s\n", e.what());
      return 1;
    }
  }
  return 0;
}
