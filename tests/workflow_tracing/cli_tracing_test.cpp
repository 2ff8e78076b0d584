// End to end: `switchboard run` / `resume` on the scheduling sample as
// shipped (offline agents; bookings wait for approval), with
// OTEL_EXPORTER_OTLP_ENDPOINT pointed at tests/otlp_receiver, a Node
// receiver that decodes every request with the OpenTelemetry protocol
// definitions published on npm. The span tree is read from what it decoded,
// not from what we meant to send.
#include "cli_runner.hpp"
#include "otlp_receiver/node_receiver.hpp"

#include <switchboard/host/workflow_tracing.hpp>
#include <switchboard/testing/hang_guard.hpp>
#include <switchboard/testing/loopback_model_server.hpp>
#include <switchboard/testing/temp_dir.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <vector>


namespace switchboard::testing {
namespace {

namespace json = boost::json;

const std::filesystem::path shipped_sample =
    std::filesystem::path(SWITCHBOARD_SOURCE_DIR) / "examples" / "scheduling" / "workflow.json";

// Every span of every decoded request, in arrival order; a rejected
// request fails the test.
std::vector<json::object> spans_of(const std::vector<std::string>& lines) {
  std::vector<json::object> out;
  for (const auto& line : lines) {
    if (!line.starts_with("decoded ")) {
      ADD_FAILURE() << "the receiver said: " << line;
      continue;
    }
    const json::value request = json::parse(std::string_view(line).substr(8));
    for (const auto& resource_spans : request.at("resourceSpans").as_array())
      for (const auto& scope_spans : resource_spans.at("scopeSpans").as_array())
        for (const auto& one : scope_spans.at("spans").as_array()) out.push_back(one.as_object());
  }
  return out;
}

std::string attribute(const json::object& span, std::string_view key) {
  for (const auto& item : span.at("attributes").as_array()) {
    if (item.at("key").as_string() != key) continue;
    const auto& value = item.at("value").as_object();
    if (const auto* s = value.if_contains("stringValue"); s && s->is_string() && !s->as_string().empty())
      return std::string(s->as_string());
    if (const auto* i = value.if_contains("intValue"); i && i->is_string() && i->as_string() != "0")
      return std::string(i->as_string());
    if (const auto* b = value.if_contains("boolValue"); b && b->is_bool()) return b->as_bool() ? "true" : "false";
    if (const auto* d = value.if_contains("doubleValue"); d && d->is_number()) return json::serialize(*d);
    return json::serialize(value);
  }
  return "(absent)";
}

std::string text(const json::value& v) { return v.is_string() ? std::string(v.as_string()) : json::serialize(v); }

// Every string value on every span, for "what is never recorded".
std::string all_values(const std::vector<json::object>& spans) {
  std::string out;
  for (const auto& s : spans) out += json::serialize(s.at("attributes")) + "\n";
  return out;
}

std::vector<json::object> named(const std::vector<json::object>& spans, std::string_view prefix) {
  std::vector<json::object> out;
  for (const auto& s : spans)
    if (std::string_view(s.at("name").as_string()).starts_with(prefix)) out.push_back(s);
  return out;
}

class cli_tracing : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = receiver_.port();
    ASSERT_FALSE(port_.empty()) << "the receiver did not start: is Node.js installed, and npm ci run in "
                                << SWITCHBOARD_OTLP_RECEIVER << "?";
  }

  test::cli_result switchboard(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    // The developer's own OTEL_* settings must not reach the tool.
    std::string environment =
        "env -u OTEL_SDK_DISABLED -u OTEL_EXPORTER_OTLP_ENDPOINT -u OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "
        "-u OTEL_TRACES_EXPORTER -u OTEL_TRACES_SAMPLER -u OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT " +
        test::isolated_environment(scratch_.path()) +
        // Spans only: the metrics sent at exit have their own tests (cli_metrics_test.cpp).
        " OTEL_METRICS_EXPORTER=none";
    if (env.empty()) env.push_back("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:" + port_);
    for (const auto& e : env) environment += " " + test::shell_quoted(e);
    return test::run_switchboard(scratch_.path(), test::shell_words(args), "/dev/null", false, environment);
  }

