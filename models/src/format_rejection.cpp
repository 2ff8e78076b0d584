// Which provider errors mean "this response_format is not supported here".
#include "format_rejection.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>

namespace switchboard::models::detail {

namespace {

// Statuses that carry a format rejection: 400 and 422 as they should, 500
// from servers that report a bad schema as their own failure (older
// llama.cpp and Ollama builds).
bool rejection_status(int status) { return status == 400 || status == 422 || status == 500; }

std::string lowercase_message(const model_error& error) {
  std::string text = error.provider_message() + " " + error.what();
  std::ranges::transform(text, text.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

template <std::size_t N>
bool mentions_any(const std::string& text, const std::array<std::string_view, N>& needles) {
  return std::ranges::any_of(needles, [&](std::string_view n) { return text.find(n) != std::string::npos; });
}

// The server does not take json_schema at all, strict or not.
constexpr std::array<std::string_view, 8> json_schema_unsupported{
    "of type 'json_schema' is not supported",   // OpenAI, older models
    "json_schema is not supported",
    "json_schema not supported",
    "must be one of \"text\" or \"json_object\"",  // llama.cpp before json_schema
    "json schema conversion failed",            // llama.cpp: schema → grammar
    "grammar error",                            // vLLM (xgrammar/guidance)
    "not supported by xgrammar",                // vLLM
    "invalid json schema in format",            // Ollama
};

// Strict mode refused the schema; without strict it may pass.
constexpr std::array<std::string_view, 5> strict_rejected{
    "strict",
    "invalid schema for response_format",  // OpenAI's strict-mode schema check
    "is not permitted",
    "is required to be supplied",
    "additionalproperties",
};

// Anything else that names the format.
constexpr std::array<std::string_view, 4> names_format{"response_format", "json_schema", "json_object",
                                                       "invalid format"};

}  // namespace

std::optional<rung> rung_after_rejection(const model_error& error, rung current) {
  if (error.errc() != model_errc::http_status || !rejection_status(error.http_status())) return std::nullopt;
  const std::string text = lowercase_message(error);
  switch (current.mode) {
    case output_mode::json_schema:
      if (mentions_any(text, json_schema_unsupported)) return rung{output_mode::json_object};
      if (current.strict && mentions_any(text, strict_rejected)) return rung{output_mode::json_schema, false};
      if (mentions_any(text, names_format)) {
        return current.strict ? rung{output_mode::json_schema, false} : rung{output_mode::json_object};
      }
      return std::nullopt;
    case output_mode::json_object:
      if (mentions_any(text, names_format)) return rung{output_mode::prompt_schema};
      return std::nullopt;
    case output_mode::prompt_schema:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace switchboard::models::detail
