// traced_model: a chat_model decorator that records each request it passes
// on as an OpenTelemetry GenAI `chat {model}` span (semantic conventions
// v1.41, ADR 0030), of kind client, child of the request's trace context
// (chat_request::trace: the step's invoke_agent span), and hands the span's
// own context to the wrapped client, which sends it as `traceparent`. Put
// it directly around the provider's HTTP client, so that a re-ask of the
// structured ladder is a span of its own and a cache hit is none.
//
// Recorded: gen_ai.operation.name=chat, gen_ai.provider.name, request and
// response model, max_tokens / temperature / seed when set,
// gen_ai.usage.input_tokens / output_tokens, gen_ai.response.finish_reasons,
// server.address / server.port, switchboard.structured.rung, tool calls
// asked for (a count); on failure error.type (the model_errc name) and an
// error status. Never recorded: messages, answers, tool arguments, keys.
//
// Without a tracer (null: tracing off) complete() hands the request to the
// wrapped model as it is and returns its answer: no frame of its own, no
// allocation, one branch. The command line builds the chain before it knows
// whether tracing is on, and gives the tracer later (trace_with).
//
// Completion and cancellation: as the wrapped model. Lifetime: the wrapped
// model must outlive the decorator. Thread-safety: as the wrapped model;
// the tracer is called from any thread.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/telemetry/tracer.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace switchboard::models {

struct traced_model_options {
  std::string provider;        // gen_ai.provider.name: "openai", "anthropic", ...
  std::string default_model;   // named in the span when a request names none
  std::string server_address;  // server.address; "" leaves it out
  std::int64_t server_port = 0;  // server.port; 0 leaves it out
};

// The provider, model, host and port of an http(s) base URL, for
// traced_model_options ("https://api.openai.com/v1" -> api.openai.com, 443).
traced_model_options traced_options_for(std::string provider, std::string default_model, std::string_view base_url);

class traced_model final : public chat_model {
 public:
  traced_model(chat_model& inner, std::shared_ptr<telemetry::tracer> tracer, traced_model_options options)
      : inner_(inner), tracer_(std::move(tracer)), options_(std::move(options)) {}

  // Set-up time only, before the first complete(): not synchronized with it.
  void trace_with(std::shared_ptr<telemetry::tracer> tracer) noexcept { tracer_ = std::move(tracer); }
  bool traced() const noexcept { return tracer_ != nullptr; }

  // Not a coroutine: untraced, the wrapped model's awaitable itself.
  boost::asio::awaitable<chat_result> complete(chat_request request) override;
  std::string_view provider() const noexcept override { return inner_.provider(); }
  model_capabilities capabilities() const noexcept override { return inner_.capabilities(); }

 private:
  telemetry::span start(const chat_request& request) const;
  boost::asio::awaitable<chat_result> complete_traced(chat_request request);

  chat_model& inner_;
  std::shared_ptr<telemetry::tracer> tracer_;
  traced_model_options options_;
};

}  // namespace switchboard::models