  std::string with_endpoint() const { return "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:" + port_; }

  // The spans received once `count` workflow spans of run `id` arrived.
  std::vector<json::object> spans_after_workflow_spans(const std::string& id, std::size_t count) {
    const auto lines = receiver_.lines_when([&](const std::vector<std::string>& got) {
      std::size_t seen = 0;
      for (const auto& line : got)
        for (std::size_t at = line.find("invoke_workflow "); at != std::string::npos;
             at = line.find("invoke_workflow ", at + 1))
          ++seen;
      return seen >= count && (got.empty() || got.back().find(id) != std::string::npos);
    });
    return spans_of(lines);
  }

  static std::string run_id(const test::cli_result& r) {
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex{R"(workflow id: (\S+))"})) return {};
    return m[1].str();
  }
  static std::string describe(const test::cli_result& r) {
    return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
  }

  const hang_guard guard_{"cli_tracing: the receiver and the switchboard processes", std::chrono::seconds(240)};
  node_receiver receiver_;
  std::string port_;
  temp_dir scratch_;
};

TEST_F(cli_tracing, a_booking_approved_in_another_process_is_one_trace_of_workflow_agent_and_tool_spans) {
  const auto paused = switchboard({"run", shipped_sample.string(), "--input",
                                   "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan"});
  ASSERT_EQ(paused.exit_code, 4) << describe(paused);
  const std::string id = run_id(paused);
  ASSERT_FALSE(id.empty()) << describe(paused);
  const auto approved = switchboard({"resume", id, "--workflow", shipped_sample.string(), "--approve"});
  ASSERT_EQ(approved.exit_code, 0) << describe(approved);

  const auto spans = spans_after_workflow_spans(id, 2);
  const std::string trace = host::trace_id_for_run(id).hex();
  for (const auto& s : spans) EXPECT_EQ(text(s.at("traceId")), trace) << s.at("name");

  const auto workflows = named(spans, "invoke_workflow ");
  ASSERT_EQ(workflows.size(), 2u) << all_values(spans);
  const json::object* first = nullptr;
  const json::object* second = nullptr;
  for (const auto& w : workflows) (attribute(w, "switchboard.run.segment") == "1" ? first : second) = &w;
  ASSERT_TRUE(first && second);
  EXPECT_EQ(text(first->at("name")), "invoke_workflow family_scheduling");
  EXPECT_EQ(text(first->at("parentSpanId")), "");  // the root
  EXPECT_EQ(attribute(*first, "gen_ai.operation.name"), "invoke_workflow");
  EXPECT_EQ(attribute(*first, "switchboard.run.id"), id);
  EXPECT_EQ(attribute(*first, "switchboard.run.outcome"), "awaiting_approval");
  EXPECT_EQ(attribute(*second, "switchboard.run.outcome"), "completed");
  ASSERT_EQ(second->at("links").as_array().size(), 1u);
  EXPECT_EQ(text(second->at("links").at(0).at("spanId")), text(first->at("spanId")));
  EXPECT_EQ(text(second->at("links").at(0).at("traceId")), trace);

  // Each step an invoke_agent child of its stretch's workflow span.
  const auto agents = named(spans, "invoke_agent ");
  ASSERT_GE(agents.size(), 5u) << all_values(spans);
  std::map<std::string, const json::object*> by_agent;
  for (const auto& a : agents) {
    const std::string parent = text(a.at("parentSpanId"));
    EXPECT_TRUE(parent == text(first->at("spanId")) || parent == text(second->at("spanId"))) << a.at("name");
    EXPECT_EQ(attribute(a, "gen_ai.operation.name"), "invoke_agent");
    EXPECT_EQ(attribute(a, "switchboard.run.id"), id);
    EXPECT_NE(attribute(a, "switchboard.step"), "(absent)");
    by_agent[attribute(a, "gen_ai.agent.name")] = &a;
  }
  ASSERT_TRUE(by_agent.contains("nl_parser")) << all_values(agents);
  const json::object& parser = *by_agent.at("nl_parser");
  EXPECT_EQ(text(parser.at("name")), "invoke_agent nl_parser");
  EXPECT_EQ(text(parser.at("parentSpanId")), text(first->at("spanId")));
  EXPECT_EQ(attribute(parser, "switchboard.node"), "parse");
  EXPECT_EQ(attribute(parser, "switchboard.step"), "1");
  EXPECT_DOUBLE_EQ(std::stod(attribute(parser, "switchboard.confidence")), 0.95);
  EXPECT_EQ(attribute(parser, "switchboard.route.target"), "schedule");
  ASSERT_TRUE(by_agent.contains("booking")) << all_values(agents);
  const json::object& booking = *by_agent.at("booking");
  EXPECT_EQ(text(booking.at("parentSpanId")), text(second->at("spanId")));

  // The booking's tool call, made in the second process after approval.
  const auto tools = named(spans, "execute_tool calendar.book");
  ASSERT_GE(tools.size(), 1u) << all_values(spans);
  bool made = false;
  for (const auto& t : tools) {
    EXPECT_EQ(attribute(t, "gen_ai.operation.name"), "execute_tool");
    EXPECT_EQ(attribute(t, "gen_ai.tool.name"), "calendar.book");
    EXPECT_NE(attribute(t, "gen_ai.tool.call.id"), "(absent)");
    if (text(t.at("parentSpanId")) == text(booking.at("spanId")) && attribute(t, "switchboard.tool.replayed") == "false")
      made = true;
  }
  EXPECT_TRUE(made) << all_values(tools);

  // No content by default: not the request, not the tool's arguments.
  const std::string values = all_values(spans);
  EXPECT_EQ(values.find("minivan"), std::string::npos) << values;
  EXPECT_EQ(values.find("Soccer"), std::string::npos) << values;
  EXPECT_EQ(values.find("gen_ai.tool.call.arguments"), std::string::npos) << values;
}

