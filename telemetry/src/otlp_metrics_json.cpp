// The OTLP/JSON encoding of metrics (otlp_json.hpp).
#include <switchboard/telemetry/otlp_json.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cmath>
#include <string>

namespace switchboard::telemetry {
namespace {

namespace json = boost::json;

json::value encode_double(double number) {
  if (std::isnan(number)) return json::string("NaN");
  if (std::isinf(number)) return json::string(number > 0 ? "Infinity" : "-Infinity");
  return number;
}

json::array encode_string_attributes(const metric_attributes& list) {
  json::array out;
  out.reserve(list.size());
  for (const auto& [key, value] : list)
    out.push_back(json::object{{"key", key}, {"value", json::object{{"stringValue", value}}}});
  return out;
}

json::array encode_resource_attributes(const attributes& list) {
  json::array out;
  for (const attribute& item : list) {
    json::object value;
    if (const auto* text = std::get_if<std::string>(&item.value)) value["stringValue"] = *text;
    else if (const auto* number = std::get_if<std::int64_t>(&item.value)) value["intValue"] = std::to_string(*number);
    else if (const auto* real = std::get_if<double>(&item.value)) value["doubleValue"] = encode_double(*real);
    else if (const auto* flag = std::get_if<bool>(&item.value)) value["boolValue"] = *flag;
    else continue;  // resources carry no arrays here
    out.push_back(json::object{{"key", item.key}, {"value", std::move(value)}});
  }
  return out;
}

json::object encode_point(const metric_data& metric, const metric_point& point) {
  json::object out{{"attributes", encode_string_attributes(point.attributes)},
                   {"startTimeUnixNano", std::to_string(metric.start_unix_nano)},
                   {"timeUnixNano", std::to_string(metric.time_unix_nano)}};
  if (metric.kind != instrument_kind::histogram) {
    out["asDouble"] = encode_double(point.value);
    return out;
  }
  out["count"] = std::to_string(point.count);
  out["sum"] = encode_double(point.sum);
  json::array buckets;
  for (std::uint64_t n : point.bucket_counts) buckets.push_back(json::string(std::to_string(n)));
  out["bucketCounts"] = std::move(buckets);
  json::array bounds;
  for (double bound : metric.bounds) bounds.push_back(bound);
  out["explicitBounds"] = std::move(bounds);
  return out;
}

constexpr int cumulative = 2;  // AGGREGATION_TEMPORALITY_CUMULATIVE

json::object encode_metric(const metric_data& metric) {
  json::array points;
  for (const metric_point& point : metric.points) points.push_back(encode_point(metric, point));
  json::object out{{"name", metric.description.name},
                   {"unit", metric.description.unit},
                   {"description", metric.description.description}};
  json::object data{{"aggregationTemporality", cumulative}, {"dataPoints", std::move(points)}};
  if (metric.kind == instrument_kind::histogram) {
    out["histogram"] = std::move(data);
  } else {
    data["isMonotonic"] = metric.kind == instrument_kind::counter;
    out["sum"] = std::move(data);
  }
  return out;
}

}  // namespace

std::string encode_otlp_metrics(const resource& emitter, const instrumentation_scope& scope,
                                std::span<const metric_data> metrics) {
  json::array encoded;
  for (const metric_data& metric : metrics) encoded.push_back(encode_metric(metric));
  json::object scope_json{{"name", scope.name}};
  if (!scope.version.empty()) scope_json["version"] = scope.version;
  json::object scope_metrics{{"scope", std::move(scope_json)}, {"metrics", std::move(encoded)}};
  json::object resource_metrics{{"resource", json::object{{"attributes", encode_resource_attributes(emitter.attributes)}}},
                                {"scopeMetrics", json::array{std::move(scope_metrics)}}};
  return json::serialize(json::object{{"resourceMetrics", json::array{std::move(resource_metrics)}}});
}

}  // namespace switchboard::telemetry
