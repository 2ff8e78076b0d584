// `switchboard serve`'s /metrics with the sample's LLM agents talking to a
// loopback model server: the OpenTelemetry instruments appear in Prometheus
// form (gen_ai_client_token_usage with the conventions' buckets, the hub's
// switchboard_* counters) beside the server's own series, with the counts
// the runs made, each once, recorded into the process's meter that also
// feeds OTLP.
#include "server_fixture.hpp"

#include <switchboard/host/workflow_metrics.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include <gmock/gmock.h>

namespace switchboard::server::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using switchboard::testing::loopback_model_server;
using switchboard::testing::server_action;

std::string soccer_answer() {
  const json::object request{{"intent", "create"},     {"title", "Soccer practice"},
                             {"date", "2026-03-07"},   {"date_range", nullptr},
                             {"start_time", "14:00"},  {"end_time", "16:00"},
                             {"time_window", nullptr}, {"duration_minutes", 120},
                             {"participants", json::array{"Maya"}}, {"resources", json::array{"minivan"}},
                             {"priority", "normal"},   {"flexibility", "fixed"}};
  return json::serialize(json::object{{"data", request},
                                      {"explanation", "Soccer practice for Maya."},
                                      {"confidence", 0.9},
                                      {"reasoning", "scripted answer"}});
}

class metrics_test : public server_test {
 protected:
  void SetUp() override {}  // started by each test, after the model's answers are queued

  server::serve_options options() override {
    auto o = server_test::options();
    o.workflows[0].model.base_url = model_.base_url();
    o.workflows[0].model.model = "gpt-test";
    o.workflows[0].model.mode = models::output_mode::json_object;
    o.metrics = metrics_;
    return o;
  }
  loopback_model_server model_;
  std::shared_ptr<host::process_metrics> metrics_ = std::make_shared<host::process_metrics>(
      [](std::string_view) -> std::optional<std::string> { return std::nullopt; }, "switchboard-test");
};

TEST_F(metrics_test, the_page_shows_token_usage_and_the_hubs_counts_once) {
  model_.enqueue(server_action::reply(soccer_answer()));
  start();
  const auto id = create_thread();
  const auto paused = run_wait(id, soccer);
  ASSERT_EQ(values_of(paused).at("status"), "awaiting_approval") << paused.describe();
  const auto done = values_of(resume(id, json::object{{"decision", "approve"}}));
  ASSERT_EQ(done.at("status"), "completed") << json::serialize(done);

  const auto page = get(port(), "/metrics");
  ASSERT_EQ(page.status, 200);
  const std::string& body = page.body;
  // Each count once, under the instrument's name: no series of the server's
  // own, or of the hub's and parser's sources, repeats a run, step, tool
  // call, parse or token count.
  for (const auto* retired : {"switchboard_serve_runs_total", "switchboard_serve_step_seconds",
                              "switchboard_serve_tool_calls_total", "switchboard_serve_model_tokens_total",
                              "switchboard_workflows_total", "switchboard_agent_calls_total",
                              "switchboard_parse_total", "switchboard_model_tokens_total"})
    EXPECT_THAT(body, Not(HasSubstr(retired)));
  EXPECT_THAT(body, HasSubstr("switchboard_workflow_steps_total{gen_ai_agent_name=\"nl_parser\","
                              "gen_ai_workflow_name=\"family_scheduling\",switchboard_node=\"parse\","
                              "switchboard_step_outcome=\"ok\"} 1"));
  EXPECT_THAT(body, HasSubstr("switchboard_tool_calls_total{gen_ai_tool_name=\"calendar.book\","
                              "gen_ai_workflow_name=\"family_scheduling\",switchboard_tool_outcome=\"ok\"} 1"));
  // What no instrument covers stays: the server's own, the routes taken.
  EXPECT_THAT(body, HasSubstr("switchboard_serve_http_requests_total{method=\"POST\","
                              "route=\"/threads/{id}/runs/wait\",code=\"200\"} 2"));
  EXPECT_THAT(body, HasSubstr("switchboard_route_total{node=\"parse\",target=\"schedule\""));
  // The GenAI conventions' histogram: 11 prompt tokens lie in (4, 16].
  const std::string labels =
      "gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"openai\",gen_ai_request_model=\"gpt-test\","
      "gen_ai_response_model=\"gpt-test\"";
  EXPECT_THAT(body, HasSubstr("# TYPE gen_ai_client_token_usage histogram"));
  EXPECT_THAT(body, HasSubstr("gen_ai_client_token_usage_bucket{" + labels + ",gen_ai_token_type=\"input\",le=\"4\"} 0"));
  EXPECT_THAT(body, HasSubstr("gen_ai_client_token_usage_bucket{" + labels + ",gen_ai_token_type=\"input\",le=\"16\"} 1"));
  EXPECT_THAT(body, HasSubstr("gen_ai_client_token_usage_sum{" + labels + ",gen_ai_token_type=\"input\"} 11"));
  EXPECT_THAT(body, HasSubstr("gen_ai_client_token_usage_sum{" + labels + ",gen_ai_token_type=\"output\"} 7"));
  EXPECT_THAT(body, HasSubstr("gen_ai_client_operation_duration_seconds_count{" + labels + "} 1"));
  EXPECT_THAT(body, HasSubstr("switchboard_workflow_runs_total{gen_ai_workflow_name=\"family_scheduling\","
                              "switchboard_run_outcome=\"completed\"} 1"));
  EXPECT_THAT(body, HasSubstr("switchboard_workflow_approvals_total{gen_ai_workflow_name=\"family_scheduling\","
                              "switchboard_approval_decision=\"approved\"} 1"));
  EXPECT_THAT(body, HasSubstr("switchboard_parser_outcomes_total{gen_ai_workflow_name=\"family_scheduling\","
                              "switchboard_parser_stage=\"direct\"} 1"));
  // The store's writes, as the server's hubs made them.
  EXPECT_THAT(body, HasSubstr("# TYPE switchboard_store_operation_duration_seconds histogram"));
  EXPECT_THAT(body, HasSubstr("switchboard_store_operation_duration_seconds_count{switchboard_store_operation=\"save\"}"));
  EXPECT_THAT(body, HasSubstr("switchboard_store_operation_duration_seconds_count{switchboard_store_operation=\"create\"}"));
  // The same meter is what OTLP would export.
  bool found = false;
  for (const auto& metric : metrics_->meter()->collect()) found |= metric.description.name == "gen_ai.client.token.usage";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace switchboard::server::testing
