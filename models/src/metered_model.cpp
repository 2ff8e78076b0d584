#include <switchboard/models/metered_model.hpp>

#include <exception>

namespace switchboard::models {

void model_metrics::record_success(const chat_result& result) noexcept {
  std::lock_guard lock(mutex_);
  ++counts_.ok;
  // Providers report usage as non-negative; a negative count is the
  // server's mistake and adds nothing.
  if (result.usage.prompt_tokens > 0) counts_.prompt_tokens += static_cast<std::uint64_t>(result.usage.prompt_tokens);
  if (result.usage.completion_tokens > 0)
    counts_.completion_tokens += static_cast<std::uint64_t>(result.usage.completion_tokens);
}

void model_metrics::record_failure(model_errc code) noexcept {
  try {
    std::lock_guard lock(mutex_);
    ++counts_.failed;
    ++counts_.errors[std::string(to_string(code))];
  } catch (...) {
    // Out of memory for a map node: the failure is still counted above.
  }
}

void model_metrics::record_retry() noexcept {
  std::lock_guard lock(mutex_);
  ++counts_.retries;
}

std::function<void(const retry_event&)> model_metrics::retry_observer() {
  return [this](const retry_event&) { record_retry(); };
}

model_metrics::counts model_metrics::snapshot() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

std::vector<protocol::metric_sample> model_metrics::collect() const {
  const counts c = snapshot();
  using protocol::metric_sample;
  std::vector<metric_sample> out;
  const auto add = [&](std::string name, std::string label, std::string value, std::uint64_t n) {
    metric_sample s;
    s.name = std::move(name);
    s.labels = {{"provider", provider_}};
    if (!label.empty()) s.labels.emplace(std::move(label), std::move(value));
    s.value = static_cast<double>(n);
    out.push_back(std::move(s));
  };
  add("switchboard_model_requests_total", "outcome", "ok", c.ok);
  add("switchboard_model_requests_total", "outcome", "error", c.failed);
  for (const auto& [code, n] : c.errors) add("switchboard_model_errors_total", "code", code, n);
  add("switchboard_model_retries_total", "", "", c.retries);
  add("switchboard_model_tokens_total", "kind", "prompt", c.prompt_tokens);
  add("switchboard_model_tokens_total", "kind", "completion", c.completion_tokens);
  return out;
}

void model_metrics::observe_calls(std::shared_ptr<model_call_observer> observer) {
  std::lock_guard lock(mutex_);
  call_observer_ = std::move(observer);
}

void model_metrics::record_call(const model_call& call) noexcept {
  std::shared_ptr<model_call_observer> observer;
  {
    std::lock_guard lock(mutex_);
    observer = call_observer_;
  }
  if (observer) observer->on_model_call(call);
}

boost::asio::awaitable<chat_result> metered_model::complete(chat_request request) {
  const auto started = std::chrono::steady_clock::now();
  // The request's model, kept: the request is moved into the call.
  const std::string request_model = request.model.empty() ? metrics_->default_model() : request.model;
  model_call call;
  call.provider = inner_.provider();
  call.request_model = request_model;
  std::string error_type;
  std::exception_ptr failure;
  try {
    chat_result result = co_await inner_.complete(std::move(request));
    metrics_->record_success(result);
    call.duration = std::chrono::steady_clock::now() - started;
    call.response_model = result.model;
    call.usage = result.usage;
    metrics_->record_call(call);
    co_return result;
  } catch (const model_error& e) {
    metrics_->record_failure(e.errc());
    error_type = to_string(e.errc());
    failure = std::current_exception();
  } catch (...) {
    error_type = "_OTHER";
    failure = std::current_exception();
  }
  // Reported here, outside the handlers: the exception is rethrown below.
  call.duration = std::chrono::steady_clock::now() - started;
  call.error_type = error_type;
  metrics_->record_call(call);
  std::rethrow_exception(failure);
}

}  // namespace switchboard::models
