// The model options' parser (see model_arguments.hpp).
#include "model_arguments.hpp"

#include "command.hpp"

#include <charconv>

namespace switchboard::cli {

namespace sm = switchboard::models;

namespace {

// A day: longer is a typo, and the deadline arithmetic stays far from overflow.
constexpr int max_timeout_seconds = 86400;
constexpr int max_attempts_limit = 100;

int parse_int(const std::string& option, const std::string& text, int min, int max) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max) {
    throw usage_error("option '" + option + "' needs an integer from " + std::to_string(min) + " to " +
                      std::to_string(max) + ", got '" + text + "'");
  }
  return value;
}

}  // namespace

bool take_model_option(std::span<const std::string> args, std::size_t& i, host::model_options& out) {
  const std::string& arg = args[i];
  if (arg == "--model") {
    out.model = option_value(args, i);
  } else if (arg == "--base-url") {
    out.base_url = option_value(args, i);
  } else if (arg == "--provider") {
    out.provider = option_value(args, i);
    if (out.provider != "openai" && out.provider != "anthropic")
      throw usage_error("option '--provider' must be openai or anthropic, got '" + out.provider + "'");
  } else if (arg == "--mode") {
    const std::string& text = option_value(args, i);
    out.mode = sm::parse_output_mode(text);
    if (!out.mode)
      throw usage_error("option '--mode' must be json_schema, json_object or prompt_schema, got '" + text + "'");
  } else if (arg == "--max-attempts") {
    out.max_attempts = parse_int(arg, option_value(args, i), 1, max_attempts_limit);
  } else if (arg == "--ca-file") {
    out.ca_file = option_value(args, i);
  } else if (arg == "--timeout") {
    out.timeout = std::chrono::seconds(parse_int(arg, option_value(args, i), 1, max_timeout_seconds));
  } else if (arg == "--cache") {
    out.cache_dir = option_value(args, i);
    if (out.cache_dir.empty()) throw usage_error("option '--cache' needs a directory, got ''");
  } else {
    return false;
  }
  return true;
}

std::vector<std::string> model_arguments(const host::model_options& options) {
  std::vector<std::string> words;
  const auto add = [&](std::string_view option, std::string value) {
    words.emplace_back(option);
    words.push_back(std::move(value));
  };
  if (!options.model.empty()) add("--model", options.model);
  if (!options.base_url.empty()) add("--base-url", options.base_url);
  if (!options.provider.empty()) add("--provider", options.provider);
  if (options.mode) add("--mode", std::string(sm::to_string(*options.mode)));
  if (options.max_attempts) add("--max-attempts", std::to_string(*options.max_attempts));
  if (!options.ca_file.empty()) add("--ca-file", options.ca_file);
  if (options.timeout) add("--timeout", std::to_string(options.timeout->count()));
  if (!options.cache_dir.empty()) add("--cache", options.cache_dir.string());
  return words;
}

}  // namespace switchboard::cli
