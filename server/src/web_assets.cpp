#include "web_assets.hpp"

#include <string>

namespace switchboard::server {

namespace {

std::string_view content_type_of(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

// Scripts and styles from these files only (no inline script or style, no
// eval), requests to this server only, no framing.
constexpr std::string_view content_security_policy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

}  // namespace

std::optional<net::server_response> web_page(const net::server_request& request) {
  if (request.method != "GET") return std::nullopt;
  std::string_view name;
  if (request.path == "/") name = "index.html";
  else if (request.path.starts_with("/ui/")) name = std::string_view(request.path).substr(4);
  else return std::nullopt;
  for (const auto& file : web_files()) {
    if (file.name != name) continue;
    net::server_response r;
    r.headers = {{"Content-Type", std::string(content_type_of(name))},
                 {"Content-Security-Policy", std::string(content_security_policy)},
                 {"X-Content-Type-Options", "nosniff"},
                 {"Referrer-Policy", "no-referrer"},
                 {"Cache-Control", "no-cache"}};
    r.body = std::string(file.bytes);
    return r;
  }
  return std::nullopt;  // an unknown /ui/ file: the API answers it (401 or 404)
}

}  // namespace switchboard::server
