// The metrics' settings from the OTEL_* variables: the metrics path on the
// shared endpoint, the signal's own endpoint, headers and timeout winning,
// the export interval, and the switches that turn the export off.
#include <switchboard/telemetry/configuration.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace switchboard::telemetry {
namespace {

using ::testing::HasSubstr;
using variables = std::map<std::string, std::string, std::less<>>;

metrics_configuration configure(const variables& environment) {
  return metrics_configuration_from([&environment](std::string_view name) -> std::optional<std::string> {
    const auto found = environment.find(name);
    if (found == environment.end()) return std::nullopt;
    return found->second;
  });
}

std::string error_of(const variables& environment) {
  try {
    configure(environment);
  } catch (const configuration_error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(MetricsConfiguration, NothingSetMeansNoExport) { EXPECT_FALSE(configure({}).enabled); }

TEST(MetricsConfiguration, TheBaseEndpointGetsTheMetricsPathAndTheDefaultInterval) {
  const auto configuration = configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"}});
  EXPECT_TRUE(configuration.enabled);
  EXPECT_EQ(configuration.exporter.otlp.endpoint, "http://collector:4318/v1/metrics");
  EXPECT_EQ(configuration.exporter.interval, std::chrono::milliseconds(60000));
}

TEST(MetricsConfiguration, TheSignalsOwnEndpointHeadersAndTimeoutWin) {
  const auto configuration = configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"},
                                        {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://metrics.example/ingest"},
                                        {"OTEL_EXPORTER_OTLP_HEADERS", "a=1"},
                                        {"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "b=2"},
                                        {"OTEL_EXPORTER_OTLP_TIMEOUT", "1000"},
                                        {"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "2000"},
                                        {"OTEL_METRIC_EXPORT_INTERVAL", "1500"}});
  EXPECT_EQ(configuration.exporter.otlp.endpoint, "https://metrics.example/ingest");
  ASSERT_EQ(configuration.exporter.otlp.headers.size(), 1u);
  EXPECT_EQ(configuration.exporter.otlp.headers[0].first, "b");
  EXPECT_EQ(configuration.exporter.otlp.timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(configuration.exporter.interval, std::chrono::milliseconds(1500));
}

TEST(MetricsConfiguration, NoneAndSdkDisabledTurnTheExportOff) {
  EXPECT_FALSE(configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_METRICS_EXPORTER", "none"}}).enabled);
  EXPECT_FALSE(configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_SDK_DISABLED", "true"}}).enabled);
  // Traces off does not turn metrics off.
  EXPECT_TRUE(configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_TRACES_EXPORTER", "none"}}).enabled);
}

TEST(MetricsConfiguration, BadValuesAreNamed) {
  EXPECT_THAT(error_of({{"OTEL_METRICS_EXPORTER", "prometheus"}}), HasSubstr("OTEL_METRICS_EXPORTER=\"prometheus\""));
  EXPECT_THAT(error_of({{"OTEL_METRIC_EXPORT_INTERVAL", "soon"}}), HasSubstr("OTEL_METRIC_EXPORT_INTERVAL=\"soon\""));
  EXPECT_THAT(error_of({{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "collector:4318"}}),
              HasSubstr("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"));
  EXPECT_THAT(error_of({{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"}}), HasSubstr("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"));
}

}  // namespace
}  // namespace switchboard::telemetry
