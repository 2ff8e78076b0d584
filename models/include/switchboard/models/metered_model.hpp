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
// Completion and cancellation: as the wrapped model. Lifetime: the wrapped
// model must outlive the decorator; the metrics are shared.
// Thread-safety: complete() and every model_metrics member may be called
// concurrently from any thread (one mutex, never held across a call).
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/http_options.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/protocol/metrics.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace switchboard::models {

class model_metrics final : public protocol::metrics_source {
 public:
  explicit model_metrics(std::string provider) : provider_(std::move(provider)) {}

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
  mutable std::mutex mutex_;
  counts counts_;
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
