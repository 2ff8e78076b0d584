// A chat_model for OpenAI-compatible chat completions servers
// (POST {base_url}/chat/completions): OpenAI, Ollama, llama.cpp's server,
// vLLM. Talks HTTP/1.1 (keep-alive pool, TLS with verification) as set in
// http_options; maps chat_request to the wire format (model, messages,
// temperature, max_tokens, seed, stop, response_format) and the answer back
// (choices[0].message.content, finish_reason, usage, model).
//
// Tools (docs/models.md, "Tool calls"): chat_request::tools, tool_choice
// and parallel_tool_calls are sent as `tools` (type function, strict when
// set), `tool_choice` and `parallel_tool_calls`; choices[0].message.
// tool_calls come back as chat_result::tool_calls. Assistant turns carry
// their `tool_calls`, tool results are `role: tool` messages with their
// `tool_call_id` (OpenAI has no error flag: a failed call says so in its content).
//
// complete(): see chat_model.hpp. Errors are model_error with the HTTP
// status and the server's own message (error.message) when it answered;
// the API key never appears in errors or logs.
//
// Thread-safety: complete() may be called concurrently by any number of
// coroutines on any threads. Lifetime: destroy the model before the
// io_context(s) whose coroutines used it (it keeps idle connections) and
// after every complete() finished.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/http_options.hpp>

#include <memory>
#include <string>

namespace switchboard::models {

struct openai_options {
  http_options http;   // http.base_url empty: "https://api.openai.com/v1"
  std::string api_key; // sent as "Authorization: Bearer"; empty: no header (local servers)
  std::string model;   // used when a request names no model
  // The best rung of the output ladder the server supports. OpenAI:
  // json_schema + strict. Ollama / llama.cpp / vLLM builds that lack
  // json_schema: json_object or prompt_schema.
  model_capabilities capabilities{output_mode::json_schema, true};
};

class openai_model final : public chat_model {
 public:
  // Throws model_error(not_configured) for a malformed base URL or an
  // unreadable CA file.
  explicit openai_model(openai_options options);
  ~openai_model() override;
  openai_model(const openai_model&) = delete;
  openai_model& operator=(const openai_model&) = delete;

  boost::asio::awaitable<chat_result> complete(chat_request request) override;
  std::string_view provider() const noexcept override { return "openai"; }
  model_capabilities capabilities() const noexcept override;

  // The JSON body complete() sends for `request` (for tracing and tests).
  std::string render_request(const chat_request& request) const;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace switchboard::models
