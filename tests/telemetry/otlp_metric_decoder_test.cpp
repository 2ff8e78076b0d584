// What the metric exporter sends, decoded by software we did not write:
// tests/otlp_receiver decodes each POST /v1/metrics with the
// ExportMetricsServiceRequest message generated from opentelemetry-proto
// (@opentelemetry/otlp-transformer on npm, pinned) and reports any field it
// does not define or that decoding changed. A counter, an up-down counter
// and a histogram with the GenAI token buckets must come out with their
// names, units, temporality, attributes, counts and bounds.
#include <switchboard/telemetry/otlp_metric_exporter.hpp>

#include "otlp_receiver/node_receiver.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace switchboard::telemetry {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using switchboard::testing::node_receiver;

std::map<std::string, json::object> metrics_by_name(const json::value& request) {
  std::map<std::string, json::object> out;
  for (const auto& resource_metrics : request.at("resourceMetrics").as_array())
    for (const auto& scope_metrics : resource_metrics.at("scopeMetrics").as_array())
      for (const auto& one : scope_metrics.at("metrics").as_array())
        out[std::string(one.at("name").as_string())] = one.as_object();
  return out;
}

TEST(OtlpMetricDecoder, TheReceiverDecodesCountersAndHistogramsAsSent) {
  testing::hang_guard guard("OtlpMetricDecoder", std::chrono::seconds(90));
  node_receiver receiver;
  const std::string port = receiver.port();
  ASSERT_FALSE(port.empty()) << "the receiver did not start (node, or npm ci in tests/otlp_receiver)";

  auto source = std::make_shared<meter>();
  const std::vector<double> token_buckets{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                                          16777216, 67108864};
  const instrument tokens = source->histogram({"gen_ai.client.token.usage", "{token}", "Tokens used."}, token_buckets);
  tokens.record(100, {{"gen_ai.token.type", "input"}, {"gen_ai.operation.name", "chat"}});
  tokens.record(20, {{"gen_ai.token.type", "output"}, {"gen_ai.operation.name", "chat"}});
  source->counter({"switchboard.runs", "{run}", "Runs."}).add(3, {{"outcome", "completed"}});
  source->up_down_counter({"switchboard.waiting", "{run}", "Waiting."}).add(-1);

  otlp_metric_exporter_options options;
  options.otlp.endpoint = "http://127.0.0.1:" + port + "/v1/metrics";
  options.otlp.resource.attributes.push_back({"service.name", std::string("switchboard-test")});
  options.interval = std::chrono::hours(1);
  otlp_metric_exporter exporter(source, options);
  ASSERT_TRUE(exporter.force_flush(30s));
  ASSERT_EQ(exporter.counters().exports, 1u);

  const auto lines = receiver.lines_when([](const auto& seen) { return !seen.empty(); });
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_TRUE(lines[0].starts_with("decoded-metrics ")) << lines[0];
  const json::value decoded = json::parse(lines[0].substr(std::string_view("decoded-metrics ").size()));
  auto metrics = metrics_by_name(decoded);

  const json::object& usage = metrics.at("gen_ai.client.token.usage");
  EXPECT_EQ(usage.at("unit").as_string(), "{token}");
  const json::object& histogram = usage.at("histogram").as_object();
  EXPECT_EQ(histogram.at("aggregationTemporality").as_int64(), 2);
  ASSERT_EQ(histogram.at("dataPoints").as_array().size(), 2u);
  for (const auto& point : histogram.at("dataPoints").as_array()) {
    EXPECT_EQ(point.at("explicitBounds").as_array().size(), token_buckets.size());
    EXPECT_EQ(point.at("bucketCounts").as_array().size(), token_buckets.size() + 1);
    EXPECT_EQ(point.at("count").as_string(), "1");
  }
  // 100 tokens lie in (64, 256]: the fifth bucket.
  const auto& first = histogram.at("dataPoints").as_array()[0];
  EXPECT_EQ(first.at("bucketCounts").as_array()[4].as_string(), "1");

  const json::object& runs = metrics.at("switchboard.runs");
  EXPECT_TRUE(runs.at("sum").at("isMonotonic").as_bool());
  EXPECT_EQ(runs.at("sum").at("dataPoints").at(0).at("asDouble").to_number<double>(), 3);
  EXPECT_FALSE(metrics.at("switchboard.waiting").at("sum").at("isMonotonic").as_bool());
}

}  // namespace
}  // namespace switchboard::telemetry
