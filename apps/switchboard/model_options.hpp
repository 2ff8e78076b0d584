// The model options every `switchboard` command that talks to a model
// accepts (ask, run, resume): one parser, one usage text, one way to build
// the model, so the same flag means the same thing everywhere.
//
//   --model NAME --base-url URL --provider openai|anthropic --mode RUNG
//   --max-attempts N --ca-file PEM --timeout SECONDS --cache DIR
//
// --max-attempts counts every request of one model call (transport retries
// of 429/5xx/timeouts and re-asks after invalid answers alike) and --timeout
// bounds the whole call (docs/models.md, "Attempts and deadlines").
//
// Thread-safety: plain functions and values; make_model_from_env reads the
// environment.
#pragma once

#include <switchboard/models/call_limits.hpp>
#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/model_factory.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::models {
class caching_model;
class model_metrics;
struct structured_options;
}  // namespace switchboard::models
namespace switchboard::protocol { class metrics_source; }

namespace switchboard::cli {

struct model_options {
  std::string model;                          // --model
  std::string base_url;                       // --base-url
  std::string provider;                       // --provider; empty: SWITCHBOARD_PROVIDER, else openai
  std::optional<models::output_mode> mode;    // --mode
  std::optional<int> max_attempts;            // --max-attempts; nullopt: the caller's default
  std::string ca_file;                        // --ca-file
  std::optional<std::chrono::seconds> timeout;  // --timeout; nullopt: 120 s per attempt, no total
  std::filesystem::path cache_dir;            // --cache; empty: no cache
};

// The usage lines of these options, for every command's usage text.
inline constexpr std::string_view model_options_usage =
    "  --model NAME           the model (default: SWITCHBOARD_MODEL)\n"
    "  --base-url URL         the server (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else\n"
    "                         the provider's public API)\n"
    "  --provider NAME        openai (any OpenAI-compatible server) or anthropic\n"
    "                         (default: SWITCHBOARD_PROVIDER, else openai)\n"
    "  --mode RUNG            force json_schema, json_object or prompt_schema\n"
    "  --max-attempts N       requests per model call in total: the first, retries after\n"
    "                         429/5xx/timeouts and re-asks after invalid answers (default 3)\n"
    "  --ca-file PEM          also trust the certificates in PEM\n"
    "  --timeout SECONDS      the most one model call takes, retries and re-asks included\n"
    "                         (default: none; each request 120 s)\n"
    "  --cache DIR            answer repeated requests from DIR (created 0700) without asking\n"
    "                         the model; new answers are kept there\n";

// Takes the option at args[i] (and its value, advancing i) into `out`.
// False when args[i] is not one of these options. Throws usage_error
// naming the option and the value when the value is missing or bad.
bool take_model_option(std::span<const std::string> args, std::size_t& i, model_options& out);

// Whether a model is configured: --model, --base-url or --provider given,
// or the provider's environment (OPENAI_BASE_URL / OPENAI_API_KEY, or
// ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY with --provider anthropic or
// SWITCHBOARD_PROVIDER=anthropic) set. Without one, `run` uses native agents.
bool configured(const model_options& options);

// The models::model_config the options describe (environment not applied).
models::model_config model_config_of(const model_options& options);

// The model to call and what counts its work.
struct cli_model {
  std::shared_ptr<models::chat_model> model;             // the one to call (the cache, with --cache)
  std::shared_ptr<models::model_metrics> metrics;        // requests, errors, retries, tokens at the provider
  std::shared_ptr<models::caching_model> cache;          // null without --cache

  // The sources metrics_output renders (model, and cache when present).
  std::vector<const protocol::metrics_source*> metrics_sources() const;
};

// The provider's client from the options and the environment, counted by
// model_metrics and, with --cache, behind a caching_model with an on-disk
// store in the cache directory. Throws models::model_error(not_configured)
// for a bad provider, base URL or CA file, std::runtime_error when the
// cache directory cannot be made.
cli_model make_model_from_env(const model_options& options);

// --max-attempts, --timeout and --mode as call limits: for a run's
// model_set (model_set::set_limits), which LLM agents apply over their
// prompt files.
models::call_limits call_limits_of(const model_options& options);

// The same limits applied to one structured call's options.
void apply_model_options(const model_options& options, models::structured_options& structured);

}  // namespace switchboard::cli
