#include <switchboard/protocol/metrics.hpp>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace sp = switchboard::protocol;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

const sp::metric_sample* find(const std::vector<sp::metric_sample>& samples, std::string_view name,
                              std::string_view label, std::string_view value) {
  const auto it = std::ranges::find_if(samples, [&](const sp::metric_sample& s) {
    const auto l = s.labels.find(std::string(label));
    return s.name == name && l != s.labels.end() && l->second == value;
  });
  return it == samples.end() ? nullptr : &*it;
}

sp::parse_result outcome(sp::parse_stage stage, std::optional<sp::errc> reason = {}) {
  sp::parse_result r;
  r.stage = stage;
  r.reason = reason;
  return r;
}

}  // namespace

TEST(ParserMetrics, CountsOutcomesByStageAndReason) {
  sp::parser_metrics m;
  m.record_outcome(outcome(sp::parse_stage::direct));
  m.record_outcome(outcome(sp::parse_stage::direct));
  m.record_outcome(outcome(sp::parse_stage::extracted));
  m.record_outcome(outcome(sp::parse_stage::repaired));
  m.record_outcome(outcome(sp::parse_stage::failed, sp::errc::invalid_json));
  // Parsed directly but failed validation: counted as a failure, not as direct.
  m.record_outcome(outcome(sp::parse_stage::direct, sp::errc::schema_missing_field));
  const auto c = m.outcomes();
  EXPECT_EQ(c.direct, 2u);
  EXPECT_EQ(c.extracted, 1u);
  EXPECT_EQ(c.repaired, 1u);
  EXPECT_EQ(c.failed, 2u);
  EXPECT_EQ(c.failed_by_reason.at("invalid_json"), 1u);
  EXPECT_EQ(c.failed_by_reason.at("schema_missing_field"), 1u);
}

TEST(ParserMetrics, StageLatencyIsSummedAndCounted) {
  sp::parser_metrics m;
  m.record_stage_latency("direct", 1500ns);
  m.record_stage_latency("direct", 500ns);
  m.record_stage_latency("validate", 2ms);
  m.record_stage_latency("not-a-stage", 1s);  // ignored
  const auto samples = m.collect();
  const auto* direct_sum = find(samples, "switchboard_parse_stage_seconds_sum", "stage", "direct");
  const auto* direct_count = find(samples, "switchboard_parse_stage_count", "stage", "direct");
  const auto* validate_sum = find(samples, "switchboard_parse_stage_seconds_sum", "stage", "validate");
  ASSERT_TRUE(direct_sum && direct_count && validate_sum);
  EXPECT_DOUBLE_EQ(direct_sum->value, 2e-6);
  EXPECT_EQ(direct_count->value, 2);
  EXPECT_DOUBLE_EQ(validate_sum->value, 2e-3);
  EXPECT_FALSE(find(samples, "switchboard_parse_stage_count", "stage", "not-a-stage"));
}

TEST(ParserMetrics, CollectAndPushExposeCounters) {
  sp::parser_metrics m;
  m.record_outcome(outcome(sp::parse_stage::repaired));
  m.record_outcome(outcome(sp::parse_stage::failed, sp::errc::empty_output));
  std::vector<sp::metric_sample> pushed;
  m.push([&](std::span<const sp::metric_sample> batch) { pushed.assign(batch.begin(), batch.end()); });
  const auto* repaired = find(pushed, "switchboard_parse_total", "outcome", "repaired");
  const auto* failed = find(pushed, "switchboard_parse_total", "outcome", "failed");
  const auto* empty = find(pushed, "switchboard_parse_failed_total", "reason", "empty_output");
  ASSERT_TRUE(repaired && failed && empty);
  EXPECT_EQ(repaired->value, 1);
  EXPECT_EQ(failed->value, 1);
  EXPECT_EQ(empty->value, 1);
  EXPECT_EQ(empty->type, sp::metric_sample::kind::counter);
}

TEST(ParserMetrics, CountsExactlyUnderConcurrentParsing) {
  const auto schema = sp::compiled_schema::compile(
      json::parse(R"({"type": "object", "required": ["a"]})"), "concurrent@1");
  sp::parser_metrics m;
  constexpr int threads = 4;
  constexpr int rounds = 250;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        sp::parse_output(R"({"a": 1})", schema, &m);            // direct
        sp::parse_output(R"(Answer: {"a": 1} ok)", schema, &m);  // extracted
        sp::parse_output(R"({"a": 1,})", schema, &m);            // repaired
        sp::parse_output(R"({"b": 1})", schema, &m);             // schema_missing_field
        sp::parse_output("   ", schema, &m);                     // empty_output
      }
    });
  }
  for (auto& w : workers) w.join();
  const auto c = m.outcomes();
  constexpr std::uint64_t n = threads * rounds;
  EXPECT_EQ(c.direct, n);
  EXPECT_EQ(c.extracted, n);
  EXPECT_EQ(c.repaired, n);
  EXPECT_EQ(c.failed, 2 * n);
  EXPECT_EQ(c.failed_by_reason.at("schema_missing_field"), n);
  EXPECT_EQ(c.failed_by_reason.at("empty_output"), n);
  const auto samples = m.collect();
  // Every non-empty answer was tried directly and validated once.
  EXPECT_EQ(find(samples, "switchboard_parse_stage_count", "stage", "direct")->value, 4.0 * n);
  EXPECT_EQ(find(samples, "switchboard_parse_stage_count", "stage", "validate")->value, 4.0 * n);
  EXPECT_EQ(find(samples, "switchboard_parse_stage_count", "stage", "repair")->value, 1.0 * n);
}
