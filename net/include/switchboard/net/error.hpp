// Errors of the network layer, wired into boost::system::error_code, and the
// exception that carries them out of http_client.
//
// Messages never contain secrets: every excerpt of a response, URL or header
// in what() is redacted for the request's secret headers and for
// credential-shaped text, and escaped for terminals (redaction.hpp).
// server_message() is the server's own error text, redacted but otherwise
// exact: escape it where it is shown.
//
// The layers above translate these into their own errors (models/model_error.hpp
// maps each code to the net_errc of the same name).
//
// Thread-safety: value types; the category is stateless.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <string_view>
#include <type_traits>

namespace switchboard::net {

enum class net_errc {
  connect_failed = 1,       // DNS, TCP connect or TLS handshake failed
  connection_lost,          // reset or closed mid-request, or a stream cut before its end
  tls_verification_failed,  // certificate or host name not trusted
  timeout,                  // a deadline passed
  cancelled,                // the caller cancelled
  http_status,              // the server answered with a non-2xx status, or an error object in a 2xx
  response_too_large,       // body over the configured cap
  invalid_response,         // 2xx, but not a JSON answer (an HTML page, an empty or compressed body, ...)
  invalid_options,          // a base URL that is not http(s), carries credentials, or a CA file that cannot be read
};

std::string_view to_string(net_errc code) noexcept;
const boost::system::error_category& net_category() noexcept;

inline boost::system::error_code make_error_code(net_errc code) noexcept {
  return {static_cast<int>(code), net_category()};
}

// Thrown by http_client. A body_stream may throw one with retryable() set to
// fail the attempt as a transient failure (see http_client.hpp).
class net_error : public boost::system::system_error {
 public:
  net_error(net_errc code, const std::string& message, int http_status = 0, std::string server_message = {},
            bool retryable = false, std::string reason = {})
      : boost::system::system_error(make_error_code(code), message),
        http_status_(http_status),
        server_message_(std::move(server_message)),
        reason_(std::move(reason)),
        retryable_(retryable) {}

  net_errc errc() const noexcept { return static_cast<net_errc>(code().value()); }
  // 0 if none. For an error object inside a 2xx ({"error": {...}}, as some
  // proxies send): the status its code names (e.g. 429), else the 2xx.
  int http_status() const noexcept { return http_status_; }
  const std::string& server_message() const noexcept { return server_message_; }
  // What went wrong without the "<provider>: <METHOD> <url>" that what()
  // starts with, for a caller that words its own message ("connect to
  // host:443 failed: Connection refused (after 3 attempts, the most
  // allowed)"). Redacted like what(); empty when the error was made without one.
  const std::string& reason() const noexcept { return reason_; }
  // The failure is transient: another attempt may succeed.
  bool retryable() const noexcept { return retryable_; }

 private:
  int http_status_;
  std::string server_message_;
  std::string reason_;
  bool retryable_;
};

}  // namespace switchboard::net

template <>
struct boost::system::is_error_code_enum<switchboard::net::net_errc> : std::true_type {};
