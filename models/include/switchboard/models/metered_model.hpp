// metered_model: a chat_model decorator that counts what the model it wraps
// was asked and answered — calls by outcome, errors by code, tokens — with
// model_metrics, which the HTTP client's retry observer can feed too
// (model_metrics::retry_observer), so that transport retries are counted
// where they happen. Put it directly around the provider's client (inside a
// caching_model), so that it counts what reached the provider:
//
//   switchboard_model_requests_total{provider, outcome=ok|error}
//   switchboard_model_errors_total{provider, code}      (model_errc names)
//   switchboard_model_retries_total{provider}           (transport retries)
//   switchboard_model_tokens_total{provider, kind=prompt|completion}
//
// Each request is also reported, with its duration, models, tokens and
// error, to a model_call_observer when one is given (observe_calls): host/
// records the GenAI semantic conventions' metrics from it, so that this
// layer knows nothing of OpenTelemetry.
//
// Completion and cancellation: as the wrapped model. Lifetime: the wrapped
// model must outlive the decorator; the metrics are shared.
// Thread-safety: complete() and every model_metrics member may be called
// concurrently from any thread (one mutex, never held across a call).
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/http_options.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/protocol/metrics.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace switchboard::models {

// One request to the provider, as metered_model saw it. Views are valid
// during on_model_call() only.
struct model_call {
  std::string_view provider;        // chat_model::provider(): "openai", "anthropic", ...
  std::string_view request_model;   // the request's model, or the client's default when it named none
  std::string_view response_model;  // as the provider reported it; empty on failure
  std::chrono::nanoseconds duration{0};
  token_usage usage;                // zero on failure
  // The failure: a model_errc name ("timeout", "rate_limited", ...), or
  // "_OTHER" for an exception that is not a model_error. Empty: success.
  std::string_view error_type;
};

// Receives every request metered_model makes. Called on the thread that
// completed the request, concurrently for concurrent requests; must not
// block and must not throw.
class model_call_observer {
 public:
  virtual ~model_call_observer() = default;
  virtual void on_model_call(const model_call& call) noexcept = 0;
};

class model_metrics final : public protocol::metrics_source {
 public:
  // `default_model`: the model a request that names none goes to.
  explicit model_metrics(std::string provider, std::string default_model = {})
      : provider_(std::move(provider)), default_model_(std::move(default_model)) {}

  // Reports every later request to `observer` too (null: to none).
  void observe_calls(std::shared_ptr<model_call_observer> observer);
  // Counts the call (as record_success/record_failure) and reports it.
  void record_call(const model_call& call) noexcept;
  const std::string& default_model() const noexcept { return default_model_; }

  void record_success(const chat_result& result) noexcept;
  void record_failure(model_errc code) noexcept;
  void record_retry() noexcept;
  // For http_options::retry.on_retry: counts every transport retry. The
  // metrics must outlive the client it is given to.
  std::function<void(const retry_event&)> retry_observer();

  struct counts {
    std::uint64_t ok = 0, failed = 0, retries = 0;
    std::uint64_t prompt_tokens = 0, completion_tokens = 0;
    std::map<std::string, std::uint64_t, std::less<>> errors;  // by model_errc name
  };
  counts snapshot() const;

  std::vector<protocol::metric_sample> collect() const override;

 private:
  const std::string provider_;
  const std::string default_model_;
  mutable std::mutex mutex_;
  counts counts_;
  std::shared_ptr<model_call_observer> call_observer_;
};

class metered_model final : public chat_model {
 public:
  metered_model(chat_model& inner, std::shared_ptr<model_metrics> metrics)
      : inner_(inner), metrics_(std::move(metrics)) {}

  boost::asio::awaitable<chat_result> complete(chat_request request) override;
  std::string_view provider() const noexcept override { return inner_.provider(); }
  model_capabilities capabilities() const noexcept override { return inner_.capabilities(); }

  const std::shared_ptr<model_metrics>& metrics() const noexcept { return metrics_; }

 private:
  chat_model& inner_;
  std::shared_ptr<model_metrics> metrics_;
};

}  // namespace switchboard::models
