// render_prometheus: the exact text exposition format, escaping included.
#include "metrics_output.hpp"

#include "../../cli_runner.hpp"

#include <switchboard/models/caching_model.hpp>
#include <switchboard/models/metered_model.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <unistd.h>

namespace switchboard::cli {
namespace {

using protocol::metric_sample;

metric_sample counter(std::string name, std::map<std::string, std::string> labels, double value) {
  return {std::move(name), std::move(labels), value, metric_sample::kind::counter};
}

TEST(render_prometheus, families_have_help_and_type_once_and_their_samples_together) {
  const std::vector<metric_sample> samples{
      counter("switchboard_model_requests_total", {{"provider", "openai"}, {"outcome", "ok"}}, 2),
      {"switchboard_model_cache_entries", {{"cache", "model"}}, 1, metric_sample::kind::gauge},
      counter("switchboard_model_requests_total", {{"provider", "openai"}, {"outcome", "error"}}, 0),
  };
  EXPECT_EQ(render_prometheus(samples),
            "# HELP switchboard_model_requests_total Calls that reached the model's provider, by outcome.\n"
            "# TYPE switchboard_model_requests_total counter\n"
            "switchboard_model_requests_total{outcome=\"ok\",provider=\"openai\"} 2\n"
            "switchboard_model_requests_total{outcome=\"error\",provider=\"openai\"} 0\n"
            "# HELP switchboard_model_cache_entries Entries in the response cache's memory.\n"
            "# TYPE switchboard_model_cache_entries gauge\n"
            "switchboard_model_cache_entries{cache=\"model\"} 1\n");
}

TEST(render_prometheus, label_values_are_escaped_and_terminal_safe) {
  const std::vector<metric_sample> samples{
      counter("switchboard_agent_calls_total", {{"agent", "a\"b\\c\nd\x1b[2J"}}, 1)};
  const std::string text = render_prometheus(samples);
  EXPECT_NE(text.find(R"(switchboard_agent_calls_total{agent="a\"b\\c\nd\\x1b[2J"} 1)"), std::string::npos) << text;
  EXPECT_EQ(switchboard::test::find_raw_control(text), "");
}

TEST(render_prometheus, names_are_made_valid_and_unknown_families_get_a_generic_help) {
  const std::vector<metric_sample> samples{counter("my metric-1", {{"bad-label", "v"}, {"9x", "w"}}, 1)};
  EXPECT_EQ(render_prometheus(samples),
            "# HELP my_metric_1 Switchboard metric.\n"
            "# TYPE my_metric_1 counter\n"
            "my_metric_1{_9x=\"w\",bad_label=\"v\"} 1\n");
}

TEST(render_prometheus, values_print_as_integers_or_shortest_decimals) {
  const std::vector<metric_sample> samples{
      {"g", {{"k", "a"}}, 0.25, metric_sample::kind::gauge},
      {"g", {{"k", "b"}}, 1e21, metric_sample::kind::gauge},
      {"g", {{"k", "c"}}, std::numeric_limits<double>::quiet_NaN(), metric_sample::kind::gauge},
      {"g", {{"k", "d"}}, -std::numeric_limits<double>::infinity(), metric_sample::kind::gauge},
      {"g", {{"k", "e"}}, 12345678, metric_sample::kind::gauge},
  };
  EXPECT_EQ(render_prometheus(samples),
            "# HELP g Switchboard metric.\n# TYPE g gauge\n"
            "g{k=\"a\"} 0.25\ng{k=\"b\"} 1e+21\ng{k=\"c\"} NaN\ng{k=\"d\"} -Inf\ng{k=\"e\"} 12345678\n");
}

TEST(render_prometheus, renders_the_sources_the_tool_has) {
  models::model_metrics model("openai");
  models::chat_result answer;
  answer.usage = {11, 7};
  model.record_success(answer);
  protocol::parser_metrics parser;
  const std::vector<const protocol::metrics_source*> sources{&parser, nullptr, &model};
  const std::string text = render_prometheus(sources);
  EXPECT_NE(text.find("# TYPE switchboard_parse_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("switchboard_model_tokens_total{kind=\"prompt\",provider=\"openai\"} 11\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("switchboard_model_retries_total{provider=\"openai\"} 0\n"), std::string::npos) << text;
}

TEST(write_metrics, replaces_the_file_whole) {
  const auto file = std::filesystem::temp_directory_path() / ("switchboard-metrics-" + std::to_string(::getpid()) + ".prom");
  write_metrics(file.string(), "a 1\n");
  write_metrics(file.string(), "b 2\n");
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "b 2\n");
  std::filesystem::remove(file);
  EXPECT_THROW(write_metrics("/nonexistent-dir/x.prom", "a 1\n"), std::runtime_error);
}

}  // namespace
}  // namespace switchboard::cli
