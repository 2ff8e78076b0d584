// The metric exporter against collectors on 127.0.0.1 that answer, fail,
// ask to be called later or are not there: what reaches /v1/metrics, the
// final export at shutdown, retries, and a shutdown that returns however
// the collector behaves.
#include <switchboard/telemetry/otlp_metric_exporter.hpp>

#include "collector_fixture.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::telemetry {
namespace {

using namespace collector_testing;

class OtlpMetricExporter : public ::testing::Test {
 protected:
  testing::hang_guard guard_{std::string("OtlpMetricExporter.") +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                             std::chrono::seconds(90)};
  std::shared_ptr<meter> meter_ = std::make_shared<meter>();
};

otlp_metric_exporter_options metric_options(std::uint16_t port) {
  otlp_metric_exporter_options options;
  options.otlp = test_options("http://127.0.0.1:" + std::to_string(port) + "/v1/metrics");
  options.otlp.headers = {{"x-key", "k"}};
  options.interval = std::chrono::hours(1);  // flushes and shutdown do the sending
  return options;
}

TEST_F(OtlpMetricExporter, FlushPostsTheMetersMetricsAsJsonToTheMetricsPath) {
  request_log log;
  collector sink(answering(log, 200));
  meter_->counter({"switchboard.runs", "{run}", ""}).add(2, {{"outcome", "completed"}});
  otlp_metric_exporter exporter(meter_, metric_options(sink.port()));
  ASSERT_TRUE(exporter.force_flush(30s));
  const auto requests = log.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/metrics");
  EXPECT_EQ(requests[0].header("content-type"), "application/json");
  EXPECT_EQ(requests[0].header("x-key"), "k");
  const auto body = boost::json::parse(requests[0].body);
  const auto& metric = body.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics").at(0);
  EXPECT_EQ(metric.at("name").as_string(), "switchboard.runs");
  EXPECT_EQ(metric.at("sum").at("aggregationTemporality").as_int64(), 2);
  EXPECT_EQ(exporter.counters().exports, 1u);
}

TEST_F(OtlpMetricExporter, TheIntervalExportsWithoutAFlush) {
  request_log log;
  collector sink(answering(log, 200));
  meter_->counter({"c", "1", ""}).add(1);
  auto options = metric_options(sink.port());
  options.interval = 20ms;
  otlp_metric_exporter exporter(meter_, options);
  while (log.count() < 2) std::this_thread::sleep_for(5ms);  // the hang guard bounds this
  exporter.shutdown(5s);
  EXPECT_GE(exporter.counters().exports, 2u);
}

TEST_F(OtlpMetricExporter, ShutdownSendsOneLastExport) {
  request_log log;
  collector sink(answering(log, 200));
  otlp_metric_exporter exporter(meter_, metric_options(sink.port()));
  meter_->counter({"c", "1", ""}).add(7);  // recorded after the start, before the end
  exporter.shutdown(5s);
  ASSERT_EQ(log.count(), 1u);
  EXPECT_THAT(log.requests()[0].body, ::testing::HasSubstr("\"asDouble\":7"));
}

TEST_F(OtlpMetricExporter, NothingRecordedSendsNothing) {
  request_log log;
  collector sink(answering(log, 200));
  otlp_metric_exporter exporter(meter_, metric_options(sink.port()));
  ASSERT_TRUE(exporter.force_flush(30s));
  exporter.shutdown(5s);
  EXPECT_EQ(log.count(), 0u);
}

TEST_F(OtlpMetricExporter, A429IsRetriedAndA500IsFinal) {
  request_log log;
  std::atomic<int> calls{0};
  collector sink([&](net::server_request& request) -> asio::awaitable<net::server_response> {
    log.add(request);
    co_return ++calls == 1 ? answer(429, "{}", {{"retry-after", "0"}}) : answer(200);
  });
  meter_->counter({"c", "1", ""}).add(1);
  otlp_metric_exporter exporter(meter_, metric_options(sink.port()));
  ASSERT_TRUE(exporter.force_flush(30s));
  EXPECT_EQ(exporter.counters().retries, 1u);
  EXPECT_EQ(exporter.counters().exports, 1u);

  request_log failing_log;
  collector failing(answering(failing_log, 500));
  otlp_metric_exporter second(meter_, metric_options(failing.port()));
  ASSERT_TRUE(second.force_flush(30s));
  EXPECT_EQ(failing_log.count(), 1u);
  EXPECT_EQ(second.counters().failed, 1u);
  EXPECT_EQ(second.counters().retries, 0u);
}

TEST_F(OtlpMetricExporter, ACollectorThatIsDownIsCountedAndShutdownReturns) {
  meter_->counter({"c", "1", ""}).add(1);
  auto options = metric_options(free_port());
  options.otlp.max_attempts = 2;
  otlp_metric_exporter exporter(meter_, options);
  ASSERT_TRUE(exporter.force_flush(30s));
  exporter.shutdown(2s);
  EXPECT_EQ(exporter.counters().exports, 0u);
  EXPECT_EQ(exporter.counters().failed, 2u) << exporter.counters().requests << " requests, " << exporter.counters().retries << " retries";
}

TEST_F(OtlpMetricExporter, ShutdownWithAStalledCollectorReturns) {
  request_log log;
  collector sink(stalling(log));
  meter_->counter({"c", "1", ""}).add(1);
  otlp_metric_exporter exporter(meter_, metric_options(sink.port()));
  exporter.shutdown(300ms);  // the hang guard fails the test should this not return
  EXPECT_EQ(log.count(), 1u);
  EXPECT_EQ(exporter.counters().exports, 0u);
}

TEST_F(OtlpMetricExporter, RefusesANonHttpEndpointAndAZeroInterval) {
  auto options = metric_options(1);
  options.otlp.endpoint = "ftp://127.0.0.1/v1/metrics";
  EXPECT_THROW(otlp_metric_exporter(meter_, options), std::invalid_argument);
  options = metric_options(1);
  options.interval = 0ms;
  EXPECT_THROW(otlp_metric_exporter(meter_, options), std::invalid_argument);
}

}  // namespace
}  // namespace switchboard::telemetry
