// Recognising a provider's refusal of a response_format, so the structured
// ladder steps down one rung instead of failing. Internal.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/model_error.hpp>

#include <optional>

namespace switchboard::models::detail {

// Where the ladder goes after a rejection.
struct rung {
  output_mode mode;
  bool strict = false;  // json_schema with strict: true
};

// The rung to try after `error` answered a request on `current`, or nothing
// when the error is not about the response format (then it propagates).
// Recognises the messages of OpenAI, vLLM, llama.cpp and Ollama (see
// tests/models/format_rejection_test.cpp for each one, verbatim):
//   strict json_schema rejected    → json_schema without strict
//   json_schema itself unsupported → json_object
//   json_object unsupported        → prompt_schema
std::optional<rung> rung_after_rejection(const model_error& error, rung current);

}  // namespace switchboard::models::detail
