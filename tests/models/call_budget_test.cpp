// One count of attempts and one deadline per call (call_budget in
// chat_model.hpp): complete_structured and the HTTP client share them, so a
// call sends at most max_attempts requests in all — transport retries and
// re-asks together — and ends by its timeout, against a real server on
// 127.0.0.1 that stalls, fails or answers badly.
#include <switchboard/models/chat_model.hpp>

#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <switchboard/models/openai_model.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/models/structured.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace switchboard::models {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using testing::loopback_model_server;
using testing::server_action;
using clock_type = std::chrono::steady_clock;

structured_options limited(int max_attempts, std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
  structured_options out;
  out.schema = protocol::compiled_schema::compile(
      json::parse(R"({"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]})"), "x@1");
  out.max_attempts = max_attempts;
  out.timeout = timeout;
  return out;
}

struct outcome {
  std::optional<model_error> error;
  std::optional<structured_result> result;
  clock_type::duration elapsed{};
};

outcome ask_structured(chat_model& model, const structured_options& options) {
  outcome out;
  const auto started = clock_type::now();
  try {
    out.result = test::run(complete_structured(model, test::user_request("x?"), options));
  } catch (const model_error& e) {
    out.error = e;
  }
  out.elapsed = clock_type::now() - started;
  return out;
}

std::string what(const outcome& o) { return o.error ? o.error->what() : std::string("(no error)"); }

// The issue's case: with the old per-attempt timeout, three transport
// attempts of 2 s plus back-off took ~7 s and the error said "attempt 3".
TEST(call_budget, a_stalling_server_ends_the_call_at_its_timeout_after_one_attempt) {
  loopback_model_server server;
  server.set_default(server_action::stall(30s));
  openai_model model(test::openai_for(server, "gpt-test"));
  const outcome o = ask_structured(model, limited(1, 2s));
  ASSERT_TRUE(o.error);
  EXPECT_EQ(o.error->errc(), model_errc::timeout) << what(o);
  EXPECT_NE(what(o).find("(after 1 attempt, the most allowed)"), std::string::npos) << what(o);
  EXPECT_EQ(what(o).find("attempt 3"), std::string::npos) << what(o);
  // One attempt, ended by the call's deadline (never before it): the old
  // behaviour sent three, each with its own timeout.
  EXPECT_EQ(server.request_count(), 1u);
  EXPECT_GE(o.elapsed, 1900ms);
}

TEST(call_budget, retries_share_the_deadline_and_never_sleep_past_it) {
  loopback_model_server server;
  server.set_default(server_action::stall(30s));
  openai_model model(test::openai_for(server, "gpt-test"));  // request_timeout 20 s
  const outcome o = ask_structured(model, limited(5, 2s));
  ASSERT_TRUE(o.error);
  EXPECT_EQ(o.error->errc(), model_errc::timeout) << what(o);
  EXPECT_NE(what(o).find("no time left for another before the call's deadline"), std::string::npos) << what(o);
  EXPECT_NE(what(o).find("after 1 attempt"), std::string::npos) << what(o);
  EXPECT_EQ(server.request_count(), 1u);  // no retry was sent into the time the call did not have
}

TEST(call_budget, a_retry_after_beyond_the_deadline_fails_at_once) {
  loopback_model_server server;
  server.set_default(server_action::rate_limited(30));
  openai_model model(test::openai_for(server, "gpt-test"));
  const outcome o = ask_structured(model, limited(3, 5s));
  ASSERT_TRUE(o.error);
  EXPECT_EQ(o.error->http_status(), 429) << what(o);
  EXPECT_NE(what(o).find("no time left"), std::string::npos) << what(o);
  EXPECT_EQ(server.request_count(), 1u);  // it did not sleep 30 s to send a second
}

