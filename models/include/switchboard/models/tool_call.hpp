// The model layer's vocabulary for tool calling (docs/models.md, "Tool
// calls"): the tools a chat_request offers, how the model may choose among
// them, and the calls a model answers with. Both HTTP clients map these to
// their wire format (OpenAI-compatible `tools` / `tool_choice` /
// `tool_calls` / `role: tool`; Anthropic `tools` / `tool_choice` /
// `tool_use` / `tool_result`), and the scripted, replay and caching models
// carry them unchanged.
//
// This layer only transports tool calls: it never runs a tool, and never
// parses or validates a call's arguments against the tool's schema. A call
// that comes back is checked for its shape only (an id, a valid name, at
// most max_tool_arguments_bytes of arguments, at most
// max_tool_calls_per_turn calls; protocol/limits.hpp); anything else is
// model_error(invalid_response) naming what was wrong.
//
// Thread-safety: value types; is_valid_tool_name is a pure function.
#pragma once

#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace switchboard::models {

// A tool the model may call.
struct tool_definition {
  std::string name;          // [A-Za-z0-9_.:/-]{1,128}; providers may accept less (OpenAI: [A-Za-z0-9_-]{1,64})
  std::string description;   // what the tool does, for the model; empty: none sent
  // JSON Schema of the arguments object. null: "any object" (OpenAI: no
  // `parameters`; Anthropic: {"type": "object"}, its input_schema is required).
  boost::json::value parameters;
  // OpenAI: `strict: true`, the provider holds the arguments to the schema
  // (which must then follow OpenAI's strict subset). Not sent to Anthropic.
  bool strict = false;
};

// How the model may use the offered tools. Sent only with a non-empty
// `tools`.
struct tool_choice {
  enum class kind {
    auto_,     // the model decides (the providers' default)
    none,      // no tool call; answer in text
    required,  // at least one tool call (OpenAI "required", Anthropic "any")
    named,     // exactly the tool `name`
  };
  kind type = kind::auto_;
  std::string name;  // named: the tool

  static tool_choice automatic() { return {}; }
  static tool_choice no_tools() { return {kind::none, {}}; }
  static tool_choice any_tool() { return {kind::required, {}}; }
  static tool_choice named_tool(std::string tool) { return {kind::named, std::move(tool)}; }
};

// One call the model asked for, in an assistant turn (chat_result::tool_calls,
// chat_message::tool_calls).
struct tool_call {
  std::string id;    // the provider's id; a tool result answers it (chat_message::tool_call_id)
  std::string name;  // the tool
  // The arguments as the JSON text the model sent (OpenAI's string as is;
  // Anthropic's `input` object serialized). Untrusted: it may be malformed
  // JSON or not match the tool's schema. Parsing and validating it is the
  // caller's job (the tool loop).
  std::string arguments;

  friend bool operator==(const tool_call&, const tool_call&) = default;
};

std::string_view to_string(tool_choice::kind kind) noexcept;  // "auto", "none", "required", "named"

// True when `name` matches [A-Za-z0-9_.:/-]{1,128}: what this layer accepts
// as a tool's name in a model's answer.
bool is_valid_tool_name(std::string_view name) noexcept;

}  // namespace switchboard::models
