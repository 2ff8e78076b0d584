// The structured ladder and how the model stopped: a truncated answer is
// asked again with room to finish (never accepted), refusals and content
// filters end at once with the model's words, tool calls and bare reasoning
// are named; and the strict rung reaches every schema that has a strict form.
#include <switchboard/models/structured.hpp>

#include "http_test_support.hpp"
#include "model_test_support.hpp"

#include <switchboard/models/openai_model.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/protocol/schema_registry.hpp>
#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/json/parse.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::models {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using test::run;

protocol::compiled_schema event_schema() {
  return protocol::compiled_schema::compile(json::parse(R"({
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 1},
                   "people": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}},
    "required": ["title", "people"], "additionalProperties": false})"), "event@1");
}

structured_options options(int max_attempts = 3) {
  structured_options out;
  out.schema = event_schema();
  out.max_attempts = max_attempts;
  return out;
}

chat_result answer(std::string text, std::string finish_reason, token_usage usage = {100, 50}) {
  chat_result r;
  r.text = std::move(text);
  r.finish_reason = std::move(finish_reason);
  r.usage = usage;
  return r;
}

const model_capabilities plain_model{output_mode::prompt_schema, false};

// Schema in the prompt: what is asked again is the same request, visibly.
openai_options openai_at(const testing::loopback_model_server& server) {
  openai_options out = test::openai_for(server, "gpt-test");
  out.capabilities = plain_model;
  return out;
}
const model_capabilities strict_schema_model{output_mode::json_schema, true};

template <class F>
structured_output_error failure_of(F&& call) {
  try {
    call();
  } catch (const structured_output_error& e) {
    return e;
  }
  ADD_FAILURE() << "expected structured_output_error";
  return structured_output_error(model_errc::structured_output_failed, "", "", "", {}, {});
}

// --- truncation --------------------------------------------------------------------

TEST(structured_stop, a_truncated_answer_is_asked_again_with_twice_the_max_tokens) {
  scripted_model model({scripted_response::result(answer(R"({"title": "Dinner", "people": ["Maya", "Le)", "length",
                                                         {100, 64})),
                        scripted_response::result(answer(R"({"title": "Dinner", "people": ["Maya", "Leo"]})", "stop"))},
                       plain_model);
  chat_request request = test::user_request("Dinner with Maya and Leo");
  request.max_tokens = 64;
  const structured_result result = run(complete_structured(model, request, options()));
  EXPECT_EQ(result.value.at("people").as_array().size(), 2u) << "never the repaired [\"Maya\"]";
  ASSERT_EQ(result.attempts.size(), 2u);
  EXPECT_EQ(result.attempts[0].reason, "truncated");
  EXPECT_EQ(result.attempts[0].stop, stop_reason::truncated);
  EXPECT_EQ(result.attempts[0].finish_reason, "length");
  EXPECT_EQ(result.attempts[0].max_tokens, 64);
  EXPECT_EQ(model.request(1).max_tokens, 128);
  EXPECT_EQ(result.attempts[1].max_tokens, 128);
  // The cut answer is not sent back: the same conversation, more room.
  EXPECT_EQ(model.request(1).messages.size(), model.request(0).messages.size());
}

