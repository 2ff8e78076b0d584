#include <switchboard/models/model_factory.hpp>

#include <switchboard/models/anthropic_model.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/models/openai_model.hpp>

#include <cstdlib>

namespace switchboard::models {

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

void fill(std::string& field, const char* variable) {
  if (field.empty()) field = env(variable);
}

}  // namespace

std::optional<output_mode> parse_output_mode(std::string_view text) noexcept {
  if (text == "json_schema") return output_mode::json_schema;
  if (text == "json_object") return output_mode::json_object;
  if (text == "prompt_schema") return output_mode::prompt_schema;
  return std::nullopt;
}

model_config model_config_from_env(model_config config) {
  fill(config.provider, "SWITCHBOARD_PROVIDER");
  if (config.provider.empty()) config.provider = "openai";
  fill(config.model, "SWITCHBOARD_MODEL");
  if (config.provider == "anthropic") {
    fill(config.http.base_url, "ANTHROPIC_BASE_URL");
    fill(config.api_key, "ANTHROPIC_API_KEY");
  } else {
    fill(config.http.base_url, "OPENAI_BASE_URL");
    fill(config.api_key, "OPENAI_API_KEY");
  }
  if (!config.best_mode) {
    const std::string mode = env("SWITCHBOARD_OUTPUT_MODE");
    if (!mode.empty()) {
      config.best_mode = parse_output_mode(mode);
      if (!config.best_mode) {
        throw model_error(model_errc::not_configured,
                          "SWITCHBOARD_OUTPUT_MODE='" + mode +
                              "' is not an output mode (json_schema, json_object or prompt_schema)");
      }
    }
  }
  return config;
}

std::unique_ptr<chat_model> make_model(const model_config& config) {
  if (config.provider.empty() || config.provider == "openai") {
    openai_options options;
    options.http = config.http;
    options.api_key = config.api_key;
    options.model = config.model;
    if (config.best_mode) options.capabilities.best_mode = *config.best_mode;
    if (config.strict_schema) {
      options.capabilities.strict_schema = *config.strict_schema;
    } else if (config.best_mode && *config.best_mode != output_mode::json_schema) {
      options.capabilities.strict_schema = false;
    }
    return std::make_unique<openai_model>(std::move(options));
  }
  if (config.provider == "anthropic") {
    // best_mode is not applied: the forced tool is Anthropic's structured
    // mode; lower rungs are chosen per request (structured_options::force_mode).
    anthropic_options options;
    options.http = config.http;
    options.api_key = config.api_key;
    options.model = config.model;
    return std::make_unique<anthropic_model>(std::move(options));
  }
  throw model_error(model_errc::not_configured,
                    "unknown model provider '" + config.provider + "' (expected openai or anthropic)");
}

std::unique_ptr<chat_model> make_model_from_env(model_config config) {
  return make_model(model_config_from_env(std::move(config)));
}

}  // namespace switchboard::models
