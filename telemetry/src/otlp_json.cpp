#include <switchboard/telemetry/otlp_json.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cmath>
#include <string>
#include <type_traits>

namespace switchboard::telemetry {
namespace {

namespace json = boost::json;

json::value encode_double(double number) {
  if (std::isnan(number)) return json::string("NaN");
  if (std::isinf(number)) return json::string(number > 0 ? "Infinity" : "-Infinity");
  return number;
}

// AnyValue: one of its fields, named for the kind.
json::object encode_any_value(const attribute_value& value) {
  json::object out;
  std::visit(
      [&out](const auto& held) {
        using held_type = std::decay_t<decltype(held)>;
        if constexpr (std::is_same_v<held_type, std::string>) {
          out["stringValue"] = held;
        } else if constexpr (std::is_same_v<held_type, std::int64_t>) {
          out["intValue"] = std::to_string(held);  // proto3 JSON: int64 as a string
        } else if constexpr (std::is_same_v<held_type, double>) {
          out["doubleValue"] = encode_double(held);
        } else if constexpr (std::is_same_v<held_type, bool>) {
          out["boolValue"] = held;
        } else {
          json::array values;
          for (const std::string& text : held) values.push_back(json::object{{"stringValue", text}});
          out["arrayValue"] = json::object{{"values", std::move(values)}};
        }
      },
      value);
  return out;
}

json::array encode_attributes(const attributes& list) {
  json::array out;
  out.reserve(list.size());
  for (const attribute& item : list) out.push_back(json::object{{"key", item.key}, {"value", encode_any_value(item.value)}});
  return out;
}

// Span.flags and Link.flags (OTLP 1.1+): the W3C trace flags in bits 0-7;
// bit 8 says whether the other bit is known, bit 9 that the parent (for a
// span) or the linked span (for a link) is in another process.
constexpr std::uint32_t remoteness_known = 0x100;
constexpr std::uint32_t remote = 0x200;

std::uint32_t wire_flags(std::uint8_t trace_flags, bool is_remote) {
  return static_cast<std::uint32_t>(trace_flags) | remoteness_known | (is_remote ? remote : 0);
}

json::object encode_link(const span_link& link) {
  json::object out{{"traceId", link.context.trace_id.hex()}, {"spanId", link.context.span_id.hex()}};
  if (!link.context.trace_state.empty()) out["traceState"] = link.context.trace_state;
  if (!link.attributes.empty()) out["attributes"] = encode_attributes(link.attributes);
  out["flags"] = wire_flags(link.context.trace_flags, link.context.is_remote);
  return out;
}

json::object encode_event(const span_event& event) {
  json::object out{{"timeUnixNano", std::to_string(event.time_unix_nano)}, {"name", event.name}};
  if (!event.attributes.empty()) out["attributes"] = encode_attributes(event.attributes);
  return out;
}

json::object encode_status(const span_data& finished) {
  json::object out{{"code", static_cast<int>(finished.status)}};
  if (finished.status == status_code::error && !finished.status_message.empty())
    out["message"] = finished.status_message;
  return out;
}

json::object encode_span(const span_data& finished) {
  json::object out;
  out["traceId"] = finished.context.trace_id.hex();
  out["spanId"] = finished.context.span_id.hex();
  if (!finished.context.trace_state.empty()) out["traceState"] = finished.context.trace_state;
  if (finished.parent_span_id.valid()) out["parentSpanId"] = finished.parent_span_id.hex();
  out["flags"] = wire_flags(finished.context.trace_flags, finished.parent_is_remote);
  out["name"] = finished.name;
  out["kind"] = static_cast<int>(finished.kind);
  out["startTimeUnixNano"] = std::to_string(finished.start_time_unix_nano);
  out["endTimeUnixNano"] = std::to_string(finished.end_time_unix_nano);
  out["attributes"] = encode_attributes(finished.attributes);
  if (finished.dropped_attributes != 0) out["droppedAttributesCount"] = finished.dropped_attributes;
  if (!finished.events.empty()) {
    json::array events;
    for (const span_event& event : finished.events) events.push_back(encode_event(event));
    out["events"] = std::move(events);
  }
  if (finished.dropped_events != 0) out["droppedEventsCount"] = finished.dropped_events;
  if (!finished.links.empty()) {
    json::array links;
    for (const span_link& link : finished.links) links.push_back(encode_link(link));
    out["links"] = std::move(links);
  }
  if (finished.dropped_links != 0) out["droppedLinksCount"] = finished.dropped_links;
  out["status"] = encode_status(finished);
  return out;
}

}  // namespace

std::string encode_otlp_traces(const resource& emitter, const instrumentation_scope& scope,
                               std::span<const span_data> spans) {
  json::array encoded_spans;
  encoded_spans.reserve(spans.size());
  for (const span_data& finished : spans) encoded_spans.push_back(encode_span(finished));

  json::object scope_object{{"name", scope.name}};
  if (!scope.version.empty()) scope_object["version"] = scope.version;
  json::object scope_spans{{"scope", std::move(scope_object)}, {"spans", std::move(encoded_spans)}};
  json::object resource_spans{{"resource", json::object{{"attributes", encode_attributes(emitter.attributes)}}},
                              {"scopeSpans", json::array{std::move(scope_spans)}}};
  return json::serialize(json::object{{"resourceSpans", json::array{std::move(resource_spans)}}});
}

}  // namespace switchboard::telemetry
