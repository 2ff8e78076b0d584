#include <switchboard/models/structured.hpp>

#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <switchboard/models/openai_model.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/protocol/metrics.hpp>
#include <switchboard/testing/loopback_model_server.hpp>
#include <switchboard/protocol/strict_mode.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace switchboard::models {
namespace {

namespace json = boost::json;
using protocol::parse_stage;
using test::run;

constexpr const char* schema_text = R"({
  "type": "object",
  "properties": {
    "data": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
    "note": {"type": "string"}
  },
  "required": ["data"]
})";

protocol::compiled_schema output_schema() {
  return protocol::compiled_schema::compile(json::parse(schema_text), "scheduling.output@1");
}

structured_options options(int max_attempts = 3) {
  structured_options out;
  out.schema = output_schema();
  out.max_attempts = max_attempts;
  return out;
}

chat_request question() {
  chat_request request = test::user_request("What is x?");
  request.messages.insert(request.messages.begin(), {chat_role::system, "You answer about x."});
  return request;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const model_capabilities strict_schema_model{output_mode::json_schema, true};
const model_capabilities schema_model{output_mode::json_schema, false};
const model_capabilities json_object_model{output_mode::json_object, false};
const model_capabilities plain_model{output_mode::prompt_schema, false};

TEST(complete_structured, direct_answer_validates_on_the_first_attempt) {
  scripted_model model({scripted_response::text(R"({"data":{"x":1.5}})", {20, 6})}, plain_model);
  const structured_result result = run(complete_structured(model, question(), options()));
  EXPECT_EQ(result.value, json::parse(R"({"data":{"x":1.5}})"));
  ASSERT_EQ(result.attempts.size(), 1u);
  EXPECT_EQ(result.attempts[0].number, 1);
  EXPECT_EQ(result.attempts[0].stage, parse_stage::direct);
  EXPECT_EQ(result.attempts[0].reason, "");
  EXPECT_EQ(result.attempts[0].usage.total(), 26);
  EXPECT_EQ(result.usage.total(), 26);
  EXPECT_EQ(result.mode, output_mode::prompt_schema);
  EXPECT_EQ(result.last.text, R"({"data":{"x":1.5}})");
  EXPECT_EQ(model.calls(), 1u);
}

TEST(complete_structured, fenced_json_is_extracted) {
  scripted_model model({scripted_response::text("Sure! Here it is:\n```json\n{\"data\":{\"x\":2}}\n```\nAnything else?")});
  const structured_result result = run(complete_structured(model, question(), options()));
  EXPECT_EQ(result.value.at("data").at("x"), 2);
  EXPECT_EQ(result.attempts.at(0).stage, parse_stage::extracted);
}

TEST(complete_structured, invalid_answer_is_re_asked_with_the_validator_errors) {
  scripted_model model({scripted_response::text(R"({"data":{"x":"one"}})", {30, 8}),
                        scripted_response::text(R"({"data":{"x":1}})", {60, 6})},
                       plain_model);
  const structured_result result = run(complete_structured(model, question(), options()));
  EXPECT_EQ(result.value.at("data").at("x"), 1);
  ASSERT_EQ(result.attempts.size(), 2u);
  EXPECT_EQ(result.attempts[0].reason, "schema_type_error");
  ASSERT_FALSE(result.attempts[0].errors.empty());
  EXPECT_EQ(result.attempts[0].errors[0].path, "/data/x");
  EXPECT_EQ(result.attempts[1].reason, "");
  EXPECT_EQ(result.attempts[1].number, 2);
  EXPECT_EQ(result.usage.prompt_tokens, 90);
  EXPECT_EQ(result.usage.completion_tokens, 14);

  const chat_request reask = model.request(1);
  const chat_request first = model.request(0);
  ASSERT_EQ(reask.messages.size(), first.messages.size() + 2);
  const auto& answer = reask.messages[reask.messages.size() - 2];
  const auto& correction = reask.messages.back();
  EXPECT_EQ(answer.role, chat_role::assistant);
  EXPECT_EQ(answer.content, R"({"data":{"x":"one"}})");
  EXPECT_EQ(correction.role, chat_role::user);
  EXPECT_TRUE(contains(correction.content, "/data/x: expected number")) << correction.content;
  EXPECT_TRUE(contains(correction.content, "scheduling.output@1")) << correction.content;
  EXPECT_TRUE(contains(correction.content, "complete JSON value")) << correction.content;
}

TEST(complete_structured, unparsable_answer_is_re_asked_as_a_json_problem) {
  scripted_model model({scripted_response::text("I think x is about three."),
                        scripted_response::text(R"({"data":{"x":3}})")});
  const structured_result result = run(complete_structured(model, question(), options()));
  EXPECT_EQ(result.attempts.at(0).reason, "invalid_json");
  EXPECT_EQ(result.attempts.at(0).stage, parse_stage::failed);
  EXPECT_TRUE(contains(model.request(1).messages.back().content, "could not be read as JSON (invalid_json)"))
      << model.request(1).messages.back().content;
}

TEST(complete_structured, never_valid_fails_naming_schema_reason_and_attempts) {
  scripted_model model;
  for (int i = 0; i < 3; ++i) model.push_text(R"({"data":{"x":"string"}})", {10, 5});
  try {
    run(complete_structured(model, question(), options(3)));
    FAIL() << "expected structured_output_error";
  } catch (const structured_output_error& error) {
    EXPECT_EQ(error.errc(), model_errc::structured_output_failed);
    EXPECT_EQ(error.schema(), "scheduling.output@1");
    EXPECT_EQ(error.last_reason(), "schema_type_error");
    EXPECT_EQ(error.attempts().size(), 3u);
    EXPECT_EQ(error.usage().total(), 45);
    EXPECT_TRUE(std::string(error.what())
                    .starts_with("schema scheduling.output@1: no valid answer after 3 attempts (last reason: "
                                 "schema_type_error: /data/x: expected number, got string)"))
        << error.what();
  }
  EXPECT_EQ(model.calls(), 3u);
  EXPECT_EQ(model.request(2).messages.size(), model.request(0).messages.size() + 4)
      << "each re-ask carries the whole conversation";
}

TEST(complete_structured, one_attempt_means_no_re_ask) {
  scripted_model model({scripted_response::text("{}"), scripted_response::text(R"({"data":{"x":1}})")});
  try {
    run(complete_structured(model, question(), options(1)));
    FAIL() << "expected structured_output_error";
  } catch (const structured_output_error& error) {
    EXPECT_EQ(error.last_reason(), "schema_missing_field");
    EXPECT_TRUE(contains(error.what(), "after 1 attempt (last reason: schema_missing_field")) << error.what();
  }
  EXPECT_EQ(model.calls(), 1u);
}

TEST(complete_structured, invariant_violations_are_re_asked_too) {
  structured_options opts = options();
  opts.schema = opts.schema.with_invariant("x_positive", [](const json::value& v) -> std::optional<protocol::validation_error> {
    if (v.at("data").at("x").to_number<double>() > 0) return std::nullopt;
    return protocol::validation_error{"/data/x", "must be positive", protocol::errc::invariant_violation};
  });
  scripted_model model({scripted_response::text(R"({"data":{"x":-1}})"),
                        scripted_response::text(R"({"data":{"x":4}})")});
  const structured_result result = run(complete_structured(model, question(), opts));
  EXPECT_EQ(result.value.at("data").at("x"), 4);
  EXPECT_EQ(result.attempts.at(0).reason, "invariant_violation");
  EXPECT_TRUE(contains(model.request(1).messages.back().content, "/data/x")) << model.request(1).messages.back().content;
}

TEST(complete_structured, token_budget_stops_re_asking) {
  scripted_model model;
  for (int i = 0; i < 5; ++i) model.push_text(R"({"data":{}})", {300, 100});
  structured_options opts = options(5);
  opts.token_budget = 1000;
  try {
    run(complete_structured(model, question(), opts));
    FAIL() << "expected structured_output_error";
  } catch (const structured_output_error& error) {
    // 400 spent after one attempt, a re-ask costs >= 400: 800 fits. After two
    // attempts 800 are spent and another 400 would not fit.
    EXPECT_EQ(error.errc(), model_errc::token_budget_exhausted);
    EXPECT_EQ(error.attempts().size(), 2u);
    EXPECT_EQ(error.usage().total(), 800);
    EXPECT_EQ(error.last_reason(), "schema_missing_field");
    EXPECT_TRUE(contains(error.what(), "token budget of 1000 exhausted after 2 attempts")) << error.what();
    EXPECT_TRUE(contains(error.what(), "scheduling.output@1")) << error.what();
  }
  EXPECT_EQ(model.calls(), 2u);
}

TEST(complete_structured, an_answer_over_budget_that_validates_is_still_returned) {
  scripted_model model({scripted_response::text(R"({"data":{"x":1}})", {900, 300})});
  structured_options opts = options();
  opts.token_budget = 1000;
  const structured_result result = run(complete_structured(model, question(), opts));
  EXPECT_EQ(result.usage.total(), 1200);
}

TEST(complete_structured, json_schema_rung_sends_a_strict_schema_when_supported) {
  scripted_model model({scripted_response::text(R"({"data":{"x":1},"note":null})")}, strict_schema_model, "openai");
  const structured_result result = run(complete_structured(model, question(), options()));
  const chat_request sent = model.request(0);
  EXPECT_EQ(sent.format.type, response_format::kind::json_schema);
  EXPECT_TRUE(sent.format.strict);
  EXPECT_EQ(sent.format.name, "scheduling_output_1") << "provider names allow [A-Za-z0-9_-] only";
  EXPECT_EQ(sent.format.schema, protocol::make_strict(json::parse(schema_text)));
  EXPECT_EQ(sent.format.schema.json().at("additionalProperties"), false);
  EXPECT_EQ(sent.messages.size(), question().messages.size()) << "no schema in the prompt on this rung";
  EXPECT_EQ(sent.messages.back().content, question().messages.back().content);
  // The null stands for the absent optional "note" and is removed.
  EXPECT_EQ(result.value, json::parse(R"({"data":{"x":1}})"));
  EXPECT_EQ(result.mode, output_mode::json_schema);
}

TEST(complete_structured, strict_nulls_are_only_dropped_for_optional_properties) {
  scripted_model model({scripted_response::text(R"({"data":null,"note":null})"),
                        scripted_response::text(R"({"data":{"x":1},"note":"fine"})")},
                       strict_schema_model, "openai");
  const structured_result result = run(complete_structured(model, question(), options()));
  ASSERT_EQ(result.attempts.size(), 2u);
  EXPECT_EQ(result.attempts[0].reason, "schema_type_error");
  EXPECT_EQ(result.attempts[0].errors.at(0).path, "/data");
  EXPECT_EQ(result.value.at("note"), "fine");
}

TEST(complete_structured, json_schema_rung_without_strict_sends_the_original_schema) {
  structured_options opts = options();
  opts.schema_name = "x_answer";
  scripted_model model({scripted_response::text(R"({"data":{"x":1}})")}, schema_model);
  run(complete_structured(model, question(), opts));
  const chat_request sent = model.request(0);
  EXPECT_EQ(sent.format.type, response_format::kind::json_schema);
  EXPECT_FALSE(sent.format.strict);
  EXPECT_EQ(sent.format.name, "x_answer");
  EXPECT_EQ(sent.format.schema, json::parse(schema_text));
}

TEST(complete_structured, schemas_strict_mode_cannot_express_are_sent_non_strict) {
  // A map (schema-valued additionalProperties) has no strict form: strict
  // mode would forbid every key.
  structured_options opts = options();
  opts.schema = protocol::compiled_schema::compile(
      json::parse(R"({"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}}})"),
      "tags@1");
  scripted_model model({scripted_response::text(R"({"tags":{"a":"b"}})")}, strict_schema_model, "openai");
  run(complete_structured(model, question(), opts));
  EXPECT_FALSE(model.request(0).format.strict);
  EXPECT_EQ(model.request(0).format.schema, opts.schema.json());
}

