// How the loopback server's replies look on the wire (internal to the
// test support library): the body of a scripted answer in the format the
// request's path asks for (OpenAI /chat/completions or Anthropic
// /messages), a streamed answer as server-sent events with the offsets
// where each event ends, the response head, and chunked transfer encoding.
#pragma once

#include <switchboard/testing/loopback_model_server.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchboard::testing::detail {

// The streamed answer for `a` to a request with `target` and `body`, and
// where each event ends (the split and stall options cut at those).
std::pair<std::string, std::vector<std::size_t>> render_stream(const server_action& a, std::string_view target,
                                                               std::string_view body, std::size_t n);
// The whole body answering request number `n` (1-based) with `a`.
std::string render_body(const server_action& a, const recorded_request& req, std::size_t n);
std::string render_head(const server_action& a, int status, bool keep_alive, std::size_t length, bool chunked);
// `body` in chunked transfer encoding (several chunks and the last one).
std::string chunk_encode(std::string_view body);
// One chunk holding `piece`.
std::string chunk_of(std::string_view piece);

}  // namespace switchboard::testing::detail
