// The base URL of an HTTP client, parsed once at configuration. Internal.
//
// Thread-safety: a value type.
#pragma once

#include <string>

namespace switchboard::net {

struct endpoint_url {
  bool tls = false;
  std::string host;         // without brackets
  std::string port;
  std::string host_header;  // host[:port] as written
  std::string base_path;    // no trailing slash
  std::string display;      // scheme://host[:port]/path: no user info, no query, safe to log
  bool host_is_ip = false;
};

// Throws net_error(not_configured), naming `provider` and the URL (with
// any user information replaced by "[redacted]"), when `url` is not an
// http(s) URL with a host, or when it carries credentials (user:password@):
// those would be stored and printed with the URL, so the key goes in the
// provider's API key option instead.
endpoint_url parse_base_url(const std::string& url, const std::string& provider);

}  // namespace switchboard::net