TEST(complete_structured, why_a_schema_goes_non_strict_is_logged_once_not_per_request) {
  structured_options opts = options();
  opts.schema = protocol::compiled_schema::compile(
      json::parse(R"({"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}}})"),
      "tags.logged-once@1");
  scripted_model model({scripted_response::text(R"({"tags":{}})"), scripted_response::text(R"({"tags":{}})"),
                        scripted_response::text(R"({"tags":{}})")},
                       strict_schema_model, "openai");
  test::captured_log log;
  for (int i = 0; i < 3; ++i) run(complete_structured(model, question(), opts));
  EXPECT_FALSE(model.request(2).format.strict);
  const std::string text = log.text();
  const auto first = text.find("tags.logged-once@1: sending a non-strict json_schema to openai");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_NE(text.find("additionalProperties", first), std::string::npos) << text;
  const auto second = text.find("sending a non-strict", text.find("sending a non-strict") + 1);
  EXPECT_EQ(second, std::string::npos) << text;
}

TEST(complete_structured, json_object_rung_puts_the_schema_in_the_system_prompt) {
  scripted_model model({scripted_response::text(R"({"data":{"x":1}})")}, json_object_model);
  run(complete_structured(model, question(), options()));
  const chat_request sent = model.request(0);
  EXPECT_EQ(sent.format.type, response_format::kind::json_object);
  ASSERT_EQ(sent.messages.size(), 2u);
  EXPECT_EQ(sent.messages[0].role, chat_role::system);
  EXPECT_TRUE(sent.messages[0].content.starts_with("You answer about x.")) << "the caller's system prompt stays first";
  EXPECT_TRUE(contains(sent.messages[0].content, json::serialize(json::parse(schema_text))));
  EXPECT_TRUE(contains(sent.messages[0].content, "JSON"));
  EXPECT_EQ(sent.messages[1].content, "What is x?");
}

