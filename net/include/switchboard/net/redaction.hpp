// The one place where text from outside — a response body, a URL, a header
// value — is made fit to appear in an error message or a log line: secrets
// replaced by "[redacted]", length capped, control characters escaped (by
// the project's one escaping function, protocol/terminal_text.hpp).
// Every excerpt the model layer quotes goes through excerpt() (and every
// whole message through redact()), so a server that echoes the request's
// headers back cannot make the API key reach a terminal or a log.
//
// Thread-safety: pure functions.
#pragma once

#include <switchboard/net/http_header.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace switchboard::net {

// The marker that replaces a secret.
inline constexpr std::string_view redacted_marker = "[redacted]";

// Secret values shorter than this are not scrubbed: replacing every "abc"
// would garble messages, and such a value is no credential worth the name.
inline constexpr std::size_t min_secret_size = 4;

// `text` with these replaced by "[redacted]":
// - the value of every secret header in `headers`, and its last word (the
//   key in "Bearer <key>");
// - whatever is shaped like a credential even when the key is not known
//   here: the token after "Bearer "/"Basic " (12+ characters with a digit),
//   the value of an authorization, api-key, x-api-key, api_key, apikey,
//   access_token or password field ("name: value", "name=value",
//   "\"name\": \"value\""), "sk-" keys, and user:password@ in URLs.
std::string redact(std::string_view text, std::span<const http_header> headers = {});

// A quotable piece of `text`: redact()ed, cut at a character boundary to at
// most `max_bytes` bytes of it ("..." included when cut), then escaped by
// protocol::escape_for_terminal (controls, bidi overrides and bytes that are
// not UTF-8 become \x1b-style escapes), so that nothing from outside can
// drive the terminal or forge a log line where it lands.
std::string excerpt(std::string_view text, std::span<const http_header> headers = {},
                    std::size_t max_bytes = 120);

// True when `headers` carries a secret of at least `min_size` bytes that
// occurs in `text` (a server echoing the key back).
bool contains_secret(std::string_view text, std::span<const http_header> headers, std::size_t min_size);

// `url` with the user information of its authority ("user:password@")
// removed outright (not marked), for when a URL is shown as an address.
std::string without_user_info(std::string_view url);

}  // namespace switchboard::net
