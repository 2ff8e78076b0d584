// Validation of a valid agent answer: a ~300-byte and a ~2 KB `data` value
// against their schemas, through compiled_schema's fast path and through
// valijson alone (the reference it falls back to), plus validate_envelope on
// an envelope struct as the hub calls it, and a hostile string against a
// nested-quantifier pattern.
#include <switchboard/protocol/envelope.hpp>
#include <switchboard/protocol/validation.hpp>

#include "../../protocol/src/validator/fast_schema.hpp"
#include "bench_schemas.hpp"

#include <benchmark/benchmark.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <string>

namespace sp = switchboard::protocol;
namespace json = boost::json;

namespace {

// The e2e benchmark's research agent: a small answer.
const sp::compiled_schema& small_schema() {
  static const auto schema = sp::compiled_schema::compile(json::parse(bench::findings_schema), "bench.findings@1");
  return schema;
}

json::value small_data() {
  return json::parse(R"({
    "topic": "Scheduling a design review across three time zones",
    "findings": ["Thursday 10:30 CET suits all three attendees",
                 "Room B2 is free for the whole morning"],
    "sources": [{"title": "Team calendar export", "year": 2026},
                {"title": "Room booking system", "year": 2026}]
  })");
}

// The sample's scheduling agent with six candidate slots: a large answer.
const sp::compiled_schema& large_schema() {
  static const auto schema =
      sp::compiled_schema::compile(json::parse(bench::scheduling_output_schema), "scheduling.output@1");
  return schema;
}

json::value large_data() { return bench::scheduling_data(); }

void run(benchmark::State& state, const sp::compiled_schema& schema, const json::value& data,
         bool reference_only) {
  sp::detail::set_reference_validation_only(reference_only);
  if (!schema.validate(data).empty()) {
    state.SkipWithError("benchmark data does not validate");
    sp::detail::set_reference_validation_only(false);
    return;
  }
  for (auto _ : state) {
    auto errors = schema.validate(data);
    benchmark::DoNotOptimize(errors);
  }
  sp::detail::set_reference_validation_only(false);
  state.counters["bytes"] = static_cast<double>(json::serialize(data).size());
}

void BM_validate_small_fast(benchmark::State& state) { run(state, small_schema(), small_data(), false); }
void BM_validate_small_valijson(benchmark::State& state) { run(state, small_schema(), small_data(), true); }
void BM_validate_large_fast(benchmark::State& state) { run(state, large_schema(), large_data(), false); }
void BM_validate_large_valijson(benchmark::State& state) { run(state, large_schema(), large_data(), true); }

void BM_validate_envelope_struct(benchmark::State& state) {
  sp::envelope e;
  e.data = small_data().as_object();
  e.explanation = "Thursday 10:30 suits everyone.";
  e.reasoning = "All three calendars are free then.";
  e.confidence = 0.86;
  if (!sp::validate_envelope(e, small_schema()).empty()) {
    state.SkipWithError("benchmark envelope does not validate");
    return;
  }
  for (auto _ : state) {
    auto errors = sp::validate_envelope(e, small_schema());
    benchmark::DoNotOptimize(errors);
  }
}

// A hostile answer: a long string against a pattern a backtracking engine
// needs exponential time for (RE2: linear). Arg: the string's length.
void BM_validate_hostile_pattern(benchmark::State& state) {
  static const auto schema = sp::compiled_schema::compile(
      json::parse(R"({"properties": {"code": {"type": "string", "pattern": "^(a+)+$"}}})"), "bench.hostile@1");
  const json::value data = json::object{{"code", std::string(static_cast<std::size_t>(state.range(0)), 'a') + "!"}};
  for (auto _ : state) {
    auto errors = schema.validate(data);
    benchmark::DoNotOptimize(errors);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

}  // namespace

BENCHMARK(BM_validate_hostile_pattern)->Arg(41)->Arg(30 * 1024)->Arg(1024 * 1024);
BENCHMARK(BM_validate_small_fast);
BENCHMARK(BM_validate_small_valijson);
BENCHMARK(BM_validate_large_fast);
BENCHMARK(BM_validate_large_valijson);
BENCHMARK(BM_validate_envelope_struct);

BENCHMARK_MAIN();