TEST(complete_structured, json_object_rung_adds_a_system_message_when_there_is_none) {
  scripted_model model({scripted_response::text(R"({"data":{"x":1}})")}, json_object_model);
  run(complete_structured(model, test::user_request("What is x?"), options()));
  const chat_request sent = model.request(0);
  ASSERT_EQ(sent.messages.size(), 2u);
  EXPECT_EQ(sent.messages[0].role, chat_role::system);
  EXPECT_TRUE(contains(sent.messages[0].content, "\"required\":[\"data\"]"));
}

TEST(complete_structured, prompt_schema_rung_puts_schema_and_instructions_in_the_user_prompt) {
  scripted_model model({scripted_response::text(R"({"data":{"x":1}})")}, plain_model);
  chat_request request = question();
  request.format.type = response_format::kind::json_object;  // overridden by the ladder
  run(complete_structured(model, request, options()));
  const chat_request sent = model.request(0);
  EXPECT_EQ(sent.format.type, response_format::kind::none);
  ASSERT_EQ(sent.messages.size(), 2u);
  EXPECT_EQ(sent.messages[0].content, "You answer about x.");
  EXPECT_TRUE(sent.messages[1].content.starts_with("What is x?"));
  EXPECT_TRUE(contains(sent.messages[1].content, json::serialize(json::parse(schema_text))));
  EXPECT_TRUE(contains(sent.messages[1].content, "no Markdown code fences"));
}