TEST_F(cli_tracing, a_clarification_answered_in_another_process_continues_the_trace_with_a_link) {
  const auto paused = switchboard({"run", shipped_sample.string(), "--input", "Piano lesson for Leo sometime next week"});
  ASSERT_EQ(paused.exit_code, 3) << describe(paused);
  const std::string id = run_id(paused);
  ASSERT_FALSE(id.empty()) << describe(paused);
  const auto answered = switchboard({"resume", id, "--workflow", shipped_sample.string(), "--answer", "Wednesday 5-6pm"});
  ASSERT_EQ(answered.exit_code, 4) << describe(answered);  // now the booking waits for approval

  const auto spans = spans_after_workflow_spans(id, 2);
  const auto workflows = named(spans, "invoke_workflow ");
  ASSERT_EQ(workflows.size(), 2u);
  const json::object* first = nullptr;
  const json::object* second = nullptr;
  for (const auto& w : workflows) (attribute(w, "switchboard.run.segment") == "1" ? first : second) = &w;
  ASSERT_TRUE(first && second);
  EXPECT_EQ(text(first->at("traceId")), host::trace_id_for_run(id).hex());
  EXPECT_EQ(text(second->at("traceId")), text(first->at("traceId")));
  EXPECT_EQ(attribute(*first, "switchboard.run.outcome"), "awaiting_clarification");
  EXPECT_EQ(attribute(*second, "switchboard.run.outcome"), "awaiting_approval");
  EXPECT_EQ(attribute(*second, "switchboard.run.resumed"), "true");
  ASSERT_EQ(second->at("links").as_array().size(), 1u);
  EXPECT_EQ(text(second->at("links").at(0).at("spanId")), text(first->at("spanId")));
  // Neither the question nor the answer is recorded by default.
  const std::string values = all_values(spans);
  EXPECT_EQ(values.find("Wednesday"), std::string::npos) << values;
  EXPECT_EQ(values.find("Piano"), std::string::npos) << values;
  EXPECT_EQ(values.find("switchboard.question"), std::string::npos) << values;
}

