// Loading a large workflow file: parse (JSON → workflow_definition) and
// compile (checks, routes, graph, fingerprint) of a chain of N agent nodes,
// N = 10k, 100k, 200k. Both must grow linearly with N (each node's route
// target was once found by a scan: 200k nodes did not finish in minutes).
//
// Run: build/bench/orchestrator/switchboard_workflow_load_bench
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/workflow.hpp>
#include <switchboard/orchestrator/workflow_file.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/awaitable.hpp>
#include <boost/json/parse.hpp>

#include <memory>
#include <string>

namespace {

namespace json = boost::json;
using namespace switchboard;

class step_agent final : public agents::agent {
 public:
  std::string_view name() const noexcept override { return "step"; }
  std::string_view description() const noexcept override { return "benchmark agent"; }
  std::string output_schema() const override { return "bench.output@1"; }
  boost::asio::awaitable<protocol::envelope> run(agents::agent_context&) override { co_return protocol::envelope{}; }
};

std::string chain_workflow(std::int64_t count) {
  std::string text = R"({"name": "chain", "entry": "n0", "nodes": {)";
  text.reserve(static_cast<std::size_t>(count) * 96);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::string next = i + 1 < count ? "n" + std::to_string(i + 1) : "done";
    text += "\"n" + std::to_string(i) + R"(": {"type": "agent", "agent": "step", "on_error": "done", )" +
            R"("routes": [{"when": "otherwise", "to": ")" + next + "\"}]},";
  }
  text += R"("done": {"type": "end"}}})";
  return text;
}

agents::agent_registry& registry() {
  static const auto r = [] {
    auto schemas = std::make_shared<protocol::schema_registry>();
    schemas->add({"bench.output", 1}, json::parse(R"({"type": "object"})"));
    auto made = std::make_unique<agents::agent_registry>(schemas);
    made->add(std::make_shared<step_agent>());
    return made;
  }();
  return *r;
}

void BM_parse_workflow(benchmark::State& state) {
  const auto text = chain_workflow(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(orchestrator::parse_workflow_text(text, "chain.json"));
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["MiB"] = static_cast<double>(text.size()) / (1 << 20);
}

void BM_compile_workflow(benchmark::State& state) {
  const auto definition = orchestrator::parse_workflow_text(chain_workflow(state.range(0)), "chain.json");
  for (auto _ : state) {
    state.PauseTiming();  // compile() takes the definition: copying it is not compiling
    auto copy = definition;
    state.ResumeTiming();
    benchmark::DoNotOptimize(orchestrator::compile(std::move(copy), registry()));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

BENCHMARK(BM_parse_workflow)->ArgName("nodes")->Arg(10'000)->Arg(100'000)->Arg(200'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_compile_workflow)
    ->ArgName("nodes")
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(200'000)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
