// What both wire formats share about tool calls: the shape checks every
// call in a model's answer passes (protocol/limits.hpp), and the choice
// words. Internal.
#pragma once

#include <switchboard/net/http_header.hpp>

#include <switchboard/models/chat_model.hpp>

#include <cstddef>
#include <span>
#include <string_view>

namespace switchboard::models::detail {

// Throws model_error(invalid_response) naming the provider and what is
// wrong when an answer holds more than max_tool_calls_per_turn calls.
// `body` and `secrets` as for wire_common's invalid_response.
void check_tool_call_count(std::string_view provider, std::size_t count, std::string_view body,
                           std::span<const net::http_header> secrets);

// Throws model_error(invalid_response) naming the provider, the call's
// index (and id) and what is wrong: an empty or over-long id, a name that
// is not [A-Za-z0-9_.:/-]{1,128}, arguments over max_tool_arguments_bytes.
void check_tool_call(std::string_view provider, std::size_t index, const tool_call& call, std::string_view body,
                     std::span<const net::http_header> secrets);

// "tool call 1 ('call_x')": how errors name a call.
std::string describe_tool_call(std::size_t index, std::string_view id);

}  // namespace switchboard::models::detail
