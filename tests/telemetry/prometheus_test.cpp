// The meter in Prometheus text: OpenTelemetry's names mapped (dots to
// underscores, unit suffix, _total), cumulative buckets ending in +Inf,
// label values escaped.
#include <switchboard/telemetry/prometheus.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::telemetry {
namespace {

using ::testing::HasSubstr;

TEST(Prometheus, NamesFollowOpenTelemetrysMapping) {
  EXPECT_EQ(prometheus_name({"gen_ai.client.operation.duration", "s", ""}, instrument_kind::histogram),
            "gen_ai_client_operation_duration_seconds");
  EXPECT_EQ(prometheus_name({"gen_ai.client.token.usage", "{token}", ""}, instrument_kind::histogram),
            "gen_ai_client_token_usage");
  EXPECT_EQ(prometheus_name({"switchboard.runs", "{run}", ""}, instrument_kind::counter), "switchboard_runs_total");
  EXPECT_EQ(prometheus_name({"switchboard.active", "{run}", ""}, instrument_kind::up_down_counter),
            "switchboard_active");
}

TEST(Prometheus, AHistogramHasCumulativeBucketsSumAndCount) {
  meter m;
  m.histogram({"op.duration", "s", "How long."}, {0.01, 0.02}).record(0.015, {{"gen_ai.token.type", "input"}});
  const std::string page = render_prometheus(m.collect());
  EXPECT_THAT(page, HasSubstr("# TYPE op_duration_seconds histogram\n"));
  EXPECT_THAT(page, HasSubstr("op_duration_seconds_bucket{gen_ai_token_type=\"input\",le=\"0.01\"} 0\n"));
  EXPECT_THAT(page, HasSubstr("op_duration_seconds_bucket{gen_ai_token_type=\"input\",le=\"0.02\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("op_duration_seconds_bucket{gen_ai_token_type=\"input\",le=\"+Inf\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("op_duration_seconds_sum{gen_ai_token_type=\"input\"} 0.015\n"));
  EXPECT_THAT(page, HasSubstr("op_duration_seconds_count{gen_ai_token_type=\"input\"} 1\n"));
}

TEST(Prometheus, ACounterEndsInTotalAndLabelValuesAreEscaped) {
  meter m;
  m.counter({"switchboard.tool.calls", "{call}", "Tool calls."}).add(2, {{"tool", "a\"b\\c\nd"}});
  const std::string page = render_prometheus(m.collect());
  EXPECT_THAT(page, HasSubstr("# TYPE switchboard_tool_calls_total counter\n"));
  EXPECT_THAT(page, HasSubstr("switchboard_tool_calls_total{tool=\"a\\\"b\\\\c\\nd\"} 2\n"));
}

}  // namespace
}  // namespace switchboard::telemetry
