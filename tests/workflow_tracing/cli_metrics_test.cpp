// End to end: `switchboard run` / `resume` on the scheduling sample as
// shipped, its LLM agents talking to a loopback model server, with
// OTEL_EXPORTER_OTLP_ENDPOINT pointed at tests/otlp_receiver, which decodes
// every POST /v1/metrics with the ExportMetricsServiceRequest message
// generated from opentelemetry-proto. Each process sends its metrics once
// at exit (the export interval is a minute): the GenAI token and duration
// histograms and the hub's counters must arrive with the counts the run
// made. A collector that is down, fails or asks to be called later leaves
// the run's result as it was, and the process ends (bounded flush).
#include "cli_runner.hpp"
#include "otlp_receiver/node_receiver.hpp"
#include "telemetry/collector_fixture.hpp"

#include <switchboard/testing/hang_guard.hpp>
#include <switchboard/testing/loopback_model_server.hpp>
#include <switchboard/testing/temp_dir.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

namespace switchboard::testing {
namespace {

namespace json = boost::json;

const std::filesystem::path shipped_sample =
    std::filesystem::path(SWITCHBOARD_SOURCE_DIR) / "examples" / "scheduling" / "workflow.json";

std::string soccer_answer() {
  const json::object request{{"intent", "create"},       {"title", "Soccer practice"},
                             {"date", "2026-03-07"},     {"date_range", nullptr},
                             {"start_time", "14:00"},    {"end_time", "16:00"},
                             {"time_window", nullptr},   {"duration_minutes", 120},
                             {"participants", json::array{"Maya"}}, {"resources", json::array{"minivan"}},
                             {"priority", "normal"},     {"flexibility", "fixed"}};
  return json::serialize(json::object{{"data", request},
                                      {"explanation", "Soccer practice for Maya."},
                                      {"confidence", 0.9},
                                      {"reasoning", "scripted answer"}});
}

// One decoded data point: its attributes as a map, and the point.
struct point {
  std::map<std::string, std::string> attributes;
  json::object data;
};

// Every data point of `name` in the decoded requests.
std::vector<point> points_of(const std::vector<json::value>& requests, std::string_view name) {
  std::vector<point> out;
  for (const auto& request : requests)
    for (const auto& resource : request.at("resourceMetrics").as_array())
      for (const auto& scope : resource.at("scopeMetrics").as_array())
        for (const auto& metric : scope.at("metrics").as_array()) {
          if (metric.at("name").as_string() != name) continue;
          const auto& body = metric.as_object().contains("histogram") ? metric.at("histogram") : metric.at("sum");
          for (const auto& p : body.at("dataPoints").as_array()) {
            point one;
            for (const auto& a : p.at("attributes").as_array())
              one.attributes[std::string(a.at("key").as_string())] =
                  std::string(a.at("value").at("stringValue").as_string());
            one.data = p.as_object();
            out.push_back(std::move(one));
          }
        }
  return out;
}

double number(const json::value& v) {
  return v.is_string() ? std::stod(std::string(v.as_string())) : v.to_number<double>();
}

class cli_metrics : public ::testing::Test {
 protected:
  test::cli_result switchboard(const std::vector<std::string>& args, const std::string& endpoint) {
    std::string environment =
        "env -u OTEL_SDK_DISABLED -u OTEL_EXPORTER_OTLP_ENDPOINT -u OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "
        "-u OTEL_EXPORTER_OTLP_METRICS_ENDPOINT -u OTEL_TRACES_EXPORTER -u OTEL_METRICS_EXPORTER "
        "-u OTEL_METRIC_EXPORT_INTERVAL " +
        test::isolated_environment(scratch_.path());
    const std::vector<std::string> assignments{"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_TRACES_EXPORTER=none",
                                               "OPENAI_BASE_URL=" + model_.base_url(), "OPENAI_API_KEY=test-key",
                                               "SWITCHBOARD_OUTPUT_MODE=json_object"};
    for (const std::string& e : assignments)
      environment += " " + test::shell_quoted(e);
    std::vector<std::string> with_model = args;
    with_model.insert(with_model.end(), {"--model", "gpt-test"});
    return test::run_switchboard(scratch_.path(), test::shell_words(with_model), "/dev/null", false, environment);
  }