TEST_F(cli_tracing, disabled_or_without_an_endpoint_nothing_is_sent) {
  const auto disabled = switchboard({"run", shipped_sample.string(), "--input", "When is everyone free on Sunday?"},
                                    {with_endpoint(), "OTEL_SDK_DISABLED=true"});
  ASSERT_EQ(disabled.exit_code, 0) << describe(disabled);
  const auto no_endpoint =
      switchboard({"run", shipped_sample.string(), "--input", "When is everyone free on Sunday?"}, {"OTEL_SERVICE_NAME=x"});
  ASSERT_EQ(no_endpoint.exit_code, 0) << describe(no_endpoint);
  // Then one that sends: whatever the two before had sent would have been
  // received (and printed) before their processes exited, so before this.
  const auto sending =
      switchboard({"run", shipped_sample.string(), "--input", "When is everyone free on Sunday?", "--json"});
  ASSERT_EQ(sending.exit_code, 0) << describe(sending);
  const std::string id(json::parse(sending.out).at("id").as_string());
  const auto spans = spans_after_workflow_spans(id, 1);
  ASSERT_FALSE(spans.empty());
  for (const auto& s : spans) EXPECT_EQ(text(s.at("traceId")), host::trace_id_for_run(id).hex()) << s.at("name");
  EXPECT_EQ(named(spans, "invoke_workflow ").size(), 1u);
}

std::string envelope(json::object data, std::string explanation) {
  return json::serialize(json::object{{"data", std::move(data)},
                                      {"explanation", std::move(explanation)},
                                      {"confidence", 0.9},
                                      {"reasoning", "scripted answer"}});
}

json::object dentist_request() {
  return {{"intent", "create"}, {"title", "Dentist appointment"}, {"date", "2026-03-03"},
          {"date_range", nullptr}, {"start_time", "16:00"}, {"end_time", "17:00"},
          {"time_window", nullptr}, {"duration_minutes", 60}, {"participants", json::array{"Leo"}},
          {"resources", json::array{"minivan"}}, {"priority", "normal"}, {"flexibility", "fixed"}};
}

json::object sedan_plan() {
  return {{"strategies", json::array{json::object{{"strategy", "change_resource"},
                                                  {"description", "take the sedan instead of the minivan"},
                                                  {"score", 0.9},
                                                  {"start", "2026-03-03T16:00"},
                                                  {"end", "2026-03-03T17:00"},
                                                  {"resources", json::array{"sedan"}}}}},
          {"recommended", 0},
          {"plan", json::object{{"title", "Dentist appointment"},
                                {"start", "2026-03-03T16:00"},
                                {"end", "2026-03-03T17:00"},
                                {"participants", json::array{"Leo"}},
                                {"resources", json::array{"sedan"}}}}};
}

