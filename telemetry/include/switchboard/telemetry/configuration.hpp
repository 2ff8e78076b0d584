// Tracing settings from the standard OpenTelemetry environment variables,
// so that an operator points Switchboard at a collector the way they point
// every other service:
//
//   OTEL_SDK_DISABLED                    true | false
//   OTEL_TRACES_EXPORTER                 otlp | none
//   OTEL_EXPORTER_OTLP_ENDPOINT          base URL; /v1/traces is appended
//   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT   the traces URL, used as is (wins)
//   OTEL_EXPORTER_OTLP_PROTOCOL          http/json only (also ..._TRACES_PROTOCOL)
//   OTEL_EXPORTER_OTLP_HEADERS           key=value,key2=value2 (values URL-decoded)
//   OTEL_EXPORTER_OTLP_TIMEOUT           milliseconds per request
//   OTEL_SERVICE_NAME                    service.name (wins over the next)
//   OTEL_RESOURCE_ATTRIBUTES             key=value,... (values URL-decoded)
//   OTEL_TRACES_SAMPLER                  always_on | always_off | traceidratio |
//                                        parentbased_always_on | parentbased_always_off |
//                                        parentbased_traceidratio
//   OTEL_TRACES_SAMPLER_ARG              the ratio, in [0, 1]
//   OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE
//
// Metrics (metrics_configuration_from) read the same variables, and:
//
//   OTEL_METRICS_EXPORTER                otlp | none
//   OTEL_EXPORTER_OTLP_METRICS_ENDPOINT  the metrics URL, used as is (wins over
//                                        OTEL_EXPORTER_OTLP_ENDPOINT + /v1/metrics)
//   OTEL_EXPORTER_OTLP_METRICS_HEADERS   (wins over OTEL_EXPORTER_OTLP_HEADERS)
//   OTEL_EXPORTER_OTLP_METRICS_TIMEOUT   (wins over OTEL_EXPORTER_OTLP_TIMEOUT)
//   OTEL_EXPORTER_OTLP_METRICS_PROTOCOL  http/json only
//   OTEL_METRIC_EXPORT_INTERVAL          milliseconds between exports (60000)
//
// A value that cannot be read is an error naming the variable and the
// value — never a silent fallback to a default. The exception: header
// values, which hold vendors' keys, are never quoted (the error names the
// variable and the header's name).
//
// Thread-safety: pure functions of the lookup they are given.
#pragma once

#include <switchboard/telemetry/otlp_exporter.hpp>
#include <switchboard/telemetry/otlp_metric_exporter.hpp>
#include <switchboard/telemetry/sampler.hpp>
#include <switchboard/telemetry/span_data.hpp>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace switchboard::telemetry {

// A variable with a value that cannot be used.
class configuration_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct tracing_configuration {
  // False when OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, or
  // when no endpoint is set: then use the noop_tracer.
  bool enabled = false;
  telemetry::sampler sampler;          // parentbased_always_on unless set
  otlp_exporter_options exporter;      // endpoint, headers, resource, timeout, limits
};

struct metrics_configuration {
  // False when OTEL_SDK_DISABLED=true or OTEL_METRICS_EXPORTER=none, or
  // when no endpoint is set: then metrics are not exported over OTLP
  // (serve's /metrics still shows them).
  bool enabled = false;
  otlp_metric_exporter_options exporter;
};

// Returns the variable's value, or nullopt when it is not set.
using environment_lookup = std::function<std::optional<std::string>(std::string_view name)>;

// The process environment (std::getenv).
environment_lookup process_environment();

// Reads the variables through `lookup`. `default_service_name` is
// service.name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES
// name one. Throws configuration_error.
tracing_configuration tracing_configuration_from(const environment_lookup& lookup,
                                                 std::string_view default_service_name = "switchboard");

// The metrics' settings, read through `lookup`. Throws configuration_error.
metrics_configuration metrics_configuration_from(const environment_lookup& lookup,
                                                 std::string_view default_service_name = "switchboard");

}  // namespace switchboard::telemetry