  test::cli_result paused_run(const std::string& endpoint) {
    model_.enqueue(server_action::reply(soccer_answer()));
    return switchboard({"run", shipped_sample.string(), "--input",
                        "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan"},
                       endpoint);
  }

  static std::string run_id(const test::cli_result& r) {
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex{R"(workflow id: (\S+))"})) return {};
    return m[1].str();
  }
  static std::string describe(const test::cli_result& r) {
    return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
  }

  const hang_guard guard_{"cli_metrics: the receiver, the collectors and the switchboard processes",
                          std::chrono::seconds(240)};
  loopback_model_server model_;
  temp_dir scratch_;
};

TEST_F(cli_metrics, a_run_and_its_approval_export_token_usage_durations_and_the_hubs_counts) {
  node_receiver receiver;
  const std::string port = receiver.port();
  ASSERT_FALSE(port.empty()) << "the receiver did not start: is Node.js installed, and npm ci run in "
                             << SWITCHBOARD_OTLP_RECEIVER << "?";
  const std::string endpoint = "http://127.0.0.1:" + port;
  const auto paused = paused_run(endpoint);
  ASSERT_EQ(paused.exit_code, 4) << describe(paused);
  const std::string id = run_id(paused);
  ASSERT_FALSE(id.empty()) << describe(paused);
  const auto approved = switchboard({"resume", id, "--workflow", shipped_sample.string(), "--approve"}, endpoint);
  ASSERT_EQ(approved.exit_code, 0) << describe(approved);

  const auto lines = receiver.lines_when([](const auto& seen) { return seen.size() >= 2; });
  std::vector<json::value> first, second;
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& line : lines) ASSERT_TRUE(line.starts_with("decoded-metrics ")) << line;
  first.push_back(json::parse(std::string_view(lines[0]).substr(16)));
  second.push_back(json::parse(std::string_view(lines[1]).substr(16)));

  // The run's one model request: the loopback server reports 11 prompt and
  // 7 completion tokens.
  const auto usage = points_of(first, "gen_ai.client.token.usage");
  ASSERT_EQ(usage.size(), 2u);
  std::map<std::string, double> sum_by_type;
  for (const point& p : usage) {
    EXPECT_EQ(p.attributes.at("gen_ai.operation.name"), "chat");
    EXPECT_EQ(p.attributes.at("gen_ai.provider.name"), "openai");
    EXPECT_EQ(p.attributes.at("gen_ai.request.model"), "gpt-test");
    EXPECT_EQ(p.attributes.at("gen_ai.response.model"), "gpt-test");
    EXPECT_EQ(p.data.at("count").as_string(), "1");
    EXPECT_EQ(p.data.at("explicitBounds").as_array().size(), 14u);
    sum_by_type[p.attributes.at("gen_ai.token.type")] = number(p.data.at("sum"));
  }
  EXPECT_EQ(sum_by_type, (std::map<std::string, double>{{"input", 11}, {"output", 7}}));
  const auto durations = points_of(first, "gen_ai.client.operation.duration");
  ASSERT_EQ(durations.size(), 1u);
  EXPECT_EQ(durations[0].data.at("count").as_string(), "1");
  EXPECT_FALSE(durations[0].attributes.contains("error.type"));

  // The hub's: the first process paused for approval, the second completed.
  const auto runs_first = points_of(first, "switchboard.workflow.runs");
  ASSERT_EQ(runs_first.size(), 1u);
  EXPECT_EQ(runs_first[0].attributes.at("switchboard.run.outcome"), "awaiting_approval");
  const auto runs_second = points_of(second, "switchboard.workflow.runs");
  ASSERT_EQ(runs_second.size(), 1u);
  EXPECT_EQ(runs_second[0].attributes.at("switchboard.run.outcome"), "completed");
  const auto requested = points_of(first, "switchboard.workflow.approvals");
  ASSERT_EQ(requested.size(), 1u);
  EXPECT_EQ(requested[0].attributes.at("switchboard.approval.decision"), "requested");
  const auto decided = points_of(second, "switchboard.workflow.approvals");
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].attributes.at("switchboard.approval.decision"), "approved");
  EXPECT_FALSE(points_of(second, "switchboard.tool.calls").empty());
  EXPECT_FALSE(points_of(first, "switchboard.workflow.steps").empty());
  // The model's answer went through the parser directly (JSON-object mode).
  const auto parses = points_of(first, "switchboard.parser.outcomes");
  ASSERT_FALSE(parses.empty());
  EXPECT_EQ(parses[0].attributes.at("switchboard.parser.stage"), "direct");
  // The run's text never becomes a label.
  EXPECT_EQ(lines[0].find("Soccer practice for Maya"), std::string::npos);
}

