// The model a host runs with, described as data: which provider and model,
// where, with which limits and cache. The command line fills it from its
// options (--model, --base-url, ...), a server from its settings; the same
// field means the same thing everywhere.
//
// max_attempts counts every request of one model call (transport retries of
// 429/5xx/timeouts and re-asks after invalid answers alike) and timeout
// bounds the whole call (docs/models.md, "Attempts and deadlines").
//
// Thread-safety: plain functions and values; configured() and
// make_configured_model() read the environment.
#pragma once

#include <switchboard/models/call_limits.hpp>
#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/model_factory.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::models { class traced_model; }
namespace switchboard::telemetry { class tracer; }

namespace switchboard::models {
class caching_model;
class model_metrics;
struct structured_options;
}  // namespace switchboard::models
namespace switchboard::protocol { class metrics_source; }

namespace switchboard::host {

struct model_options {
  std::string model;                            // empty: SWITCHBOARD_MODEL
  std::string base_url;                         // empty: the provider's environment, else its public API
  std::string provider;                         // "openai", "anthropic"; empty: SWITCHBOARD_PROVIDER, else openai
  std::optional<models::output_mode> mode;      // force one rung of the structured-output ladder
  std::optional<int> max_attempts;              // nullopt: the caller's default
  std::string ca_file;                          // also trust the certificates in this PEM file
  std::optional<std::chrono::seconds> timeout;  // nullopt: 120 s per attempt, no total
  std::filesystem::path cache_dir;              // empty: no cache
};

// Whether a model is configured: model, base_url or provider set, or the
// provider's environment (OPENAI_BASE_URL / OPENAI_API_KEY, or
// ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY with provider anthropic from
// SWITCHBOARD_PROVIDER) set. Without one, plugins offer native agents.
bool configured(const model_options& options);

// Whether any option that only acts on a model (mode, max_attempts, ca_file,
// timeout, cache_dir) is set: without a model they have no effect, which a
// host should tell its user.
bool model_only_options_given(const model_options& options);

// The models::model_config the options describe (environment not applied).
models::model_config model_config_of(const model_options& options);

// The model to call and what counts its work. Copies share one model.
struct configured_model {
  std::shared_ptr<models::chat_model> model;       // the one to call (the cache, with cache_dir)
  std::shared_ptr<models::model_metrics> metrics;  // requests, errors, retries, tokens at the provider
  std::shared_ptr<models::caching_model> cache;    // null without cache_dir
  // Directly around the provider's client: one chat span per request the
  // provider receives, once trace_with gave it a tracer (ADR 0034).
  std::shared_ptr<models::traced_model> traced;

  // Records the model's requests as chat spans with `tracer` from now on.
  // Set-up time only, before any run; nothing happens without a model.
  void trace_with(std::shared_ptr<telemetry::tracer> tracer) const;

  // The metrics sources (model, and cache when present), for a metrics page.
  std::vector<const protocol::metrics_source*> metrics_sources() const;
};

// The provider's client from the options and the environment, counted by
// model_metrics and, with cache_dir, behind a caching_model with an on-disk
// store in that directory (created 0700). Throws
// models::model_error(not_configured) for a bad provider, base URL or CA
// file, std::runtime_error when the cache directory cannot be made.
configured_model make_configured_model(const model_options& options);

// max_attempts, timeout and mode as call limits: for a run's model_set
// (model_set::set_limits), which LLM agents apply over their prompt files.
models::call_limits call_limits_of(const model_options& options);

// The same limits applied to one structured call's options.
void apply_model_options(const model_options& options, models::structured_options& structured);

}  // namespace switchboard::host
