#include <switchboard/models/traced_model.hpp>

#include <switchboard/models/model_error.hpp>

#include <charconv>
#include <exception>
#include <string_view>

namespace switchboard::models {
namespace {

// "http://host:port/path" -> host and port (the scheme's when none is
// given); a URL that is not http(s) names no server.
void read_server(std::string_view url, traced_model_options& out) {
  std::int64_t port = 0;
  if (url.starts_with("https://")) {
    url.remove_prefix(8);
    port = 443;
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
    port = 80;
  } else {
    return;
  }
  std::string_view authority = url.substr(0, url.find_first_of("/?#"));
  std::string_view host = authority;
  if (authority.starts_with('[')) {  // [::1]:8080
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return;
    host = authority.substr(1, close - 1);
    authority.remove_prefix(close + 1);
  } else {
    const auto colon = authority.rfind(':');
    host = authority.substr(0, colon);
    authority = colon == std::string_view::npos ? std::string_view{} : authority.substr(colon);
  }
  if (authority.starts_with(':')) {
    const auto digits = authority.substr(1);
    std::int64_t given = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), given);
    if (error != std::errc() || end != digits.data() + digits.size() || given <= 0 || given > 65535) return;
    port = given;
  }
  if (host.empty()) return;
  out.server_address = std::string(host);
  out.server_port = port;
}

std::string_view rung_name(output_mode mode) { return to_string(mode); }

void record_answer(telemetry::span& span, const chat_result& result) {
  if (!span.is_recording()) return;
  if (!result.model.empty()) span.set_attribute("gen_ai.response.model", result.model);
  span.set_attribute("gen_ai.usage.input_tokens", result.usage.prompt_tokens);
  span.set_attribute("gen_ai.usage.output_tokens", result.usage.completion_tokens);
  if (!result.finish_reason.empty()) {
    const std::string reasons[] = {result.finish_reason};
    span.set_attribute("gen_ai.response.finish_reasons", std::span<const std::string>(reasons));
  }
  span.set_attribute("switchboard.stop_reason", to_string(stop_of(result)));
  if (!result.tool_calls.empty())
    span.set_attribute("switchboard.tool_calls", static_cast<std::int64_t>(result.tool_calls.size()));
}

void record_failure(telemetry::span& span, std::string_view type, const char* message) {
  if (!span.is_recording()) return;
  span.set_attribute("error.type", type);
  span.set_status(telemetry::status_code::error, message);
}

}  // namespace

traced_model_options traced_options_for(std::string provider, std::string default_model, std::string_view base_url) {
  traced_model_options out;
  out.provider = std::move(provider);
  out.default_model = std::move(default_model);
  read_server(base_url, out);
  return out;
}

telemetry::span traced_model::start(const chat_request& request) const {
  const std::string_view model = request.model.empty() ? std::string_view(options_.default_model) : request.model;
  std::string name = "chat";
  if (!model.empty()) name.append(" ").append(model);
  telemetry::span_options options;
  options.kind = telemetry::span_kind::client;
  options.parent = request.trace.valid() ? &request.trace : nullptr;
  telemetry::span span = tracer_->start_span(name, options);
  if (!span.is_recording()) return span;
  span.set_attribute("gen_ai.operation.name", "chat")
      .set_attribute("gen_ai.provider.name", options_.provider.empty() ? inner_.provider() : options_.provider);
  if (!model.empty()) span.set_attribute("gen_ai.request.model", model);
  if (request.max_tokens) span.set_attribute("gen_ai.request.max_tokens", *request.max_tokens);
  if (request.temperature) span.set_attribute("gen_ai.request.temperature", *request.temperature);
  if (request.seed) span.set_attribute("gen_ai.request.seed", *request.seed);
  if (!options_.server_address.empty()) span.set_attribute("server.address", options_.server_address);
  if (options_.server_port > 0) span.set_attribute("server.port", options_.server_port);
  if (request.structured_rung) span.set_attribute("switchboard.structured.rung", rung_name(*request.structured_rung));
  if (!request.prompt_version.empty()) span.set_attribute("switchboard.prompt.version", request.prompt_version);
  if (!request.tools.empty()) span.set_attribute("switchboard.tools.offered", static_cast<std::int64_t>(request.tools.size()));
  if (request.stream != nullptr) span.set_attribute("switchboard.streamed", true);
  return span;
}

boost::asio::awaitable<chat_result> traced_model::complete(chat_request request) {
  if (!tracer_) return inner_.complete(std::move(request));
  return complete_traced(std::move(request));
}

boost::asio::awaitable<chat_result> traced_model::complete_traced(chat_request request) {
  telemetry::span span = start(request);
  telemetry::span* const keep = request.chat_span;
  request.chat_span = nullptr;  // the slot is this span's, not the wrapped model's
  // The provider's server sees this request's own span as its parent.
  if (span.context().valid()) request.trace = span.context();
  chat_result result;
  try {
    auto answer = inner_.complete(std::move(request));
    result = co_await std::move(answer);
  } catch (const model_error& e) {
    // An error answer is named by its status, as the HTTP conventions do;
    // anything else by the model error's code.
    const std::string type = e.errc() == model_errc::http_status && e.http_status() > 0
                                 ? std::to_string(e.http_status())
                                 : std::string(to_string(e.errc()));
    record_failure(span, type, e.what());
    throw;
  } catch (const std::exception& e) {
    record_failure(span, "_OTHER", e.what());
    throw;
  }
  record_answer(span, result);
  if (keep != nullptr) {
    *keep = std::move(span);  // the caller adds the parser stage and ends it
  } else {
    span.end();
  }
  co_return result;
}

}  // namespace switchboard::models
