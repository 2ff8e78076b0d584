// A chat_model for the Anthropic messages API (POST {base_url}/v1/messages,
// headers x-api-key and anthropic-version). System messages become the
// top-level "system" field. Structured output (response_format json_schema
// or json_object) is requested through one forced tool whose input_schema
// is the output schema; chat_result.text is then the tool_use block's input
// serialized as JSON, and finish_reason the stop_reason ("tool_use", which
// `stop` maps to complete). max_tokens maps to truncated, refusal to refusal
// (the text is then the model's words, also in `refusal`); thinking blocks
// go to `reasoning`, never into the text.
// Usage maps input_tokens/output_tokens to prompt/completion tokens.
//
// Tools (docs/models.md, "Tool calls"): chat_request::tools become `tools`
// ({name, description, input_schema}), tool_choice {type: auto|none|any|
// tool}; tool_use blocks of the answer become chat_result::tool_calls (the
// input object serialized as the arguments). Assistant turns with calls
// are sent as text + tool_use blocks, tool results as tool_result blocks
// (is_error when set) of one user turn. With a response format as well, the
// forced structured-output tool joins the request's tools and is forced.
//
// complete(): see chat_model.hpp; errors carry the HTTP status and the
// error.message of Anthropic's error body. The API key never appears in
// errors or logs.
//
// Thread-safety: complete() may be called concurrently by any number of
// coroutines on any threads. Lifetime: as openai_model.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/http_options.hpp>

#include <memory>
#include <string>

namespace switchboard::models {

struct anthropic_options {
  http_options http;                  // http.base_url empty: "https://api.anthropic.com"
  std::string api_key;                // x-api-key; required by api.anthropic.com
  std::string model;                  // used when a request names no model
  std::string version = "2023-06-01"; // anthropic-version header
  int default_max_tokens = 4096;      // the API requires max_tokens; used when the request has none
};

class anthropic_model final : public chat_model {
 public:
  // Throws model_error(not_configured) for a malformed base URL or an
  // unreadable CA file.
  explicit anthropic_model(anthropic_options options);
  ~anthropic_model() override;
  anthropic_model(const anthropic_model&) = delete;
  anthropic_model& operator=(const anthropic_model&) = delete;

  boost::asio::awaitable<chat_result> complete(chat_request request) override;
  std::string_view provider() const noexcept override { return "anthropic"; }
  // json_schema through the forced tool; the schema is not enforced strictly.
  model_capabilities capabilities() const noexcept override { return {output_mode::json_schema, false}; }

  // The JSON body complete() sends for `request` (for tracing and tests).
  std::string render_request(const chat_request& request) const;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace switchboard::models