// The sample with its LLM-backed agents on a loopback OpenAI-compatible
// server: each model request is a chat span under its step's invoke_agent
// span (the resolution's re-ask a second one), with tokens and finish
// reasons, and the server received each chat span as traceparent.
TEST_F(cli_tracing, model_requests_are_chat_spans_under_their_step_and_reach_the_server_as_traceparent) {
  loopback_model_server model;
  model.enqueue(server_action::reply(envelope(dentist_request(), "A dentist appointment for Leo.")));
  json::object incomplete = sedan_plan();
  incomplete.erase("plan");  // invalid: the resolution is asked again
  model.enqueue(server_action::reply(envelope(incomplete, "Take the sedan.")));
  model.enqueue(server_action::reply(envelope(sedan_plan(), "Take the sedan instead of the minivan.")));
  const auto r = switchboard({"run", shipped_sample.string(), "--json", "--model", "gpt-test", "--input",
                              "Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan"},
                             {with_endpoint(), "OPENAI_BASE_URL=" + model.base_url(), "OPENAI_API_KEY=test-key",
                              "SWITCHBOARD_OUTPUT_MODE=json_object"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 4) << describe(r);
  const std::string id(json::parse(r.out).at("id").as_string());
  const auto spans = spans_after_workflow_spans(id, 1);
  const std::string trace = host::trace_id_for_run(id).hex();

  const auto chats = named(spans, "chat ");
  ASSERT_EQ(chats.size(), 3u) << all_values(spans);
  std::map<std::string, std::string> agent_of_span;  // invoke_agent span id -> agent
  for (const auto& a : named(spans, "invoke_agent "))
    agent_of_span[text(a.at("spanId"))] = attribute(a, "gen_ai.agent.name");
  std::map<std::string, int> chats_by_agent;
  std::map<std::string, std::vector<std::string>> rungs;
  std::vector<std::string> chat_ids;
  for (const auto& c : chats) {
    EXPECT_EQ(text(c.at("name")), "chat gpt-test");
    EXPECT_EQ(text(c.at("traceId")), trace);
    EXPECT_EQ(c.at("kind"), 3) << "SPAN_KIND_CLIENT";
    EXPECT_EQ(attribute(c, "gen_ai.operation.name"), "chat");
    EXPECT_EQ(attribute(c, "gen_ai.provider.name"), "openai");
    EXPECT_EQ(attribute(c, "gen_ai.request.model"), "gpt-test");
    EXPECT_EQ(attribute(c, "gen_ai.usage.input_tokens"), "11");
    EXPECT_EQ(attribute(c, "gen_ai.usage.output_tokens"), "7");
    EXPECT_NE(attribute(c, "gen_ai.response.finish_reasons").find("stop"), std::string::npos)
        << attribute(c, "gen_ai.response.finish_reasons");
    EXPECT_EQ(attribute(c, "server.address"), "127.0.0.1");
    const std::string parent = text(c.at("parentSpanId"));
    ASSERT_TRUE(agent_of_span.contains(parent)) << "a chat span outside every step: " << json::serialize(c);
    const std::string agent = agent_of_span.at(parent);
    ++chats_by_agent[agent];
    rungs[agent].push_back(attribute(c, "switchboard.structured.rung"));
    chat_ids.push_back(text(c.at("spanId")));
  }
  EXPECT_EQ(chats_by_agent["nl_parser"], 1);
  EXPECT_EQ(chats_by_agent["resolution"], 2);
  // A tool loop's turn asks with the schema in the prompt; the answer that
  // was not valid is asked again through the structured ladder (JSON-object
  // mode here).
  for (auto& [agent, seen] : rungs) std::sort(seen.begin(), seen.end());
  EXPECT_EQ(rungs["nl_parser"], std::vector<std::string>{"prompt_schema"});
  EXPECT_EQ(rungs["resolution"], (std::vector<std::string>{"json_object", "prompt_schema"}));

  // The model server saw each request's chat span as its parent.
  std::vector<std::string> parents;
  for (const auto& request : model.requests()) {
    const std::string header = request.header("traceparent");
    ASSERT_EQ(header.size(), 55u) << header;
    EXPECT_EQ(header.substr(3, 32), trace);
    parents.push_back(header.substr(36, 16));
  }
  std::sort(parents.begin(), parents.end());
  std::sort(chat_ids.begin(), chat_ids.end());
  EXPECT_EQ(parents, chat_ids);
  // The prompt is never on a span.
  EXPECT_EQ(all_values(spans).find("Dentist"), std::string::npos);
}

}  // namespace
}  // namespace switchboard::testing
