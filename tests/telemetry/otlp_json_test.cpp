// Golden checks of the OTLP/JSON shape: the field names, the hex ids, the
// 64-bit integers as strings and the enums as integers that collectors
// expect (the OTLP specification's JSON mapping).
#include <switchboard/telemetry/otlp_json.hpp>

#include "../../telemetry/src/otlp_span_text.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace switchboard::telemetry {
namespace {

namespace json = boost::json;

trace_id trace_of(std::uint8_t first) {
  trace_id id;
  for (std::size_t i = 0; i < id.bytes.size(); ++i) id.bytes[i] = static_cast<std::uint8_t>(first + i);
  return id;
}

span_id span_of(std::uint8_t first) {
  span_id id;
  for (std::size_t i = 0; i < id.bytes.size(); ++i) id.bytes[i] = static_cast<std::uint8_t>(first + i);
  return id;
}

span_data sample_span() {
  span_data data;
  data.context.trace_id = trace_of(0xa0);
  data.context.span_id = span_of(0x10);
  data.context.trace_flags = sampled_flag;
  data.parent_span_id = span_of(0x01);
  data.name = "chat gpt-4o";
  data.kind = span_kind::client;
  data.start_time_unix_nano = 1544712660000000000ULL;
  data.end_time_unix_nano = 1544712661000000001ULL;
  data.attributes = {{"gen_ai.request.model", std::string("gpt-4o")},
                     {"gen_ai.usage.input_tokens", std::int64_t{9007199254740993}},  // beyond a double's integers
                     {"switchboard.confidence", 0.75},
                     {"switchboard.replayed", true},
                     {"gen_ai.response.finish_reasons", std::vector<std::string>{"stop", "length"}}};
  span_context linked;
  linked.trace_id = trace_of(0x50);
  linked.span_id = span_of(0x60);
  linked.trace_flags = sampled_flag;
  linked.is_remote = true;  // flags 0x301
  data.links = {span_link{linked, {{"switchboard.link", std::string("resumed")}}}};
  data.events = {span_event{"paused", 1544712660500000000ULL, {}}};
  data.status = status_code::error;
  data.status_message = "timeout";
  return data;
}

json::value encoded(const std::vector<span_data>& spans) {
  resource emitter;
  emitter.attributes = {{"service.name", std::string("switchboard-test")}};
  instrumentation_scope scope;
  scope.version = "0.1.0";
  return json::parse(encode_otlp_traces(emitter, scope, spans));
}

TEST(OtlpJson, TheRequestsOuterShape) {
  const json::value request = encoded({sample_span()});
  const json::value& resource_spans = request.at("resourceSpans").at(0);
  EXPECT_EQ(json::serialize(resource_spans.at("resource")),
            R"({"attributes":[{"key":"service.name","value":{"stringValue":"switchboard-test"}}]})");
  const json::value& scope_spans = resource_spans.at("scopeSpans").at(0);
  EXPECT_EQ(json::serialize(scope_spans.at("scope")), R"({"name":"switchboard","version":"0.1.0"})");
  EXPECT_EQ(scope_spans.at("spans").as_array().size(), 1u);
}

TEST(OtlpJson, ASpansFields) {
  const json::value request = encoded({sample_span()});
  const json::object& span = request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).as_object();
  EXPECT_EQ(span.at("traceId"), "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  EXPECT_EQ(span.at("spanId"), "1011121314151617");
  EXPECT_EQ(span.at("parentSpanId"), "0102030405060708");
  EXPECT_EQ(span.at("name"), "chat gpt-4o");
  EXPECT_EQ(span.at("kind"), 3);  // CLIENT, an integer
  EXPECT_EQ(span.at("startTimeUnixNano"), "1544712660000000000");
  EXPECT_EQ(span.at("endTimeUnixNano"), "1544712661000000001");
  EXPECT_EQ(span.at("flags"), 0x101);  // sampled; the parent is known to be local
  EXPECT_EQ(json::serialize(span.at("status")), R"({"code":2,"message":"timeout"})");
}

TEST(OtlpJson, AttributesOfEveryKind) {
  const json::value request = encoded({sample_span()});
  const json::value& span = request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0);
  EXPECT_EQ(json::serialize(span.at("attributes")),
            R"([{"key":"gen_ai.request.model","value":{"stringValue":"gpt-4o"}},)"
            R"({"key":"gen_ai.usage.input_tokens","value":{"intValue":"9007199254740993"}},)"
            R"({"key":"switchboard.confidence","value":{"doubleValue":7.5E-1}},)"
            R"({"key":"switchboard.replayed","value":{"boolValue":true}},)"
            R"({"key":"gen_ai.response.finish_reasons","value":{"arrayValue":{"values":[{"stringValue":"stop"},{"stringValue":"length"}]}}}])");
}

