// The limits every untrusted JSON document is held to, in one place: a
// workflow's input, a model's answer, an agent's data, workflow, prompt and
// schema files, and the checkpoints built from them. A value accepted where
// it enters can always be stored and read back: checkpoints allow the same
// depth plus the few levels a stored state wraps values in.
//
// Numbers must be finite: JSON has no Infinity or NaN, so a value such as
// 1e999 (which parses to infinity) is refused where it enters, naming where
// it was, instead of being written as something no reader accepts.
//
// Thread-safety: plain functions of their arguments.
#pragma once

#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace switchboard::protocol {

// Nesting of arrays and objects in any document that enters from outside.
inline constexpr std::size_t max_json_depth = 64;
// A stored state wraps a value in at most 4 levels (journal record, list,
// envelope, data): the checkpoint reader allows a margin over that.
inline constexpr std::size_t max_checkpoint_depth = max_json_depth + 8;

// Tool calls in one model answer (docs/models.md, "Tool calls"). A model may
// call several tools in one turn; more than this is a broken or hostile
// answer, refused whole rather than cut.
inline constexpr std::size_t max_tool_calls_per_turn = 64;
// The arguments of one tool call, as the JSON text the model sent.
inline constexpr std::size_t max_tool_arguments_bytes = std::size_t{1} << 20;  // 1 MiB
// A tool's name: [A-Za-z0-9_.:/-]{1,128} (room for MCP's server/tool names).
inline constexpr std::size_t max_tool_name_length = 128;
// A tool call's id, as the provider chose it ("call_...", "toolu_...").
inline constexpr std::size_t max_tool_call_id_length = 256;

// Parse options for documents from outside (max_json_depth).
boost::json::parse_options untrusted_parse_options() noexcept;
// Parse options for checkpoints (max_checkpoint_depth).
boost::json::parse_options checkpoint_parse_options() noexcept;

// Why `value` may not enter, or nullopt when it may: "number at /a/0 is not
// finite", "nesting deeper than 64 levels at /a/b/...". Iterative: a hostile
// value cannot exhaust the stack.
std::optional<std::string> check_untrusted_value(const boost::json::value& value,
                                                 std::size_t max_depth = max_json_depth);
// The same for an object (an envelope's data), without copying it into a value.
std::optional<std::string> check_untrusted_value(const boost::json::object& value,
                                                 std::size_t max_depth = max_json_depth);

}  // namespace switchboard::protocol
