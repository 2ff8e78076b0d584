// The OpenAI response reader: the fields it keeps, the shapes it refuses
// (with the same messages as before it streamed), and the corners of JSON a
// DOM would have handled for it (escapes, duplicate keys, nesting, numbers).
#include "../../models/src/openai_response.hpp"

#include <switchboard/models/model_error.hpp>

#include <gtest/gtest.h>

#include <string>

namespace switchboard::models::detail {
namespace {

std::string failure_of(std::string_view body) {
  try {
    (void)read_openai_completion(body);
  } catch (const model_error& e) {
    EXPECT_EQ(e.errc(), model_errc::invalid_response) << e.what();
    return e.what();
  }
  return "<no error>";
}

TEST(openai_response, keeps_text_finish_reason_model_and_usage) {
  const auto r = read_openai_completion(R"({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"a\":\"b \\u00e9\\n\"} \u00e9\n"},
                 "logprobs": null, "finish_reason": "stop"},
                {"index": 1, "message": {"role": "assistant", "content": "second"}, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 53, "completion_tokens": 6, "total_tokens": 59,
              "completion_tokens_details": {"reasoning_tokens": 0}},
    "system_fingerprint": "fp"})");
  // The content is JSON text itself: its escapes stay, the response's own are decoded.
  EXPECT_EQ(r.text, R"({"a":"b \u00e9\n"} )" "\xc3\xa9\n");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.model, "gpt-4o-mini");
  EXPECT_EQ(r.usage.prompt_tokens, 53);
  EXPECT_EQ(r.usage.completion_tokens, 6);
}

TEST(openai_response, only_the_right_places_count) {
  // "content", "model" and token counts elsewhere in the document are not the ones read.
  const auto r = read_openai_completion(R"({
    "meta": {"model": "wrong", "choices": [{"message": {"content": "wrong"}}]},
    "choices": [{"message": {"content": "right", "extra": {"content": "wrong"}},
                 "finish_reason": "stop", "usage": {"prompt_tokens": 99}}],
    "usage": {"prompt_tokens": 7, "nested": {"completion_tokens": 99}},
    "model": "right-model"})");
  EXPECT_EQ(r.text, "right");
  EXPECT_EQ(r.model, "right-model");
  EXPECT_EQ(r.usage.prompt_tokens, 7);
  EXPECT_EQ(r.usage.completion_tokens, 0);
}

TEST(openai_response, a_later_duplicate_key_wins_whatever_its_type) {
  const auto r = read_openai_completion(
      R"({"model": "first", "model": 3, "choices": [{"message": {"content": "a", "content": "b"},
          "finish_reason": "x", "finish_reason": "y"}], "usage": {"prompt_tokens": 5, "prompt_tokens": 1.5}})");
  EXPECT_EQ(r.text, "b");
  EXPECT_EQ(r.model, "");
  EXPECT_EQ(r.finish_reason, "y");
  EXPECT_EQ(r.usage.prompt_tokens, 0);
}

TEST(openai_response, deep_nesting_and_large_numbers_are_read_past) {
  std::string deep;
  for (int i = 0; i < 14; ++i) deep += "{\"k\":[";
  deep += "1";
  for (int i = 0; i < 14; ++i) deep += "]}";
  const auto r = read_openai_completion(R"({"x": )" + deep + R"(, "choices": [{"message": {"content": "ok"}}],
      "usage": {"prompt_tokens": 18446744073709551615, "completion_tokens": 2}})");
  EXPECT_EQ(r.text, "ok");
  EXPECT_EQ(r.usage.completion_tokens, 2);
}

TEST(openai_response, a_refusal_is_a_result_with_the_models_words) {
  EXPECT_EQ(read_openai_completion(R"({"choices": [{"message": {"content": null}}]})").text, "");
  const auto r = read_openai_completion(
      R"({"choices": [{"message": {"content": null, "refusal": "I cannot help"}, "finish_reason": "stop"}]})");
  EXPECT_EQ(r.stop, stop_reason::refusal);
  EXPECT_EQ(r.refusal, "I cannot help");
  EXPECT_EQ(r.text, "");
  // A null refusal beside a content is no refusal.
  const auto plain = read_openai_completion(R"({"choices": [{"message": {"refusal": null, "content": "yes"}}]})");
  EXPECT_EQ(plain.text, "yes");
  EXPECT_EQ(plain.stop, stop_reason::unknown);
}

