// One request header as the model clients hand it to the HTTP transport.
// Internal.
#pragma once

#include <string_view>

namespace switchboard::net {

// Request headers are never logged. A secret header's value (and its last
// word, the key in "Bearer <key>") is scrubbed from every error message and
// log line that quotes a response, a URL or a header (redaction.hpp), should
// a server echo it back.
struct http_header {
  std::string_view name;
  std::string_view value;
  bool secret = false;
};

}  // namespace switchboard::net
