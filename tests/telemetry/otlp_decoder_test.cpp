// What the exporter sends, decoded by software we did not write: the
// receiver in tests/otlp_receiver decodes each request with the protobuf
// messages the OpenTelemetry project generates from opentelemetry-proto
// (published on npm in @opentelemetry/otlp-transformer, pinned by the
// lockfile) and prints what it decoded. A span tree that continues a
// caller's traceparent, with attributes of every kind, a link, an event and
// an error status, must come out with the same ids, parents, names, values
// and status. A missing node or node_modules fails the test.
#include <switchboard/telemetry/otlp_exporter.hpp>

#include "otlp_receiver/node_receiver.hpp"

#include <switchboard/telemetry/trace_context.hpp>
#include <switchboard/telemetry/tracer.hpp>
#include <switchboard/testing/hang_guard.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace switchboard::telemetry {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

using switchboard::testing::node_receiver;

std::string after_prefix(const std::string& line, std::string_view prefix) {
  if (!line.starts_with(prefix)) return {};
  return line.substr(prefix.size());
}

// The decoded spans by name.
std::map<std::string, json::object> spans_by_name(const json::value& request) {
  std::map<std::string, json::object> out;
  for (const auto& resource_spans : request.at("resourceSpans").as_array())
    for (const auto& scope_spans : resource_spans.at("scopeSpans").as_array())
      for (const auto& one : scope_spans.at("spans").as_array())
        out[std::string(one.at("name").as_string())] = one.as_object();
  return out;
}

// A span's attributes as "key" -> serialized AnyValue.
std::map<std::string, std::string> attributes_of(const json::value& holder) {
  std::map<std::string, std::string> out;
  for (const auto& item : holder.at("attributes").as_array())
    out[std::string(item.at("key").as_string())] = json::serialize(item.at("value"));
  return out;
}

std::string text(const json::value& value) { return value.is_string() ? std::string(value.as_string()) : json::serialize(value); }

std::uint64_t nanos(const json::value& text) { return std::stoull(std::string(text.as_string())); }