TEST(complete_structured, forced_mode_overrides_the_capabilities) {
  scripted_model model({scripted_response::text(R"({"data":{"x":1}})")}, strict_schema_model);
  structured_options opts = options();
  opts.force_mode = output_mode::prompt_schema;
  const structured_result result = run(complete_structured(model, question(), opts));
  EXPECT_EQ(model.request(0).format.type, response_format::kind::none);
  EXPECT_EQ(result.mode, output_mode::prompt_schema);
  EXPECT_EQ(result.attempts.at(0).mode, output_mode::prompt_schema);
}

model_error format_rejected() {
  return model_error(model_errc::http_status, "openai: HTTP 400", 400,
                     "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.");
}

TEST(complete_structured, rejected_response_format_steps_down_one_rung) {
  scripted_model model({scripted_response::error(format_rejected()),
                        scripted_response::text(R"({"data":{"x":1}})")},
                       strict_schema_model, "openai");
  const structured_result result = run(complete_structured(model, question(), options(1)));
  ASSERT_EQ(result.attempts.size(), 2u) << "the rejection is recorded but does not use up an attempt";
  EXPECT_EQ(result.attempts[0].mode, output_mode::json_schema);
  EXPECT_EQ(result.attempts[0].reason, "response_format_unsupported");
  EXPECT_TRUE(contains(result.attempts[0].errors.at(0).message, "not supported with this model"));
  EXPECT_EQ(result.attempts[1].mode, output_mode::json_object);
  EXPECT_EQ(result.mode, output_mode::json_object);
  EXPECT_EQ(model.request(1).format.type, response_format::kind::json_object);
}

TEST(complete_structured, rejected_response_format_is_not_stepped_down_when_forced) {
  scripted_model model({scripted_response::error(format_rejected())}, strict_schema_model);
  structured_options opts = options();
  opts.force_mode = output_mode::json_schema;
  try {
    run(complete_structured(model, question(), opts));
    FAIL() << "expected model_error";
  } catch (const structured_output_error&) {
    FAIL() << "a transport error must propagate as is";
  } catch (const model_error& error) {
    EXPECT_EQ(error.http_status(), 400);
  }
  EXPECT_EQ(model.calls(), 1u);
}

