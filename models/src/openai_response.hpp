// Reads an OpenAI chat-completions response body into a chat_result. The
// body is parsed as a stream of events (Boost.JSON's basic_parser) and only
// the fields a chat_result needs are kept: building the whole document as a
// DOM first cost more than the rest of reading a response. Internal.
#pragma once

#include <switchboard/models/chat_model.hpp>

#include <span>
#include <string_view>

#include <switchboard/net/http_header.hpp>

namespace switchboard::models::detail {

// Throws model_error(invalid_response) naming what is wrong: a body that is
// not JSON, not an object, without choices[0] or choices[0].message. Sets
// text (a string content, or the text parts of a content list joined),
// finish_reason and stop (refusal when message.refusal is set, tool_calls
// when the message calls tools), refusal, reasoning (reasoning_content or
// reasoning), model and usage; not latency or raw_body. tool_calls: the
// calls of choices[0].message.tool_calls, each checked (tool_wire.hpp: an
// id, a valid name, string arguments within the limits, at most
// max_tool_calls_per_turn) or model_error(invalid_response) naming the call;
// with calls, a "stop" finish becomes stop_reason::tool_calls. A refusal or a
// truncated answer is a result, not an error: the structured ladder decides.
// `secrets`: the request's headers, so an excerpt of the body in an error is
// redacted for them (wire_common's invalid_response).
chat_result read_openai_completion(std::string_view body, std::span<const net::http_header> secrets = {});

}  // namespace switchboard::models::detail
