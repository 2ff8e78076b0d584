// The model options shared by ask, run and resume (see model_options.hpp).
#include "model_options.hpp"

#include "command.hpp"

#include <switchboard/models/caching_model.hpp>
#include <switchboard/models/file_cache_store.hpp>
#include <switchboard/models/metered_model.hpp>
#include <switchboard/models/structured.hpp>

#include <charconv>
#include <cstdlib>

namespace switchboard::cli {

namespace sm = switchboard::models;

namespace {

// A day: longer is a typo, and the deadline arithmetic stays far from overflow.
constexpr int max_timeout_seconds = 86400;
constexpr int max_attempts_limit = 100;

const std::string& value_of(std::span<const std::string> args, std::size_t& i) { return option_value(args, i); }

int parse_int(const std::string& option, const std::string& text, int min, int max) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max) {
    throw usage_error("option '" + option + "' needs an integer from " + std::to_string(min) + " to " +
                      std::to_string(max) + ", got '" + text + "'");
  }
  return value;
}

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

// The owner of the decorators' chain: the provider's client, the meter
// around it and the cache around that (each holds a reference to the next).
struct model_chain {
  std::unique_ptr<sm::chat_model> client;
  std::unique_ptr<sm::metered_model> metered;
  std::shared_ptr<sm::caching_model> cache;
};

}  // namespace

bool take_model_option(std::span<const std::string> args, std::size_t& i, model_options& out) {
  const std::string& arg = args[i];
  if (arg == "--model") {
    out.model = value_of(args, i);
  } else if (arg == "--base-url") {
    out.base_url = value_of(args, i);
  } else if (arg == "--provider") {
    out.provider = value_of(args, i);
    if (out.provider != "openai" && out.provider != "anthropic")
      throw usage_error("option '--provider' must be openai or anthropic, got '" + out.provider + "'");
  } else if (arg == "--mode") {
    const std::string& text = value_of(args, i);
    out.mode = sm::parse_output_mode(text);
    if (!out.mode)
      throw usage_error("option '--mode' must be json_schema, json_object or prompt_schema, got '" + text + "'");
  } else if (arg == "--max-attempts") {
    out.max_attempts = parse_int(arg, value_of(args, i), 1, max_attempts_limit);
  } else if (arg == "--ca-file") {
    out.ca_file = value_of(args, i);
  } else if (arg == "--timeout") {
    out.timeout = std::chrono::seconds(parse_int(arg, value_of(args, i), 1, max_timeout_seconds));
  } else if (arg == "--cache") {
    out.cache_dir = value_of(args, i);
    if (out.cache_dir.empty()) throw usage_error("option '--cache' needs a directory, got ''");
  } else {
    return false;
  }
  return true;
}

bool configured(const model_options& options) {
  if (!options.model.empty() || !options.base_url.empty() || !options.provider.empty()) return true;
  const char* provider = std::getenv("SWITCHBOARD_PROVIDER");
  if (provider && std::string_view(provider) == "anthropic")
    return env_set("ANTHROPIC_BASE_URL") || env_set("ANTHROPIC_API_KEY");
  return env_set("OPENAI_BASE_URL") || env_set("OPENAI_API_KEY");
}

sm::model_config model_config_of(const model_options& options) {
  sm::model_config config;
  config.provider = options.provider;
  config.model = options.model;
  config.http.base_url = options.base_url;
  config.http.ca_file = options.ca_file;
  if (options.timeout) {
    // The call's deadline bounds every attempt (structured_options::timeout);
    // one attempt may use all of it.
    config.http.request_timeout = *options.timeout;
    config.http.connect_timeout = std::min<std::chrono::milliseconds>(config.http.connect_timeout, *options.timeout);
  }
  return config;
}

std::vector<const protocol::metrics_source*> cli_model::metrics_sources() const {
  std::vector<const protocol::metrics_source*> out;
  if (metrics) out.push_back(metrics.get());
  if (cache) out.push_back(cache.get());
  return out;
}

cli_model make_model_from_env(const model_options& options) {
  sm::model_config config = sm::model_config_from_env(model_config_of(options));
  auto metrics = std::make_shared<sm::model_metrics>(config.provider);
  config.http.retry.on_retry = metrics->retry_observer();  // metrics outlive the client: both live in `out`

  auto chain = std::make_shared<model_chain>();
  chain->client = sm::make_model(config);
  chain->metered = std::make_unique<sm::metered_model>(*chain->client, metrics);
  cli_model out;
  out.metrics = metrics;
  if (!options.cache_dir.empty()) {
    sm::caching_options caching;
    caching.name = "model";
    caching.ttl = std::chrono::steady_clock::duration::zero();
    caching.store = std::make_shared<sm::file_cache_store>(sm::file_cache_options{options.cache_dir});
    chain->cache = std::make_shared<sm::caching_model>(*chain->metered, std::move(caching));
    out.cache = std::shared_ptr<sm::caching_model>(chain, chain->cache.get());
    out.model = std::shared_ptr<sm::chat_model>(chain, chain->cache.get());
  } else {
    out.model = std::shared_ptr<sm::chat_model>(chain, chain->metered.get());
  }
  return out;
}

sm::call_limits call_limits_of(const model_options& options) {
  sm::call_limits limits;
  limits.max_attempts = options.max_attempts;
  if (options.timeout) limits.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*options.timeout);
  limits.force_mode = options.mode;
  return limits;
}

void apply_model_options(const model_options& options, sm::structured_options& structured) {
  sm::apply_call_limits(call_limits_of(options), structured);
}

}  // namespace switchboard::cli
