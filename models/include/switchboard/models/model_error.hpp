// Errors of the model layer, wired into boost::system::error_code, and the
// exception that carries them out of chat_model::complete().
//
// Messages never contain API keys: every excerpt of a response, URL or
// header in what() is redacted for the request's secret headers and for
// credential-shaped text, and escaped for terminals (controls shown as
// \x1b-style escapes). provider_message() is the provider's own text,
// redacted but otherwise exact: escape it where it is shown.
//
// Thread-safety: value types; the category is stateless.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <string_view>
#include <type_traits>

namespace switchboard::models {

enum class model_errc {
  connect_failed = 1,        // DNS, TCP connect or TLS handshake failed
  connection_lost,           // reset or closed mid-request
  tls_verification_failed,   // certificate or host name not trusted
  timeout,                   // a deadline passed
  cancelled,                 // the caller cancelled
  http_status,               // the server answered with a non-2xx status, or an error object in a 2xx
  response_too_large,        // body over the configured cap
  invalid_response,          // 2xx but not the provider's wire format
  structured_output_failed,  // no attempt produced a value valid against the schema
  token_budget_exhausted,    // re-asks stopped by the token budget
  not_configured,            // no base URL / key / model where one is needed
  unknown_request,           // a replay model has no recording for the request
  script_exhausted,          // a scripted model has no response left
};

std::string_view to_string(model_errc code) noexcept;
const boost::system::error_category& model_category() noexcept;
inline boost::system::error_code make_error_code(model_errc code) noexcept {
  return {static_cast<int>(code), model_category()};
}

// Thrown by chat_model::complete and complete_structured.
class model_error : public boost::system::system_error {
 public:
  model_error(model_errc code, const std::string& message, int http_status = 0,
              std::string provider_message = {}, bool retryable = false)
      : boost::system::system_error(make_error_code(code), message),
        http_status_(http_status),
        provider_message_(std::move(provider_message)),
        retryable_(retryable) {}

  model_errc errc() const noexcept { return static_cast<model_errc>(code().value()); }
  // 0 if none. For an error object inside a 2xx ({"error": {...}}, as some
  // proxies send): the status its code names (e.g. 429), else the 2xx.
  int http_status() const noexcept { return http_status_; }
  const std::string& provider_message() const noexcept { return provider_message_; }
  bool retryable() const noexcept { return retryable_; }

 private:
  int http_status_;
  std::string provider_message_;
  bool retryable_;
};

}  // namespace switchboard::models

template <>
struct boost::system::is_error_code_enum<switchboard::models::model_errc> : std::true_type {};
