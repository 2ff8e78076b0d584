// The page for the people in the loop (server/web/, docs/serving.md "The
// page"): its files are compiled into the server (server/embed_web.cmake),
// served at `/` and `/ui/<file>` with a Content-Security-Policy that allows
// no inline script and no other origin.
#pragma once

#include <switchboard/net/http_server.hpp>

#include <optional>
#include <span>
#include <string_view>

namespace switchboard::server {

struct web_file {
  std::string_view name;   // "app.js"
  std::string_view bytes;
};

// The files of server/web/ (generated at build time).
std::span<const web_file> web_files();

// The answer to GET `/` (index.html) and GET `/ui/<file>`; nullopt for every
// other request, which is the API's. These paths need no token: the page
// must load to ask for it. Nothing else is exempt.
std::optional<net::server_response> web_page(const net::server_request& request);

}  // namespace switchboard::server
