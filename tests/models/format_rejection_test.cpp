// The provider messages that reject a response format, verbatim as the
// servers send them, and the rung each one leads to.
#include "../../models/src/format_rejection.hpp"

#include <gtest/gtest.h>

#include <string>

namespace switchboard::models::detail {
namespace {

model_error http_error(int status, std::string provider_message) {
  return model_error(model_errc::http_status, "HTTP " + std::to_string(status), status, std::move(provider_message));
}

const rung strict_schema{output_mode::json_schema, true};
const rung plain_schema{output_mode::json_schema, false};
const rung json_object{output_mode::json_object, false};

struct recorded_message {
  const char* server;
  int status;
  const char* message;
  rung from;
  output_mode to;
  bool strict_after;
};

// Each message as its server words it (status as it sends it).
const recorded_message messages[] = {
    {"OpenAI: strict schema check", 400,
     "Invalid schema for response_format 'event_1': In context=('properties', 'title'), 'minLength' is not permitted.",
     strict_schema, output_mode::json_schema, false},
    {"OpenAI: strict needs additionalProperties", 400,
     "Invalid schema for response_format 'event_1': In context=(), 'additionalProperties' is required to be "
     "supplied and to be false.",
     strict_schema, output_mode::json_schema, false},
    {"OpenAI: model without structured outputs", 400,
     "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model. Learn more about "
     "supported models at the Structured Outputs guide: https://platform.openai.com/docs/guides/structured-outputs",
     strict_schema, output_mode::json_object, false},
    {"OpenAI: json_object needs the word JSON", 400,
     "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
     json_object, output_mode::prompt_schema, false},
    {"vLLM: xgrammar", 400, "The provided JSON schema contains features not supported by xgrammar.", plain_schema,
     output_mode::json_object, false},
    {"vLLM: grammar compilation", 400, "Grammar error: Unknown format: uri", strict_schema, output_mode::json_object,
     false},
    {"llama.cpp: schema to grammar", 400,
     "JSON schema conversion failed:\nUnrecognized schema: {\"not\":{}}", strict_schema, output_mode::json_object,
     false},
    {"llama.cpp: before json_schema support", 500,
     "response_format type must be one of \"text\" or \"json_object\", but got: json_schema", plain_schema,
     output_mode::json_object, false},
    {"Ollama: schema refused", 500, "invalid JSON schema in format", plain_schema, output_mode::json_object, false},
    {"Ollama: format refused", 400, "invalid format: expected \"json\" or a JSON schema", json_object,
     output_mode::prompt_schema, false},
};

TEST(format_rejection, each_recorded_message_leads_to_its_rung) {
  for (const auto& m : messages) {
    const auto next = rung_after_rejection(http_error(m.status, m.message), m.from);
    ASSERT_TRUE(next.has_value()) << m.server;
    EXPECT_EQ(next->mode, m.to) << m.server;
    EXPECT_EQ(next->strict, m.strict_after) << m.server;
  }
}

TEST(format_rejection, errors_about_the_content_are_not_format_rejections) {
  EXPECT_FALSE(rung_after_rejection(
      http_error(400, "This model's maximum context length is 2048 tokens. However, you requested 2723 tokens."),
      strict_schema));
  EXPECT_FALSE(rung_after_rejection(http_error(401, "Invalid response_format key"), strict_schema));
  EXPECT_FALSE(rung_after_rejection(http_error(400, "response_format is bad"), {output_mode::prompt_schema}));
  EXPECT_FALSE(rung_after_rejection(model_error(model_errc::timeout, "json_schema timed out"), strict_schema));
}

}  // namespace
}  // namespace switchboard::models::detail
