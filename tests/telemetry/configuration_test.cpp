#include <switchboard/telemetry/configuration.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace switchboard::telemetry {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using variables = std::map<std::string, std::string, std::less<>>;

tracing_configuration configure(const variables& environment) {
  return tracing_configuration_from([&environment](std::string_view name) -> std::optional<std::string> {
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

std::optional<std::string> resource_value(const tracing_configuration& configuration, std::string_view key) {
  for (const attribute& item : configuration.exporter.resource.attributes)
    if (item.key == key) return std::get<std::string>(item.value);
  return std::nullopt;
}

TEST(Configuration, NothingSetMeansTracingOff) {
  const tracing_configuration configuration = configure({});
  EXPECT_FALSE(configuration.enabled);
  EXPECT_EQ(configuration.sampler.name(), "parentbased_always_on");
  EXPECT_EQ(resource_value(configuration, "service.name"), "switchboard");
}

TEST(Configuration, TheBaseEndpointGetsTheTracesPath) {
  EXPECT_EQ(configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"}}).exporter.endpoint,
            "http://collector:4318/v1/traces");
  EXPECT_EQ(configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector/otlp/"}}).exporter.endpoint,
            "https://collector/otlp/v1/traces");
  EXPECT_TRUE(configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"}}).enabled);
}

TEST(Configuration, TheTracesEndpointIsUsedAsIsAndWins) {
  const tracing_configuration configuration = configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"},
                                                         {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom"}});
  EXPECT_EQ(configuration.exporter.endpoint, "http://t:1/custom");
}

TEST(Configuration, HeadersAreSplitAndUrlDecoded) {
  const tracing_configuration configuration =
      configure({{"OTEL_EXPORTER_OTLP_HEADERS", "api-key=abc%3D%3D, x-team = hub ,,authorization=Bearer%20k"}});
  using pair = std::pair<std::string, std::string>;
  EXPECT_THAT(configuration.exporter.headers,
              ::testing::ElementsAre(pair{"api-key", "abc=="}, pair{"x-team", "hub"}, pair{"authorization", "Bearer k"}));
}

TEST(Configuration, ABadHeaderEntryIsNamedButItsValueIsNeverShown) {
  const std::string missing_equals = error_of({{"OTEL_EXPORTER_OTLP_HEADERS", "a=1,Bearer sk-live-123"}});
  EXPECT_THAT(missing_equals, HasSubstr("OTEL_EXPORTER_OTLP_HEADERS"));
  EXPECT_THAT(missing_equals, HasSubstr("entry 2"));
  EXPECT_THAT(missing_equals, Not(HasSubstr("sk-live-123")));
  const std::string bad_escape = error_of({{"OTEL_EXPORTER_OTLP_HEADERS", "api-key=sk-live-456%zz"}});
  EXPECT_THAT(bad_escape, HasSubstr("api-key"));
  EXPECT_THAT(bad_escape, Not(HasSubstr("sk-live-456")));
}

TEST(Configuration, ServiceNameAndResourceAttributes) {
  const tracing_configuration configuration =
      configure({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-list,deployment.environment=prod%20eu"},
                 {"OTEL_SERVICE_NAME", "billing"}});
  EXPECT_EQ(resource_value(configuration, "service.name"), "billing");
  EXPECT_EQ(resource_value(configuration, "deployment.environment"), "prod eu");
  EXPECT_EQ(resource_value(configuration, "telemetry.sdk.name"), "switchboard");
  EXPECT_EQ(resource_value(configure({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-list"}}), "service.name"),
            "from-list");
}

TEST(Configuration, Samplers) {
  EXPECT_EQ(configure({{"OTEL_TRACES_SAMPLER", "always_off"}}).sampler.name(), "always_off");
  EXPECT_EQ(configure({{"OTEL_TRACES_SAMPLER", "parentbased_always_off"}}).sampler.name(), "parentbased_always_off");
  const sampler ratio =
      configure({{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "0.25"}}).sampler;
  EXPECT_EQ(ratio.name(), "traceidratio");
  EXPECT_DOUBLE_EQ(ratio.ratio, 0.25);
  EXPECT_DOUBLE_EQ(configure({{"OTEL_TRACES_SAMPLER", "parentbased_traceidratio"}}).sampler.ratio, 1.0);
}

TEST(Configuration, DisabledAndNone) {
  const variables endpoint{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}};
  variables disabled = endpoint;
  disabled["OTEL_SDK_DISABLED"] = "TRUE";
  EXPECT_FALSE(configure(disabled).enabled);
  variables enabled = endpoint;
  enabled["OTEL_SDK_DISABLED"] = "false";
  EXPECT_TRUE(configure(enabled).enabled);
  variables none = endpoint;
  none["OTEL_TRACES_EXPORTER"] = "none";
  EXPECT_FALSE(configure(none).enabled);
}

TEST(Configuration, TimeoutAndBatchLimits) {
  const tracing_configuration configuration = configure({{"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
                                                         {"OTEL_BSP_SCHEDULE_DELAY", "100"},
                                                         {"OTEL_BSP_MAX_QUEUE_SIZE", "64"},
                                                         {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "16"}});
  EXPECT_EQ(configuration.exporter.timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(configuration.exporter.schedule_delay, std::chrono::milliseconds(100));
  EXPECT_EQ(configuration.exporter.max_queue_size, 64u);
  EXPECT_EQ(configuration.exporter.max_export_batch_size, 16u);
}

TEST(Configuration, AnEmptyValueIsTheSameAsUnset) {
  EXPECT_FALSE(configure({{"OTEL_EXPORTER_OTLP_ENDPOINT", ""}, {"OTEL_TRACES_SAMPLER", ""}}).enabled);
}

// Each bad value fails with a message that names the variable and the value.
TEST(Configuration, BadValuesAreErrorsNamingTheVariableAndTheValue) {
  const std::pair<std::string, std::string> bad[] = {
      {"OTEL_SDK_DISABLED", "yes"},
      {"OTEL_TRACES_EXPORTER", "jaeger"},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://collector:4317"},
      {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "not a url"},
      {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
      {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"},
      {"OTEL_EXPORTER_OTLP_TIMEOUT", "10s"},
      {"OTEL_EXPORTER_OTLP_TIMEOUT", "-5"},
      {"OTEL_EXPORTER_OTLP_TIMEOUT", "0"},
      {"OTEL_TRACES_SAMPLER", "sometimes"},
      {"OTEL_TRACES_SAMPLER", "parentbased_"},
      {"OTEL_BSP_MAX_QUEUE_SIZE", "lots"},
  };
  for (const auto& [name, value] : bad) {
    const std::string message = error_of({{name, value}});
    EXPECT_THAT(message, HasSubstr(name)) << value;
    EXPECT_THAT(message, HasSubstr(value)) << name;
  }
}

TEST(Configuration, ABadSamplerArgumentIsAnError) {
  for (const std::string value : {"half", "1.5", "-0.1", "0.5x", "nan"}) {
    const std::string message = error_of({{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", value}});
    EXPECT_THAT(message, HasSubstr("OTEL_TRACES_SAMPLER_ARG")) << value;
    EXPECT_THAT(message, HasSubstr(value));
  }
}

TEST(Configuration, ABadResourceListIsAnErrorShowingTheEntry) {
  const std::string message = error_of({{"OTEL_RESOURCE_ATTRIBUTES", "team=hub,oops"}});
  EXPECT_THAT(message, HasSubstr("OTEL_RESOURCE_ATTRIBUTES"));
  EXPECT_THAT(message, HasSubstr("oops"));
}

TEST(Configuration, ABatchLargerThanTheQueueIsAnError) {
  const std::string message = error_of({{"OTEL_BSP_MAX_QUEUE_SIZE", "8"}, {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "9"}});
  EXPECT_THAT(message, HasSubstr("OTEL_BSP_MAX_EXPORT_BATCH_SIZE=9"));
}

}  // namespace
}  // namespace switchboard::telemetry
