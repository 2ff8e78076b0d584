// A stable identity for a chat request: the canonical serialization and its
// SHA-256, used as the key of the caching model and of record/replay files.
//
// The canonical form is JSON with a fixed member order at the top level and
// object keys sorted (bytewise) everywhere inside values the user supplied
// (the response-format schema), serialized by Boost.JSON. It covers the
// model name, prompt version, every message (role and content), temperature,
// max tokens, seed, stop sequences and the response format including its
// schema; with tool calling, also the tools (name, description, parameter
// schema, strict), the tool choice, parallel_tool_calls, and each message's
// tool calls (id, name, arguments text), tool call id and error flag. The
// tool members appear only when set, so requests without tools hash as
// they did before tools existed (recordings stay valid). It starts with a format tag ("switchboard.chat_request/1") so a
// future change of the scheme cannot silently collide with old recordings.
// The same request gives the same hash in every process and on every
// platform.
//
// Pure functions; thread-safe.
#pragma once

#include <switchboard/models/chat_model.hpp>

#include <boost/json/value.hpp>

#include <string>

namespace switchboard::models {

// The canonical form as a JSON value (for recordings and diagnostics).
boost::json::value canonical_request(const chat_request& request);

// Lower-case hex SHA-256 of the serialized canonical form (64 characters).
std::string request_hash(const chat_request& request);

// A short, readable one-line description for error messages: model, prompt
// version, message count, response format and the start of the last user
// message. Never contains credentials (requests carry none).
std::string request_summary(const chat_request& request);

}  // namespace switchboard::models
