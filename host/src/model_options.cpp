// The model options as data (see model_options.hpp).
#include <switchboard/host/model_options.hpp>

#include <switchboard/models/caching_model.hpp>
#include <switchboard/models/file_cache_store.hpp>
#include <switchboard/models/metered_model.hpp>
#include <switchboard/models/structured.hpp>
#include <switchboard/models/traced_model.hpp>

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace switchboard::host {

namespace sm = switchboard::models;

namespace {

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

// The owner of the decorators' chain: the provider's client, the meter
// around it and the cache around that (each holds a reference to the next).
struct model_chain {
  std::unique_ptr<sm::chat_model> client;
  std::shared_ptr<sm::traced_model> traced;
  std::unique_ptr<sm::metered_model> metered;
  std::shared_ptr<sm::caching_model> cache;
};

// The URL the client talks to: the configured one, or the provider's own.
std::string base_url_of(const sm::model_config& config) {
  if (!config.http.base_url.empty()) return config.http.base_url;
  return config.provider == "anthropic" ? "https://api.anthropic.com" : "https://api.openai.com/v1";
}

}  // namespace

bool configured(const model_options& options) {
  if (!options.model.empty() || !options.base_url.empty() || !options.provider.empty()) return true;
  const char* provider = std::getenv("SWITCHBOARD_PROVIDER");
  if (provider && std::string_view(provider) == "anthropic")
    return env_set("ANTHROPIC_BASE_URL") || env_set("ANTHROPIC_API_KEY");
  return env_set("OPENAI_BASE_URL") || env_set("OPENAI_API_KEY");
}

bool model_only_options_given(const model_options& options) {
  return options.mode || options.max_attempts || !options.ca_file.empty() || options.timeout ||
         !options.cache_dir.empty();
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

void configured_model::trace_with(std::shared_ptr<telemetry::tracer> tracer) const {
  if (traced) traced->trace_with(std::move(tracer));
}

std::vector<const protocol::metrics_source*> configured_model::metrics_sources() const {
  std::vector<const protocol::metrics_source*> out;
  if (metrics) out.push_back(metrics.get());
  if (cache) out.push_back(cache.get());
  return out;
}

configured_model make_configured_model(const model_options& options) {
  sm::model_config config = sm::model_config_from_env(model_config_of(options));
  auto metrics = std::make_shared<sm::model_metrics>(config.provider, config.model);
  config.http.retry.on_retry = metrics->retry_observer();  // metrics outlive the client: both live in `out`

  auto chain = std::make_shared<model_chain>();
  chain->client = sm::make_model(config);
  // Untraced until trace_with: then a pass-through without a frame of its own.
  chain->traced = std::make_shared<sm::traced_model>(
      *chain->client, nullptr, sm::traced_options_for(config.provider, config.model, base_url_of(config)));
  chain->metered = std::make_unique<sm::metered_model>(*chain->traced, metrics);
  configured_model out;
  out.metrics = metrics;
  out.traced = std::shared_ptr<sm::traced_model>(chain, chain->traced.get());
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

}  // namespace switchboard::host