TEST(call_budget, transport_retries_and_reasks_draw_on_one_count) {
  loopback_model_server server;
  server.enqueue(server_action::error(503, "overloaded"));
  server.enqueue(server_action::reply(R"({"y": 1})"));  // invalid: re-asked
  server.enqueue(server_action::reply(R"({"x": 2})"));
  openai_model model(test::openai_for(server, "gpt-test"));
  const outcome o = ask_structured(model, limited(3));
  ASSERT_TRUE(o.result) << what(o);
  EXPECT_EQ(server.request_count(), 3u);
  ASSERT_EQ(o.result->attempts.size(), 2u);
  // The answers came with the call's 2nd and 3rd requests.
  EXPECT_EQ(o.result->attempts[0].number, 2);
  EXPECT_EQ(o.result->attempts[1].number, 3);
}

TEST(call_budget, the_limit_counts_transport_retries_too) {
  loopback_model_server server;
  server.set_default(server_action::error(503, "overloaded"));
  openai_model model(test::openai_for(server, "gpt-test"));
  const outcome o = ask_structured(model, limited(2));
  ASSERT_TRUE(o.error);
  EXPECT_EQ(o.error->http_status(), 503);
  EXPECT_NE(what(o).find("(after 2 attempts, the most allowed)"), std::string::npos) << what(o);
  EXPECT_EQ(server.request_count(), 2u);  // before: 3 transport attempts per request
}

TEST(call_budget, a_reask_after_a_retry_is_refused_when_the_count_is_spent) {
  loopback_model_server server;
  server.enqueue(server_action::error(500, "oops"));
  server.set_default(server_action::reply(R"({"y": 1})"));
  openai_model model(test::openai_for(server, "gpt-test"));
  const outcome o = ask_structured(model, limited(2));
  ASSERT_TRUE(o.error);
  EXPECT_EQ(o.error->errc(), model_errc::structured_output_failed) << what(o);
  EXPECT_NE(what(o).find("no valid answer after 2 attempts"), std::string::npos) << what(o);
  EXPECT_EQ(server.request_count(), 2u);
}

TEST(call_budget, a_model_that_counts_nothing_counts_one_attempt_per_answer) {
  scripted_model model;
  model.push_text(R"({"y": 1})");
  model.push_text(R"({"y": 2})");
  const outcome o = ask_structured(model, limited(2));
  ASSERT_TRUE(o.error);
  EXPECT_NE(what(o).find("no valid answer after 2 attempts"), std::string::npos) << what(o);
  EXPECT_EQ(model.calls(), 2u);
}

TEST(call_budget, the_deadline_stops_reasks_between_answers) {
  scripted_model model;
  model.push(scripted_response::text(R"({"y": 1})").after(300ms));
  model.push(scripted_response::text(R"({"x": 1})"));
  const outcome o = ask_structured(model, limited(3, 200ms));
  ASSERT_TRUE(o.error);
  EXPECT_EQ(o.error->errc(), model_errc::timeout) << what(o);
  EXPECT_NE(what(o).find("no valid answer after 1 attempt within the call's 200 ms"), std::string::npos) << what(o);
  EXPECT_EQ(model.calls(), 1u);
}

TEST(call_budget, without_a_budget_the_retry_policy_alone_counts) {
  loopback_model_server server;
  server.set_default(server_action::error(503, "overloaded"));
  openai_model model(test::openai_for(server, "gpt-test"));  // retry.max_attempts 3
  try {
    test::run(model.complete(test::user_request("hi")));
    FAIL() << "expected an error";
  } catch (const model_error& e) {
    EXPECT_NE(std::string(e.what()).find("(after 3 attempts, the most allowed)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.request_count(), 3u);
}

TEST(call_limits, set_limits_replace_the_options_and_unset_ones_keep_them) {
  structured_options options = limited(3);
  options.force_mode = output_mode::json_schema;
  apply_call_limits({}, options);
  EXPECT_EQ(options.max_attempts, 3);
  EXPECT_FALSE(options.timeout);
  call_limits limits;
  limits.max_attempts = 1;
  limits.timeout = 2s;
  limits.force_mode = output_mode::prompt_schema;
  apply_call_limits(limits, options);
  EXPECT_EQ(options.max_attempts, 1);
  EXPECT_EQ(options.timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(options.force_mode, output_mode::prompt_schema);
}

}  // namespace
}  // namespace switchboard::models