TEST(OtlpJson, LinksAndEvents) {
  const json::value request = encoded({sample_span()});
  const json::value& span = request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0);
  EXPECT_EQ(json::serialize(span.at("links")),
            R"([{"traceId":"505152535455565758595a5b5c5d5e5f","spanId":"6061626364656667",)"
            R"("attributes":[{"key":"switchboard.link","value":{"stringValue":"resumed"}}],"flags":769}])");
  EXPECT_EQ(json::serialize(span.at("events")), R"([{"timeUnixNano":"1544712660500000000","name":"paused"}])");
}

TEST(OtlpJson, ARemoteParentIsFlagged) {
  span_data data = sample_span();
  data.parent_is_remote = true;
  data.context.trace_flags = 0;
  const json::value request = encoded({data});
  EXPECT_EQ(request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).at("flags"), 0x300);
}

TEST(OtlpJson, ARootSpanHasNoParentAndAnOkOrUnsetStatusNoMessage) {
  span_data root = sample_span();
  root.parent_span_id = span_id{};
  root.status = status_code::ok;
  root.status_message = "ignored";
  root.links.clear();
  root.events.clear();
  const json::value request = encoded({root});
  const json::object& span = request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).as_object();
  EXPECT_FALSE(span.contains("parentSpanId"));
  EXPECT_FALSE(span.contains("links"));
  EXPECT_FALSE(span.contains("events"));
  EXPECT_EQ(json::serialize(span.at("status")), R"({"code":1})");
}

TEST(OtlpJson, NonFiniteDoublesAreTheProto3Strings) {
  span_data data = sample_span();
  data.attributes = {{"nan", std::numeric_limits<double>::quiet_NaN()},
                     {"inf", std::numeric_limits<double>::infinity()},
                     {"minus", -std::numeric_limits<double>::infinity()}};
  const json::value request = encoded({data});
  const json::value& attributes =
      request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).at("attributes");
  EXPECT_EQ(attributes.at(0).at("value").at("doubleValue"), "NaN");
  EXPECT_EQ(attributes.at(1).at("value").at("doubleValue"), "Infinity");
  EXPECT_EQ(attributes.at(2).at("value").at("doubleValue"), "-Infinity");
}

TEST(OtlpJson, DroppedCountsAreReported) {
  span_data data = sample_span();
  data.dropped_attributes = 3;
  data.dropped_events = 2;
  data.dropped_links = 1;
  const json::value request = encoded({data});
  const json::value& span = request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0);
  EXPECT_EQ(span.at("droppedAttributesCount"), 3);
  EXPECT_EQ(span.at("droppedEventsCount"), 2);
  EXPECT_EQ(span.at("droppedLinksCount"), 1);
}

TEST(OtlpJson, TextIsEscapedAsJson) {
  span_data data = sample_span();
  data.name = "quote \" backslash \\ newline \n control \x01";
  const std::string body = encode_otlp_traces({}, {}, std::vector<span_data>{data});
  const json::value request = json::parse(body);  // valid JSON
  EXPECT_EQ(request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).at("name").as_string(), data.name);
}

TEST(OtlpJson, ThePiecesAnExporterJoinsMakeTheSameBody) {
  span_data first = sample_span();
  span_data second = sample_span();
  second.name = "second \"quoted\"";
  resource emitter;
  emitter.attributes = {{"service.name", std::string("hub")}};
  const instrumentation_scope scope{"switchboard", "1.2"};
  // The scratch buffer is reused dirty and larger than needed, as a thread's is.
  std::string scratch(100000, 'x');
  std::string joined = detail::otlp_traces_prefix(emitter, scope);
  joined.append(detail::write_otlp_span(scratch, first));
  joined.append(",");
  joined.append(detail::write_otlp_span(scratch, second));
  joined.append(detail::otlp_traces_suffix);
  EXPECT_EQ(joined, encode_otlp_traces(emitter, scope, std::vector<span_data>{first, second}));
  EXPECT_EQ(scratch.size(), 100000u);  // kept for the next span, not shrunk
}

