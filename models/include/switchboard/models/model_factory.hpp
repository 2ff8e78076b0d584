// Builds a chat_model from configuration and the conventional environment
// variables, so applications and the CLI pick a provider without code:
//
//   provider   SWITCHBOARD_PROVIDER        "openai" (default) or "anthropic"
//   base URL   OPENAI_BASE_URL / ANTHROPIC_BASE_URL (else the provider's default)
//   API key    OPENAI_API_KEY / ANTHROPIC_API_KEY
//   model      SWITCHBOARD_MODEL
//   best rung  SWITCHBOARD_OUTPUT_MODE     json_schema | json_object | prompt_schema
//
// Values set in model_config win over the environment.
//
// Thread-safety: functions are reentrant; they read the environment.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/http_options.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace switchboard::models {

struct model_config {
  std::string provider;                  // "openai" | "anthropic"; empty: environment, then openai
  std::string model;                     // default model of the client
  std::string api_key;                   // never logged
  std::optional<output_mode> best_mode;  // OpenAI-compatible: the ladder's best rung the server supports
  std::optional<bool> strict_schema;     // OpenAI-compatible: the server honours strict: true
  http_options http;                     // http.base_url empty: environment, then the provider's default
};

// "json_schema" -> output_mode::json_schema, ...; nullopt for anything else.
std::optional<output_mode> parse_output_mode(std::string_view text) noexcept;

// `config` with its empty fields filled from the environment.
model_config model_config_from_env(model_config config = {});

// An openai_model or anthropic_model. Throws model_error(not_configured)
// naming the problem: unknown provider, malformed base URL, unreadable CA
// file.
std::unique_ptr<chat_model> make_model(const model_config& config);

// make_model(model_config_from_env(config)).
std::unique_ptr<chat_model> make_model_from_env(model_config config = {});

}  // namespace switchboard::models
