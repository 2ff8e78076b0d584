// Hub overhead with native agents (no model, no I/O):
//
//   BM_four_agent_workflow/<validate>/<metrics>   CPU per workflow of four
//       agents in a chain (parse → schedule → check → confirm), one thread.
//   in-flight memory (printed after the benchmarks): N workflows started at
//       once whose agents suspend on a timer; RSS delta / N while all are
//       suspended. --in_flight=N (default 10000).
//
// Run: build/bench/orchestrator/switchboard_orchestrator_bench
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/hub.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <spdlog/logger.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace switchboard;

class native_agent final : public agents::agent {
 public:
  native_agent(std::string name, std::chrono::milliseconds delay = {}) : name_(std::move(name)), delay_(delay) {}
  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "benchmark agent"; }
  std::string output_schema() const override { return "bench.output@1"; }

  asio::awaitable<protocol::envelope> run(agents::agent_context&) override {
    if (delay_.count() > 0) {
      asio::steady_timer timer(co_await asio::this_coro::executor, delay_);
      co_await timer.async_wait(asio::use_awaitable);
    }
    protocol::envelope e;
    e.data["status"] = "ok";
    e.confidence = 0.95;
    e.explanation = "Done.";
    e.reasoning = "Native agent.";
    co_return e;
  }

 private:
  std::string name_;
  std::chrono::milliseconds delay_;
};

struct fixture {
  explicit fixture(std::chrono::milliseconds delay = {}) : registry(schemas()) {
    for (auto name : {"parse", "schedule", "check", "confirm"}) {
      registry.add(std::make_shared<native_agent>(name, delay));
    }
    orchestrator::workflow_builder b{"four"};
    b.agent("parse").route(orchestrator::condition::equals("/status", "ok"), "schedule").otherwise("failed");
    b.agent("schedule").otherwise("check");
    b.agent("check").route(orchestrator::condition::exists("/status"), "confirm").otherwise("failed");
    b.agent("confirm").otherwise("done");
    b.end("done");
    b.fail("failed", "unexpected");
    workflow = b.compile(registry);
  }

  static std::shared_ptr<protocol::schema_registry> schemas() {
    auto s = std::make_shared<protocol::schema_registry>();
    s->add({"bench.output", 1}, json::parse(R"({"type": "object", "properties": {"status": {"type": "string"}}})"));
    return s;
  }

  agents::agent_registry registry;
  std::shared_ptr<const orchestrator::compiled_workflow> workflow;
};

std::shared_ptr<spdlog::logger> quiet() {
  auto logger = std::make_shared<spdlog::logger>("bench");
  logger->set_level(spdlog::level::warn);
  return logger;
}

void BM_four_agent_workflow(benchmark::State& state) {
  fixture f;
  asio::io_context io(1);
  orchestrator::hub_options options;
  options.logger = quiet();
  options.validate_envelopes = state.range(0) != 0;
  options.collect_metrics = state.range(1) != 0;
  orchestrator::hub hub{io.get_executor(), f.registry, options};
  json::value input = json::object{{"request", "meet Tuesday"}};
  constexpr int batch = 64;  // workflows per io.run(), like a busy server
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      asio::co_spawn(io, hub.run(f.workflow, input), asio::detached);
    }
    io.run();
    io.restart();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["us_per_workflow"] = benchmark::Counter(
      double(state.iterations() * batch), benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
      benchmark::Counter::OneK::kIs1000);
}
BENCHMARK(BM_four_agent_workflow)
    ->ArgNames({"validate", "metrics"})
    ->Args({1, 1})
    ->Args({0, 1})
    ->Args({0, 0})
    ->Unit(benchmark::kMicrosecond);

long rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * sysconf(_SC_PAGESIZE);
}

// Starts `count` workflows whose agents wait on a timer, runs until every
// one is suspended in its first agent, and reports the RSS growth.
void measure_in_flight(int count) {
  fixture f(std::chrono::milliseconds(500));
  asio::io_context io(1);
  orchestrator::hub_options options;
  options.logger = quiet();
  orchestrator::hub hub{io.get_executor(), f.registry, options};
  json::value input = json::object{{"request", "meet Tuesday"}};
  std::vector<orchestrator::workflow_handle> handles;
  handles.reserve(count);
  const long before = rss_bytes();
  for (int i = 0; i < count; ++i) handles.push_back(hub.start(f.workflow, input));
  while (io.poll() > 0) {
  }
  const long during = rss_bytes();
  io.run();
  int completed = 0;
  for (auto& h : handles) completed += h.wait().status == orchestrator::workflow_status::completed;
  std::printf("in-flight memory: %d workflows suspended in their first agent: RSS +%.1f MiB = %.0f bytes/workflow"
              " (%d completed afterwards)\n",
              count, (during - before) / 1048576.0, double(during - before) / count, completed);
}

}  // namespace

int main(int argc, char** argv) {
  int in_flight = 10000;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--in_flight=", 12) == 0) {
      in_flight = std::atoi(argv[i] + 12);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_count = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_count, rest.data());
  // Memory first, on a fresh heap, so freed blocks of the CPU runs do not hide growth.
  measure_in_flight(in_flight);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
