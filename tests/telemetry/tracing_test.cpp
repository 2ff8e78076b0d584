#include <switchboard/telemetry/tracing.hpp>

#include "collector_fixture.hpp"

#include <switchboard/testing/hang_guard.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace switchboard::telemetry {
namespace {

using namespace collector_testing;

tracing_configuration configuration_of(const std::map<std::string, std::string, std::less<>>& environment) {
  return tracing_configuration_from([&environment](std::string_view name) -> std::optional<std::string> {
    const auto found = environment.find(name);
    if (found == environment.end()) return std::nullopt;
    return found->second;
  });
}

TEST(Tracing, OffMeansTheNoopTracerAndNoExporter) {
  const tracing off = start_tracing(configuration_of({{"OTEL_SDK_DISABLED", "true"}}));
  ASSERT_TRUE(off.tracer);
  EXPECT_FALSE(off.exporter);
  EXPECT_FALSE(off.tracer->start_span("invoke_workflow x").is_recording());
  off.shutdown(std::chrono::milliseconds(10));
}

TEST(Tracing, OnSendsToTheConfiguredEndpointWithTheServiceName) {
  const testing::hang_guard guard("Tracing: export to a collector", std::chrono::seconds(60));
  request_log log;
  collector server(answering(log, 200));
  const tracing on = start_tracing(configuration_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + std::to_string(server.port())},
                                                     {"OTEL_SERVICE_NAME", "scheduling"},
                                                     {"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=k1"}}));
  ASSERT_TRUE(on.exporter);
  on.tracer->start_span("invoke_workflow scheduling").end();
  on.shutdown(std::chrono::seconds(30));

  ASSERT_EQ(log.count(), 1u);
  const received_request request = log.requests()[0];
  EXPECT_EQ(request.path, "/v1/traces");
  EXPECT_EQ(request.header("x-api-key"), "k1");
  EXPECT_THAT(request.span_names(), ::testing::ElementsAre("invoke_workflow scheduling"));
  EXPECT_THAT(request.body, ::testing::HasSubstr(R"({"key":"service.name","value":{"stringValue":"scheduling"}})"));
  EXPECT_EQ(on.exporter->counters().exported, 1u);
}

}  // namespace
}  // namespace switchboard::telemetry