TEST_F(cli_metrics, a_collector_that_is_down_fails_or_asks_to_wait_leaves_the_run_as_it_was) {
  using namespace switchboard::telemetry::collector_testing;
  request_log failing_log, busy_log;
  collector failing(answering(failing_log, 500));
  // Retry-After longer than what is left of the exit's flush: given up at once.
  collector busy([&](net::server_request& request) -> asio::awaitable<net::server_response> {
    busy_log.add(request);
    co_return answer(429, "{}", {{"retry-after", "120"}});
  });
  const std::vector<std::pair<std::string, std::string>> endpoints{
      {"down", "http://127.0.0.1:" + std::to_string(free_port())},
      {"500", "http://127.0.0.1:" + std::to_string(failing.port())},
      {"429", "http://127.0.0.1:" + std::to_string(busy.port())}};
  for (const auto& [what, endpoint] : endpoints) {
    const auto r = paused_run(endpoint);
    EXPECT_EQ(r.exit_code, 4) << what << ": " << describe(r);
    EXPECT_NE(r.out.find("workflow id: "), std::string::npos) << what << ": " << describe(r);
  }
  EXPECT_EQ(failing_log.count(), 1u);
  ASSERT_EQ(busy_log.count(), 1u);
  EXPECT_EQ(busy_log.requests()[0].path, "/v1/metrics");
}

TEST_F(cli_metrics, ask_exports_the_token_usage_and_duration_of_its_request) {
  node_receiver receiver;
  const std::string port = receiver.port();
  ASSERT_FALSE(port.empty()) << "the receiver did not start";
  const auto data = json::parse(soccer_answer()).at("data");
  model_.enqueue(server_action::reply(json::serialize(data)));
  const auto schema = shipped_sample.parent_path() / "schemas" / "nl_parser.output@1.json";
  const auto asked = switchboard({"ask", "--schema", schema.string(), "Soccer practice for Maya on Saturday"},
                                 "http://127.0.0.1:" + port);
  ASSERT_EQ(asked.exit_code, 0) << describe(asked);

  const auto lines = receiver.lines_when([](const auto& seen) { return !seen.empty(); });
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_TRUE(lines[0].starts_with("decoded-metrics ")) << lines[0];
  const std::vector<json::value> sent{json::parse(std::string_view(lines[0]).substr(16))};
  std::map<std::string, double> sum_by_type;
  for (const point& p : points_of(sent, "gen_ai.client.token.usage")) {
    EXPECT_EQ(p.attributes.at("gen_ai.request.model"), "gpt-test");
    sum_by_type[p.attributes.at("gen_ai.token.type")] = number(p.data.at("sum"));
  }
  EXPECT_EQ(sum_by_type, (std::map<std::string, double>{{"input", 11}, {"output", 7}}));
  const auto durations = points_of(sent, "gen_ai.client.operation.duration");
  ASSERT_EQ(durations.size(), 1u);
  EXPECT_EQ(durations[0].data.at("count").as_string(), "1");
}

}  // namespace
}  // namespace switchboard::testing
