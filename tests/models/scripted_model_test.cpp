#include <switchboard/models/scripted_model.hpp>

#include "model_test_support.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

namespace switchboard::models {
namespace {

namespace asio = boost::asio;
using test::run;
using test::user_request;

TEST(scripted_model, answers_in_order_and_records_every_request) {
  scripted_model model({scripted_response::text("first", {3, 2}), scripted_response::text("second")});

  const chat_result one = run(model.complete(user_request("a")));
  const chat_result two = run(model.complete(user_request("b", "other-model")));

  EXPECT_EQ(one.text, "first");
  EXPECT_EQ(one.usage.prompt_tokens, 3);
  EXPECT_EQ(one.usage.completion_tokens, 2);
  EXPECT_EQ(one.finish_reason, "stop");
  EXPECT_EQ(one.model, "gpt-test");
  EXPECT_EQ(two.text, "second");
  EXPECT_EQ(two.model, "other-model");
  ASSERT_EQ(model.calls(), 2u);
  EXPECT_EQ(model.request(0).messages.at(0).content, "a");
  EXPECT_EQ(model.requests().at(1).messages.at(0).content, "b");
  EXPECT_EQ(model.remaining(), 0u);
}

TEST(scripted_model, throws_script_exhausted_naming_the_call_number) {
  scripted_model model({scripted_response::text("only")});
  run(model.complete(user_request("a")));
  try {
    run(model.complete(user_request("b")));
    FAIL() << "expected script_exhausted";
  } catch (const model_error& error) {
    EXPECT_EQ(error.errc(), model_errc::script_exhausted);
    EXPECT_NE(std::string(error.what()).find("call 2"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("1 response"), std::string::npos) << error.what();
  }
  EXPECT_EQ(model.calls(), 2u) << "the failing request is recorded too";
}

TEST(scripted_model, error_step_throws_the_scripted_error) {
  scripted_model model;
  model.push(scripted_response::error(
      model_error(model_errc::http_status, "openai: HTTP 429", 429, "slow down", true)));
  model.push(scripted_response::exception(std::make_exception_ptr(std::runtime_error("boom"))));
  model.push_text("after the errors");

  try {
    run(model.complete(user_request("a")));
    FAIL() << "expected model_error";
  } catch (const model_error& error) {
    EXPECT_EQ(error.errc(), model_errc::http_status);
    EXPECT_EQ(error.http_status(), 429);
    EXPECT_EQ(error.provider_message(), "slow down");
    EXPECT_TRUE(error.retryable());
  }
  EXPECT_THROW(run(model.complete(user_request("b"))), std::runtime_error);
  EXPECT_EQ(run(model.complete(user_request("c"))).text, "after the errors");
}

TEST(scripted_model, function_step_sees_the_request) {
  scripted_model model({scripted_response::from([](const chat_request& request) {
    chat_result result;
    result.text = "echo: " + request.messages.back().content;
    return result;
  })});
  const chat_result result = run(model.complete(user_request("hello")));
  EXPECT_EQ(result.text, "echo: hello");
  EXPECT_EQ(result.finish_reason, "stop");
}

TEST(scripted_model, result_step_keeps_its_fields) {
  chat_result scripted;
  scripted.text = "{\"a\":";
  scripted.finish_reason = "length";
  scripted.model = "served-model";
  scripted.raw_body = "{raw}";
  scripted_model model({scripted_response::result(scripted)});
  const chat_result result = run(model.complete(user_request("x")));
  EXPECT_EQ(result.finish_reason, "length");
  EXPECT_EQ(result.model, "served-model");
  EXPECT_EQ(result.raw_body, "{raw}");
}

TEST(scripted_model, capabilities_and_provider_are_configurable) {
  scripted_model model({}, model_capabilities{output_mode::json_schema, true}, "openai");
  EXPECT_EQ(model.capabilities().best_mode, output_mode::json_schema);
  EXPECT_TRUE(model.capabilities().strict_schema);
  EXPECT_EQ(model.provider(), "openai");
  EXPECT_EQ(scripted_model().capabilities().best_mode, output_mode::prompt_schema);
}

TEST(scripted_model, delayed_step_suspends_so_a_later_call_finishes_first) {
  scripted_model model({scripted_response::text("slow").after(std::chrono::milliseconds(200)),
                        scripted_response::text("fast")});
  asio::io_context io;
  std::vector<std::string> finished;
  auto call = [&](std::string text) -> asio::awaitable<void> {
    finished.push_back((co_await model.complete(user_request(std::move(text)))).text);
  };
  asio::co_spawn(io, call("a"), asio::detached);
  asio::co_spawn(io, call("b"), asio::detached);
  io.run();
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(finished[0], "fast");
  EXPECT_EQ(finished[1], "slow");
}

TEST(scripted_model, cancellation_during_a_delay_throws_cancelled) {
  scripted_model model({scripted_response::text("never").after(std::chrono::hours(1))});
  asio::io_context io;
  asio::cancellation_signal cancel;
  std::exception_ptr outcome;
  bool done = false;
  asio::co_spawn(io, model.complete(user_request("a")),
                 asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, chat_result) {
                   outcome = e;
                   done = true;
                 }));
  io.poll();
  ASSERT_FALSE(done) << "the call must be suspended in its delay";
  cancel.emit(asio::cancellation_type::terminal);
  io.run();
  ASSERT_TRUE(done);
  ASSERT_TRUE(outcome);
  try {
    std::rethrow_exception(outcome);
  } catch (const model_error& error) {
    EXPECT_EQ(error.errc(), model_errc::cancelled);
    EXPECT_NE(std::string(error.what()).find("call 1"), std::string::npos) << error.what();
  }
}

TEST(scripted_model, empty_function_or_exception_is_rejected) {
  EXPECT_THROW(scripted_response::from({}), std::invalid_argument);
  EXPECT_THROW(scripted_response::exception(nullptr), std::invalid_argument);
  EXPECT_THROW(scripted_model().request(0), std::out_of_range);
}

}  // namespace
}  // namespace switchboard::models