TEST(OtlpJson, KeysAreEscapedUnlessTheyAreLiteralsThatNeedNone) {
  static_assert(attribute_key("gen_ai.agent.name").plain());
  static_assert(!attribute_key("odd \"key\"").plain());
  span_data data = sample_span();
  const std::string made = "made \\ at\nrun time";
  data.attributes = {{"gen_ai.agent.name", std::string("a")},
                     {"odd \"key\"", std::string("b")},
                     {std::string_view(made), std::string("c")}};
  EXPECT_FALSE(data.attributes[2].key.plain());
  const json::value request = json::parse(encode_otlp_traces({}, {}, std::vector<span_data>{data}));
  const json::array& attributes =
      request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).at("attributes").as_array();
  ASSERT_EQ(attributes.size(), 3u);
  EXPECT_EQ(attributes[0].at("key"), "gen_ai.agent.name");
  EXPECT_EQ(attributes[1].at("key"), "odd \"key\"");
  EXPECT_EQ(attributes[2].at("key").as_string(), made);
}

TEST(OtlpJson, SeveralSpansShortEscapesUtf8AndEmptyListsStayValidJson) {
  span_data first = sample_span();
  first.name = "tab\t cr\r bs\b ff\f caf\xC3\xA9";
  first.attributes = {{"empty", std::vector<std::string>{}}, {"n", std::int64_t{-42}}, {"x", 1e300}};
  span_data second = sample_span();
  second.name = "second";
  const std::string body = encode_otlp_traces({}, {"lib", "1.2"}, std::vector<span_data>{first, second});
  EXPECT_NE(body.find("tab\\t cr\\r bs\\b ff\\f caf\xC3\xA9"), std::string::npos) << body;
  const json::value request = json::parse(body);
  const json::array& spans = request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").as_array();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].at("name").as_string(), first.name);
  EXPECT_EQ(spans[1].at("name"), "second");
  EXPECT_EQ(json::serialize(spans[0].at("attributes").at(0).at("value")), R"({"arrayValue":{"values":[]}})");
  EXPECT_EQ(spans[0].at("attributes").at(1).at("value").at("intValue"), "-42");
  EXPECT_EQ(spans[0].at("attributes").at(2).at("value").at("doubleValue").as_double(), 1e300);
  EXPECT_EQ(request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("scope").at("version"), "1.2");
  EXPECT_EQ(json::parse(encode_otlp_traces({}, {}, {})).at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans"),
            json::array{});
}

TEST(OtlpJson, ASpecialCharacterAnywhereInALongTextIsEscaped) {
  // Long text is checked eight bytes at a time: put each character that
  // needs escaping at every position of a few such words.
  for (const char special : {'"', '\\', '\n', '\x1f', '\x00'}) {
    for (std::size_t at = 0; at < 26; ++at) {
      span_data data = sample_span();
      data.name = std::string(26, 'a') + "\xC3\xA9\x7f~";
      data.name[at] = special;
      const json::value request = json::parse(encode_otlp_traces({}, {}, std::vector<span_data>{data}));
      EXPECT_EQ(request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).at("name").as_string(),
                data.name)
          << "special " << static_cast<int>(special) << " at " << at;
    }
  }
}

TEST(OtlpJson, ABodyLargerThanItsFirstSizeGrowsWithoutLosingAByte) {
  // The body is sized for ordinary spans up front; values that escape to six
  // times their size, and many of them, must make it grow, never overrun it.
  span_data data = sample_span();
  data.attributes.clear();
  for (int i = 0; i < 40; ++i) {
    std::string value(3000 + i, '\x01');
    value[static_cast<std::size_t>(i)] = '"';
    data.attributes.push_back({"key." + std::to_string(i), value});
  }
  data.attributes.push_back({"texts", std::vector<std::string>(50, std::string(500, '\\'))});
  const std::string body = encode_otlp_traces({}, {}, std::vector<span_data>{data, data});
  const json::value request = json::parse(body);
  const json::array& spans = request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").as_array();
  ASSERT_EQ(spans.size(), 2u);
  for (const json::value& span : spans) {
    const json::array& attributes = span.at("attributes").as_array();
    ASSERT_EQ(attributes.size(), data.attributes.size());
    for (std::size_t i = 0; i + 1 < attributes.size(); ++i) {
      EXPECT_EQ(attributes[i].at("key").as_string(), data.attributes[i].key);
      EXPECT_EQ(attributes[i].at("value").at("stringValue").as_string(),
                std::get<std::string>(data.attributes[i].value));
    }
    EXPECT_EQ(attributes.back().at("value").at("arrayValue").at("values").as_array().size(), 50u);
  }
}

}  // namespace
}  // namespace switchboard::telemetry
