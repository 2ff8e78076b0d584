#include "wire_common.hpp"

#include <switchboard/telemetry/trace_context.hpp>

#include <switchboard/net/redaction.hpp>

#include <boost/json/parse.hpp>

namespace switchboard::models::detail {

std::span<const net::http_header> with_trace(std::span<const net::http_header> base,
                                             const telemetry::span_context& trace, trace_headers& storage) {
  if (!trace.valid()) return base;
  storage.traceparent = telemetry::format_traceparent(trace);
  storage.headers.assign(base.begin(), base.end());
  storage.headers.push_back({telemetry::traceparent_header, storage.traceparent, false});
  if (!trace.trace_state.empty()) storage.headers.push_back({telemetry::tracestate_header, trace.trace_state, false});
  return storage.headers;
}

namespace json = boost::json;

std::string model_or_default(const std::string& request_model, const std::string& default_model,
                             std::string_view provider) {
  if (!request_model.empty()) return request_model;
  if (!default_model.empty()) return default_model;
  throw model_error(model_errc::not_configured,
                    std::string(provider) + ": no model named: set chat_request.model or the model's default "
                                            "model (--model, SWITCHBOARD_MODEL)");
}

boost::asio::awaitable<chat_result> failed_completion(std::exception_ptr error) {
  std::rethrow_exception(error);
  co_return chat_result{};  // not reached; makes this a coroutine, run when awaited
}

std::string schema_name_or_default(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out += ok ? c : '_';
    if (out.size() == 64) break;
  }
  return out.empty() ? "structured_output" : out;
}

model_error invalid_response(std::string_view provider, std::string_view what, std::string_view body,
                             std::span<const net::http_header> secrets) {
  return model_error(model_errc::invalid_response, std::string(provider) + ": unexpected response: " +
                                                       std::string(what) + " (body starts: '" +
                                                       net::excerpt(body, secrets, 120) + "')");
}

json::object parse_response_object(std::string_view body, std::string_view provider, json::storage_ptr storage,
                                   std::span<const net::http_header> secrets) {
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a UTF-8 byte order mark
  json::parse_options options;
  options.allow_invalid_utf8 = true;
  boost::system::error_code ec;
  auto value = json::parse(body, ec, std::move(storage), options);
  if (ec) throw invalid_response(provider, "the body is not JSON (" + ec.message() + ")", body, secrets);
  if (!value.is_object()) throw invalid_response(provider, "the body is not a JSON object", body, secrets);
  return std::move(value.as_object());
}

std::string string_field(const json::object& obj, std::string_view key) {
  const auto* v = obj.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::int64_t int_field(const json::object& obj, std::string_view key) {
  const auto* v = obj.if_contains(key);
  if (!v) return 0;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return 0;
}

model_error model_error_of(const net::net_error& error) {
  const auto code = [&] {
    switch (error.errc()) {
      case net::net_errc::connect_failed: return model_errc::connect_failed;
      case net::net_errc::connection_lost: return model_errc::connection_lost;
      case net::net_errc::tls_verification_failed: return model_errc::tls_verification_failed;
      case net::net_errc::timeout: return model_errc::timeout;
      case net::net_errc::cancelled: return model_errc::cancelled;
      case net::net_errc::http_status: return model_errc::http_status;
      case net::net_errc::response_too_large: return model_errc::response_too_large;
      case net::net_errc::invalid_response: return model_errc::invalid_response;
      case net::net_errc::invalid_options: return model_errc::not_configured;
    }
    return model_errc::connection_lost;
  }();
  return model_error(code, error.what(), error.http_status(), error.server_message(), error.retryable());
}

net::http_client make_http_client(http_options options, std::string provider) try {
  return net::http_client(std::move(options), std::move(provider));
} catch (const net::net_error& e) {
  throw model_error_of(e);
}

}  // namespace switchboard::models::detail
