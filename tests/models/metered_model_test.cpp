#include <switchboard/models/metered_model.hpp>

#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <switchboard/models/openai_model.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include <gtest/gtest.h>

namespace switchboard::models {
namespace {

using test::run;
using test::user_request;

double value_of(const std::vector<protocol::metric_sample>& samples, const std::string& name,
                const std::map<std::string, std::string>& labels) {
  for (const auto& s : samples)
    if (s.name == name && s.labels == labels) return s.value;
  return -1;
}

TEST(metered_model, counts_calls_errors_and_tokens) {
  scripted_model inner;
  inner.push_text("a", {11, 7});
  inner.push(scripted_response::error(model_error(model_errc::http_status, "boom", 500)));
  inner.push_text("b", {1, 2});
  auto metrics = std::make_shared<model_metrics>("scripted");
  metered_model model(inner, metrics);
  run(model.complete(user_request("1")));
  EXPECT_THROW(run(model.complete(user_request("2"))), model_error);
  run(model.complete(user_request("3")));
  const auto c = metrics->snapshot();
  EXPECT_EQ(c.ok, 2u);
  EXPECT_EQ(c.failed, 1u);
  EXPECT_EQ(c.prompt_tokens, 12u);
  EXPECT_EQ(c.completion_tokens, 9u);
  const auto samples = metrics->collect();
  EXPECT_EQ(value_of(samples, "switchboard_model_requests_total", {{"provider", "scripted"}, {"outcome", "ok"}}), 2);
  EXPECT_EQ(value_of(samples, "switchboard_model_errors_total", {{"provider", "scripted"}, {"code", "http_status"}}),
            1);
  EXPECT_EQ(value_of(samples, "switchboard_model_tokens_total", {{"provider", "scripted"}, {"kind", "prompt"}}), 12);
}

// What host/ turns into gen_ai.client.* metrics: every request, its
// models, tokens and error type, reported once.
class kept_calls final : public model_call_observer {
 public:
  struct kept {
    std::string provider, request_model, response_model, error_type;
    token_usage usage;
  };
  void on_model_call(const model_call& call) noexcept override {
    calls.push_back({std::string(call.provider), std::string(call.request_model), std::string(call.response_model),
                     std::string(call.error_type), call.usage});
  }
  std::vector<kept> calls;
};

TEST(metered_model, reports_each_request_with_its_models_tokens_and_error_type) {
  scripted_model inner;
  inner.push_text("a", {11, 7});
  inner.push(scripted_response::error(model_error(model_errc::http_status, "boom", 500)));
  auto metrics = std::make_shared<model_metrics>("scripted", "default-model");
  auto observer = std::make_shared<kept_calls>();
  metrics->observe_calls(observer);
  metered_model model(inner, metrics);
  chat_request unnamed = user_request("1");
  unnamed.model.clear();  // the client's default model
  const chat_result answered = run(model.complete(unnamed));
  chat_request named = user_request("2");
  named.model = "asked-for";
  EXPECT_THROW(run(model.complete(named)), model_error);
  ASSERT_EQ(observer->calls.size(), 2u);
  EXPECT_EQ(observer->calls[0].provider, inner.provider());
  EXPECT_EQ(observer->calls[0].request_model, "default-model");
  EXPECT_EQ(observer->calls[0].response_model, answered.model);
  EXPECT_EQ(observer->calls[0].usage.prompt_tokens, 11);
  EXPECT_EQ(observer->calls[0].usage.completion_tokens, 7);
  EXPECT_EQ(observer->calls[0].error_type, "");
  EXPECT_EQ(observer->calls[1].request_model, "asked-for");
  EXPECT_EQ(observer->calls[1].error_type, "http_status");
  EXPECT_EQ(observer->calls[1].usage.total(), 0);
  // Let go: later requests are not reported.
  metrics->observe_calls(nullptr);
  inner.push_text("b", {1, 2});
  run(model.complete(user_request("3")));
  EXPECT_EQ(observer->calls.size(), 2u);
}

TEST(metered_model, the_retry_observer_counts_transport_retries) {
  testing::loopback_model_server server;
  server.enqueue(testing::server_action::error(503, "busy"));
  server.enqueue(testing::server_action::reply("hello"));
  auto metrics = std::make_shared<model_metrics>("openai");
  openai_options options = test::openai_for(server, "gpt-test");
  options.http.retry.on_retry = metrics->retry_observer();
  openai_model client(options);
  metered_model model(client, metrics);
  EXPECT_EQ(run(model.complete(user_request("hi"))).text, "hello");
  EXPECT_EQ(metrics->snapshot().retries, 1u);
  EXPECT_EQ(metrics->snapshot().ok, 1u);
}

}  // namespace
}  // namespace switchboard::models