TEST(structured_stop, a_truncated_answer_without_a_limit_doubles_what_was_used) {
  scripted_model model({scripted_response::result(answer(R"({"title": "Din)", "max_tokens", {10, 300})),
                        scripted_response::result(answer(R"({"title": "Dinner", "people": []})", "end_turn"))},
                       plain_model);
  run(complete_structured(model, test::user_request("x"), options()));
  EXPECT_EQ(model.request(1).max_tokens, 600);
}

TEST(structured_stop, truncation_fails_when_the_budget_leaves_no_more_room) {
  scripted_model model({scripted_response::result(answer(R"({"title": "Din)", "length", {100, 64}))}, plain_model);
  chat_request request = test::user_request("x");
  request.max_tokens = 64;
  structured_options opts = options();
  opts.token_budget = 230;  // 164 spent, the prompt again costs 100: nothing left to raise
  const auto e = failure_of([&] { run(complete_structured(model, request, opts)); });
  EXPECT_EQ(e.errc(), model_errc::token_budget_exhausted);
  EXPECT_EQ(e.last_reason(), "truncated");
  EXPECT_THAT(e.what(), HasSubstr("cut off at the token limit"));
  EXPECT_EQ(model.calls(), 1u);
}

TEST(structured_stop, truncation_on_the_last_attempt_fails_with_that_reason) {
  scripted_model model({scripted_response::result(answer(R"({"title": "Din)", "length"))}, plain_model);
  const auto e = failure_of([&] { run(complete_structured(model, test::user_request("x"), options(1))); });
  EXPECT_EQ(e.errc(), model_errc::structured_output_failed);
  EXPECT_EQ(e.last_reason(), "truncated");
}

TEST(structured_stop, a_cut_answer_from_a_model_that_says_it_finished_is_reasked_with_the_errors) {
  // finish_reason "stop", yet the JSON ends inside a string: more room
  // would not help; the model is shown what was wrong, as for any answer.
  scripted_model model({scripted_response::result(answer(R"({"title": "Din)", "stop")),
                        scripted_response::result(answer(R"({"title": "Dinner", "people": []})", "stop"))},
                       plain_model);
  chat_request request = test::user_request("x");
  request.max_tokens = 64;
  const structured_result result = run(complete_structured(model, request, options()));
  ASSERT_EQ(result.attempts.size(), 2u);
  EXPECT_EQ(result.attempts[0].reason, "truncated");
  EXPECT_EQ(model.request(1).max_tokens, 64) << "not raised";
  EXPECT_GT(model.request(1).messages.size(), model.request(0).messages.size()) << "re-asked with the errors";
}

// --- refusal and content filter ----------------------------------------------------

TEST(structured_stop, a_refusal_ends_at_once_with_the_models_words) {
  chat_result refused = answer("", "stop");
  refused.stop = stop_reason::refusal;
  refused.refusal = "I can't help with tracking someone's location.";
  scripted_model model({scripted_response::result(refused)}, plain_model);
  const auto e = failure_of([&] { run(complete_structured(model, test::user_request("x"), options())); });
  EXPECT_EQ(e.last_reason(), "refusal");
  EXPECT_THAT(e.what(), HasSubstr("refused"));
  EXPECT_THAT(e.what(), HasSubstr("tracking someone's location"));
  EXPECT_EQ(model.calls(), 1u) << "no re-ask: the same request would be refused again";
}

TEST(structured_stop, an_anthropic_refusal_stop_reason_ends_at_once) {
  scripted_model model({scripted_response::result(answer("I won't do that.", "refusal"))}, plain_model);
  const auto e = failure_of([&] { run(complete_structured(model, test::user_request("x"), options())); });
  EXPECT_EQ(e.last_reason(), "refusal");
  EXPECT_THAT(e.what(), HasSubstr("I won't do that."));
  EXPECT_EQ(model.calls(), 1u);
}

TEST(structured_stop, a_content_filter_ends_at_once) {
  scripted_model model({scripted_response::result(answer(R"({"title": "Wh)", "content_filter"))}, plain_model);
  const auto e = failure_of([&] { run(complete_structured(model, test::user_request("x"), options())); });
  EXPECT_EQ(e.last_reason(), "content_filter");
  EXPECT_THAT(e.what(), HasSubstr("content filter"));
  EXPECT_EQ(model.calls(), 1u);
}

// --- tool calls and reasoning ------------------------------------------------------

TEST(structured_stop, a_tool_call_instead_of_an_answer_is_named_and_re_asked) {
  scripted_model model({scripted_response::result(answer("", "tool_calls")),
                        scripted_response::result(answer(R"({"title": "A", "people": []})", "stop"))},
                       plain_model);
  const structured_result result = run(complete_structured(model, test::user_request("x"), options()));
  EXPECT_EQ(result.attempts[0].reason, "unexpected_tool_call");
  const auto& second = model.request(1).messages;
  EXPECT_THAT(second.back().content, HasSubstr("tool"));
  EXPECT_NE(second[second.size() - 2].role, chat_role::assistant) << "no empty assistant turn is sent";
}

TEST(structured_stop, reasoning_without_an_answer_is_named_and_re_asked) {
  chat_result thinking = answer("", "stop");
  thinking.reasoning = "The user wants an event...";
  scripted_model model({scripted_response::result(thinking),
                        scripted_response::result(answer(R"({"title": "A", "people": []})", "stop"))},
                       plain_model);
  const structured_result result = run(complete_structured(model, test::user_request("x"), options()));
  EXPECT_EQ(result.attempts[0].reason, "reasoning_only");
  EXPECT_EQ(result.value.at("title"), "A");
}

TEST(structured_stop, attempts_show_repairs_origin_and_stop_as_json) {
  scripted_model model({scripted_response::result(answer("Here: {\"title\": \"A\", \"people\": [],}", "stop"))},
                       plain_model);
  const structured_result result = run(complete_structured(model, test::user_request("x"), options()));
  const json::object j = result.attempts[0].to_json();
  EXPECT_EQ(j.at("stage"), "repaired");
  EXPECT_THAT(std::string(j.at("repairs").as_array().at(0).as_string()), HasSubstr("trailing comma"));
  EXPECT_EQ(j.at("origin"), "JSON in prose at offset 6");
  EXPECT_EQ(j.at("stop"), "complete");
  EXPECT_EQ(j.at("finish_reason"), "stop");
}

// --- strict everywhere -------------------------------------------------------------

TEST(structured_stop, narrowing_keywords_are_left_out_of_the_strict_schema_and_checked_locally) {
  scripted_model model({scripted_response::text(R"({"title": "", "people": ["Maya", "Maya"]})"),
                        scripted_response::text(R"({"title": "Soccer", "people": ["Maya"]})")},
                       strict_schema_model, "openai");
  const structured_result result = run(complete_structured(model, test::user_request("x"), options()));
  const chat_request sent = model.request(0);
  EXPECT_TRUE(sent.format.strict);
  const json::value& people = sent.format.schema.json().at("properties").at("people");
  EXPECT_FALSE(people.as_object().contains("uniqueItems"));
  EXPECT_FALSE(sent.format.schema.json().at("properties").at("title").as_object().contains("minLength"));
  // What the provider did not enforce, the local check did.
  ASSERT_EQ(result.attempts.size(), 2u);
  EXPECT_EQ(result.attempts[0].reason, "schema_violation");
  EXPECT_TRUE(result.attempts[0].strict);
}

TEST(structured_stop, every_agent_envelope_goes_strict_to_openai) {
  const json::value data = json::parse(R"({"type": "object", "properties": {"n": {"type": "integer"}},
                                           "required": ["n"], "additionalProperties": false})");
  structured_options opts;
  opts.schema = protocol::compiled_schema::compile(protocol::compose_envelope_schema(data), "agent.envelope@1");
  scripted_model model({scripted_response::text(
                           R"({"data": {"n": 1}, "explanation": "One.", "confidence": 0.9, "reasoning": "Counted."})")},
                       strict_schema_model, "openai");
  run(complete_structured(model, test::user_request("x"), opts));
  EXPECT_TRUE(model.request(0).format.strict);
  EXPECT_TRUE(opts.schema.strict_form(protocol::strict_provider::openai).unsupported.empty());
  EXPECT_FALSE(opts.schema.strict_form(protocol::strict_provider::openai).checked_locally.empty());
}

// --- the ladder's steps down -------------------------------------------------------

model_error rejected(int status, std::string message) {
  return model_error(model_errc::http_status, "HTTP " + std::to_string(status), status, std::move(message));
}

TEST(structured_stop, strict_rejected_steps_to_non_strict_then_json_object) {
  scripted_model model(
      {scripted_response::error(rejected(400, "Invalid schema for response_format 'event_1': In context=('properties', "
                                              "'title'), 'format' is not permitted.")),
       scripted_response::error(rejected(400, "JSON schema conversion failed:\nUnrecognized schema: {\"not\":{}}")),
       scripted_response::text(R"({"title": "A", "people": []})")},
      strict_schema_model, "openai");
  const structured_result result = run(complete_structured(model, test::user_request("x"), options(1)));
  ASSERT_EQ(result.attempts.size(), 3u);
  EXPECT_TRUE(model.request(0).format.strict);
  EXPECT_EQ(model.request(1).format.type, response_format::kind::json_schema);
  EXPECT_FALSE(model.request(1).format.strict);
  EXPECT_EQ(model.request(2).format.type, response_format::kind::json_object);
  EXPECT_EQ(result.mode, output_mode::json_object);
}

TEST(structured_stop, a_forced_json_schema_mode_still_gives_up_strictness) {
  scripted_model model({scripted_response::error(rejected(400, "'strict' is not supported for this model")),
                        scripted_response::text(R"({"title": "A", "people": []})")},
                       strict_schema_model, "openai");
  structured_options opts = options();
  opts.force_mode = output_mode::json_schema;
  const structured_result result = run(complete_structured(model, test::user_request("x"), opts));
  EXPECT_FALSE(model.request(1).format.strict);
  EXPECT_EQ(result.mode, output_mode::json_schema);
}

TEST(structured_stop_over_http, a_length_stop_from_the_server_is_asked_again) {
  testing::loopback_model_server server;
  testing::server_action cut = testing::server_action::reply(R"({"title": "Dinner", "people": ["Maya", "Le)");
  cut.finish_reason = "length";
  server.enqueue(cut);
  server.enqueue(testing::server_action::reply(R"({"title": "Dinner", "people": ["Maya", "Leo"]})"));
  openai_model model(openai_at(server));
  chat_request request = test::user_request("Dinner");
  request.max_tokens = 40;
  const structured_result result = run(complete_structured(model, request, options()));
  EXPECT_EQ(result.value.at("people").as_array().size(), 2u);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].json().at("max_tokens"), 80);
}

}  // namespace
}  // namespace switchboard::models