TEST(OtlpDecoder, TheReferenceDecoderReadsASpanTreeAsSent) {
  const testing::hang_guard guard("OtlpDecoder: the node receiver and the export", std::chrono::seconds(90));
  node_receiver receiver;
  const std::string port = receiver.port();
  ASSERT_FALSE(port.empty()) << "the receiver did not start: is Node.js installed, and "
                             << SWITCHBOARD_OTLP_RECEIVER << "/node_modules (npm ci, scripts/test.sh)?";

  otlp_exporter_options options;
  options.endpoint = "http://127.0.0.1:" + port + "/v1/traces";
  options.schedule_delay = std::chrono::hours(1);
  options.resource.attributes = {{"service.name", std::string("decoder-test")}};
  options.scope.version = "0.1.0";
  auto exporter = std::make_shared<otlp_exporter>(options);
  recording_tracer tracer(sampler{}, exporter);

  // A caller's trace, continued; an earlier span (a run before a pause) linked.
  const auto caller = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=abc");
  ASSERT_TRUE(caller);
  span_context earlier;
  earlier.trace_id = caller->trace_id;
  earlier.span_id = random_span_id();
  earlier.trace_flags = sampled_flag;
  const std::vector<std::string> finish_reasons{"stop", "length"};
  std::string workflow_id, agent_id, chat_id, tool_id;
  {
    span_options under_caller;
    under_caller.parent = &*caller;
    under_caller.kind = span_kind::server;
    span workflow = tracer.start_span("invoke_workflow scheduling", under_caller);
    workflow.set_attribute("gen_ai.operation.name", "invoke_workflow");
    workflow.add_link(earlier, {{"switchboard.link.reason", std::string("resumed")}});
    span_options under_workflow;
    under_workflow.parent = &workflow.context();
    span agent = tracer.start_span("invoke_agent planner", under_workflow);
    agent.set_attribute("gen_ai.agent.name", "planner");
    span_options under_agent;
    under_agent.parent = &agent.context();
    under_agent.kind = span_kind::client;
    span chat = tracer.start_span("chat gpt-4o", under_agent);
    chat.set_attribute("gen_ai.request.model", "gpt-4o")
        .set_attribute("gen_ai.usage.input_tokens", std::int64_t{9007199254740993})
        .set_attribute("switchboard.confidence", 0.75)
        .set_attribute("switchboard.replayed", true)
        .set_attribute("gen_ai.response.finish_reasons", std::span<const std::string>(finish_reasons));
    chat.add_event("switchboard.reask", {{"switchboard.parser.stage", std::string("repair")}});
    chat.set_status(status_code::error, "rate limited");
    under_agent.kind = span_kind::internal;
    span tool = tracer.start_span("execute_tool lookup", under_agent);
    tool.set_status(status_code::ok);
    workflow_id = workflow.context().span_id.hex();
    agent_id = agent.context().span_id.hex();
    chat_id = chat.context().span_id.hex();
    tool_id = tool.context().span_id.hex();
  }
  ASSERT_TRUE(exporter->force_flush(60s));
  const auto lines = receiver.lines_when([](const std::vector<std::string>& l) { return !l.empty(); });
  const std::string line = lines.empty() ? std::string("(nothing: it exited)") : lines.front();
  const std::string decoded_text = after_prefix(line, "decoded ");
  ASSERT_FALSE(decoded_text.empty()) << "the receiver said: " << line;
  EXPECT_EQ(exporter->counters().exported, 4u);

  const json::value decoded = json::parse(decoded_text);
  EXPECT_EQ(attributes_of(decoded.at("resourceSpans").at(0).at("resource")).at("service.name"),
            R"({"stringValue":"decoder-test"})");
  EXPECT_EQ(decoded.at("resourceSpans").at(0).at("scopeSpans").at(0).at("scope").at("name"), "switchboard");
  auto spans = spans_by_name(decoded);
  ASSERT_EQ(spans.size(), 4u);
  const json::object& workflow = spans.at("invoke_workflow scheduling");
  const json::object& agent = spans.at("invoke_agent planner");
  const json::object& chat = spans.at("chat gpt-4o");
  const json::object& tool = spans.at("execute_tool lookup");
  for (const auto& [name, one] : spans) {
    EXPECT_EQ(one.at("traceId"), "4bf92f3577b34da6a3ce929d0e0e4736") << name;
    EXPECT_LE(nanos(one.at("startTimeUnixNano")), nanos(one.at("endTimeUnixNano"))) << name;
    EXPECT_EQ(one.at("traceState"), "vendor=abc") << name;
  }
  EXPECT_EQ(text(workflow.at("spanId")), workflow_id);
  EXPECT_EQ(workflow.at("parentSpanId"), "00f067aa0ba902b7");
  EXPECT_EQ(workflow.at("kind"), 2);
  EXPECT_EQ(workflow.at("flags"), 0x301);  // sampled, its parent remote
  EXPECT_EQ(agent.at("flags"), 0x101);     // sampled, its parent local
  EXPECT_EQ(text(agent.at("spanId")), agent_id);
  EXPECT_EQ(text(agent.at("parentSpanId")), workflow_id);
  EXPECT_EQ(agent.at("kind"), 1);
  EXPECT_EQ(text(chat.at("spanId")), chat_id);
  EXPECT_EQ(text(chat.at("parentSpanId")), agent_id);
  EXPECT_EQ(chat.at("kind"), 3);
  EXPECT_EQ(text(tool.at("spanId")), tool_id);
  EXPECT_EQ(text(tool.at("parentSpanId")), agent_id);

  const auto chat_attributes = attributes_of(chat);
  EXPECT_EQ(chat_attributes.at("gen_ai.request.model"), R"({"stringValue":"gpt-4o"})");
  EXPECT_EQ(chat_attributes.at("gen_ai.usage.input_tokens"), R"({"intValue":"9007199254740993"})");
  EXPECT_EQ(chat_attributes.at("switchboard.confidence"), R"({"doubleValue":7.5E-1})");
  EXPECT_EQ(chat_attributes.at("switchboard.replayed"), R"({"boolValue":true})");
  EXPECT_EQ(chat_attributes.at("gen_ai.response.finish_reasons"),
            R"({"arrayValue":{"values":[{"stringValue":"stop"},{"stringValue":"length"}]}})");
  EXPECT_EQ(chat.at("status").at("code"), 2);
  EXPECT_EQ(chat.at("status").at("message"), "rate limited");
  EXPECT_EQ(tool.at("status").at("code"), 1);
  ASSERT_EQ(chat.at("events").as_array().size(), 1u);
  EXPECT_EQ(chat.at("events").at(0).at("name"), "switchboard.reask");
  EXPECT_EQ(attributes_of(chat.at("events").at(0)).at("switchboard.parser.stage"), R"({"stringValue":"repair"})");

  ASSERT_EQ(workflow.at("links").as_array().size(), 1u);
  const json::value& link = workflow.at("links").at(0);
  EXPECT_EQ(link.at("traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(text(link.at("spanId")), earlier.span_id.hex());
  EXPECT_EQ(attributes_of(link).at("switchboard.link.reason"), R"({"stringValue":"resumed"})");
  exporter->shutdown(5s);
}

}  // namespace
}  // namespace switchboard::telemetry
