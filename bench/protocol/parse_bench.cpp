// Parse + validate of a typical ~2 KB agent envelope, in the three shapes
// models produce: plain JSON, JSON fenced in prose, and a truncated answer
// with trailing commas that needs repair. Reports bytes/s of raw answer.
#include <switchboard/protocol/output_parser.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include "bench_schemas.hpp"

#include <benchmark/benchmark.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <string>

namespace sp = switchboard::protocol;
namespace json = boost::json;

namespace {

const sp::compiled_schema& envelope_schema() {
  static const sp::compiled_schema schema = [] {
    static sp::schema_registry registry;
    registry.add({"scheduling.output", 1}, json::parse(bench::scheduling_output_schema));
    return registry.envelope_schema("scheduling.output");
  }();
  return schema;
}

std::string typical_envelope() {
  const json::value envelope{
      {"data", bench::scheduling_data()},
      {"explanation", "I found six slots this week; Thursday 10:30 suits everyone best."},
      {"confidence", 0.82},
      {"reasoning", "All three calendars are free on Thursday morning and the room is available; "
                    "later slots have partial conflicts listed per candidate."}};
  return json::serialize(envelope);
}

void run(benchmark::State& state, const std::string& raw, sp::parse_stage expected) {
  const auto& schema = envelope_schema();
  const auto check = sp::parse_output(raw, schema);
  if (!check.ok() || check.stage != expected) {
    state.SkipWithError("benchmark input does not parse as intended");
    return;
  }
  for (auto _ : state) {
    auto result = sp::parse_output(raw, schema);
    benchmark::DoNotOptimize(result);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(raw.size()));
  state.counters["bytes"] = static_cast<double>(raw.size());
}

void BM_parse_direct(benchmark::State& state) {
  run(state, typical_envelope(), sp::parse_stage::direct);
}

void BM_parse_fenced(benchmark::State& state) {
  run(state, "Here is the schedule you asked for:\n\n```json\n" + typical_envelope() +
                 "\n```\n\nLet me know if you want other options.",
      sp::parse_stage::extracted);
}

void BM_parse_repaired(benchmark::State& state) {
  // Trailing commas, and the answer cut off inside the reasoning string.
  std::string raw = typical_envelope();
  raw.replace(raw.find("],\"timezone\""), 1, ",]");
  raw.resize(raw.size() - 30);
  run(state, raw, sp::parse_stage::repaired);
}

void BM_json_only_direct(benchmark::State& state) {
  const std::string raw = typical_envelope();
  for (auto _ : state) {
    auto result = sp::parse_json_output(raw);
    benchmark::DoNotOptimize(result);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(raw.size()));
}

}  // namespace

BENCHMARK(BM_parse_direct);
BENCHMARK(BM_parse_fenced);
BENCHMARK(BM_parse_repaired);
BENCHMARK(BM_json_only_direct);

BENCHMARK_MAIN();