TEST(complete_structured, other_errors_propagate_unchanged) {
  scripted_model model({scripted_response::error(model_error(
      model_errc::http_status, "openai: HTTP 400", 400, "messages: must not be empty"))},
                       strict_schema_model);
  EXPECT_THROW(run(complete_structured(model, question(), options())), model_error);
  scripted_model timing_out({scripted_response::error(model_error(model_errc::timeout, "deadline passed"))});
  try {
    run(complete_structured(timing_out, question(), options()));
    FAIL() << "expected model_error";
  } catch (const model_error& error) {
    EXPECT_EQ(error.errc(), model_errc::timeout);
  }
}

TEST(complete_structured, invalid_max_attempts_is_rejected) {
  scripted_model model;
  EXPECT_THROW(run(complete_structured(model, question(), options(0))), std::invalid_argument);
  EXPECT_EQ(model.calls(), 0u);
}

TEST(complete_structured, parser_metrics_count_each_attempt) {
  protocol::parser_metrics metrics;
  structured_options opts = options();
  opts.metrics = &metrics;
  scripted_model model({scripted_response::text("nope"), scripted_response::text("```json\n{\"data\":{\"x\":1}}\n```")});
  run(complete_structured(model, question(), opts));
  const auto counts = metrics.outcomes();
  EXPECT_EQ(counts.failed, 1u);
  EXPECT_EQ(counts.extracted, 1u);
}

TEST(complete_structured, strict_path_counts_the_final_outcome_once) {
  protocol::parser_metrics metrics;
  structured_options opts = options();
  opts.metrics = &metrics;
  scripted_model model({scripted_response::text(R"({"data":{"x":1},"note":null})")}, strict_schema_model, "openai");
  run(complete_structured(model, question(), opts));
  const auto counts = metrics.outcomes();
  EXPECT_EQ(counts.direct, 1u);
  EXPECT_EQ(counts.failed, 0u);
}

}  // namespace
}  // namespace switchboard::models

// --- end to end: the ladder over real HTTP to the loopback server -----------

namespace switchboard::models {
namespace {

openai_options loopback_openai(const testing::loopback_model_server& server) {
  openai_options out;
  out.http.base_url = server.base_url();
  out.http.retry.max_attempts = 1;
  out.model = "gpt-test";
  out.capabilities = {output_mode::json_schema, true};
  return out;
}

TEST(complete_structured_over_http, invalid_then_valid_on_re_ask) {
  testing::loopback_model_server server;
  server.enqueue(testing::server_action::reply(R"({"data":{"x":"one"}})"));
  server.enqueue(testing::server_action::reply(R"({"data":{"x":1},"note":null})"));
  openai_model model(loopback_openai(server));

  const structured_result result = run(complete_structured(model, question(), options()));

  EXPECT_EQ(result.value, json::parse(R"({"data":{"x":1}})"));
  ASSERT_EQ(result.attempts.size(), 2u);
  EXPECT_EQ(result.attempts[0].reason, "schema_type_error");
  EXPECT_EQ(result.usage.total(), 2 * (11 + 7)) << "usage summed over both answers";
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  const json::value first = requests[0].json();
  EXPECT_EQ(first.at("response_format").at("type"), "json_schema");
  EXPECT_EQ(first.at("response_format").at("json_schema").at("name"), "scheduling_output_1");
  EXPECT_EQ(first.at("response_format").at("json_schema").at("strict"), true);
  const json::value second = requests[1].json();
  const json::array& messages = second.at("messages").as_array();
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[2].at("role"), "assistant");
  const std::string correction(messages[3].at("content").as_string());
  EXPECT_TRUE(contains(correction, "/data/x: expected number")) << correction;
}

TEST(complete_structured_over_http, server_rejecting_json_schema_makes_the_ladder_step_down) {
  testing::loopback_model_server server;
  server.enqueue(testing::server_action::error(400, "response_format json_schema is not supported by this server"));
  server.enqueue(testing::server_action::fenced_json(R"({"data":{"x":2}})"));
  openai_model model(loopback_openai(server));

  const structured_result result = run(complete_structured(model, question(), options()));

  EXPECT_EQ(result.value.at("data").at("x"), 2);
  EXPECT_EQ(result.mode, output_mode::json_object);
  ASSERT_EQ(result.attempts.size(), 2u);
  EXPECT_EQ(result.attempts[0].reason, "response_format_unsupported");
  EXPECT_EQ(result.attempts[1].stage, parse_stage::extracted);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].json().at("response_format").at("type"), "json_object");
}

}  // namespace
}  // namespace switchboard::models