TEST(openai_response, finish_reasons_map_to_stop_reasons) {
  const auto stop_for = [](std::string_view finish) {
    return read_openai_completion(R"({"choices": [{"message": {"content": "x"}, "finish_reason": ")" +
                                  std::string(finish) + R"("}]})")
        .stop;
  };
  EXPECT_EQ(stop_for("stop"), stop_reason::complete);
  EXPECT_EQ(stop_for("length"), stop_reason::truncated);
  EXPECT_EQ(stop_for("content_filter"), stop_reason::content_filter);
  EXPECT_EQ(stop_for("tool_calls"), stop_reason::tool_calls);
  EXPECT_EQ(stop_for("something_new"), stop_reason::unknown);
}

TEST(openai_response, content_as_a_list_of_parts_is_joined_and_a_refusal_part_is_kept) {
  const auto r = read_openai_completion(R"({"choices": [{"message": {"content": [
      {"type": "text", "text": "{\"a\":"}, {"type": "image_url", "image_url": {"url": "x"}},
      {"text": " 1}", "type": "output_text"}]}, "finish_reason": "stop"}]})");
  EXPECT_EQ(r.text, R"({"a": 1})");
  const auto refused = read_openai_completion(
      R"({"choices": [{"message": {"content": [{"type": "refusal", "refusal": "No."}]}}]})");
  EXPECT_EQ(refused.stop, stop_reason::refusal);
  EXPECT_EQ(refused.refusal, "No.");
}

TEST(openai_response, reasoning_content_is_kept_apart_from_the_answer) {
  const auto vllm = read_openai_completion(
      R"({"choices": [{"message": {"content": null, "reasoning_content": "Let me think."}, "finish_reason": "length"}]})");
  EXPECT_EQ(vllm.text, "");
  EXPECT_EQ(vllm.reasoning, "Let me think.");
  EXPECT_EQ(vllm.stop, stop_reason::truncated);
  const auto ollama = read_openai_completion(
      R"({"choices": [{"message": {"content": "{}", "reasoning": "Hmm."}, "finish_reason": "stop"}]})");
  EXPECT_EQ(ollama.reasoning, "Hmm.");
  EXPECT_EQ(ollama.text, "{}");
}

TEST(openai_response, tool_calls_with_no_content_are_named) {
  const auto r = read_openai_completion(R"({"choices": [{"message": {"content": null, "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}}]})");
  EXPECT_EQ(r.stop, stop_reason::tool_calls);
  const auto empty = read_openai_completion(R"({"choices": [{"message": {"content": "x", "tool_calls": []}}]})");
  EXPECT_EQ(empty.stop, stop_reason::unknown);
}

TEST(openai_response, invalid_utf8_in_any_field_is_kept_not_fatal) {
  const auto r = read_openai_completion("{\"model\": \"m\xff\", \"choices\": [{\"message\": {\"content\": \"caf\xc3\"}}]}");
  EXPECT_EQ(r.text, "caf\xc3");
  EXPECT_EQ(r.model, "m\xff");
}

TEST(openai_response, wrong_shapes_name_what_is_missing) {
  EXPECT_NE(failure_of("not json").find("the body is not JSON"), std::string::npos);
  EXPECT_NE(failure_of(R"({"choices": []} trailing)").find("the body is not JSON"), std::string::npos);
  EXPECT_NE(failure_of(R"({"choices": [)").find("the body is not JSON"), std::string::npos);
  EXPECT_NE(failure_of("[1, 2]").find("the body is not a JSON object"), std::string::npos);
  EXPECT_NE(failure_of(R"("text")").find("the body is not a JSON object"), std::string::npos);
  for (const char* body : {R"({})", R"({"choices": []})", R"({"choices": {}})", R"({"choices": [1]})",
                           R"({"choices": [[{"message": {}}]]})"}) {
    EXPECT_NE(failure_of(body).find("no choices[0] in the response"), std::string::npos) << body;
  }
  for (const char* body : {R"({"choices": [{}]})", R"({"choices": [{"message": "hi"}]})",
                           R"({"choices": [{"message": null}]})"}) {
    EXPECT_NE(failure_of(body).find("no choices[0].message"), std::string::npos) << body;
  }
}

TEST(openai_response, whitespace_around_the_document_is_fine) {
  EXPECT_EQ(read_openai_completion(" \n{\"choices\": [{\"message\": {\"content\": \"x\"}}]}\r\n ").text, "x");
}

}  // namespace
}  // namespace switchboard::models::detail
