// The options of the commands that load a workflow's agents (run, resume,
// agents, tools): --schemas, --plugin, --plugin-path, --prompts, --mcp, read
// into the host library's loader settings (switchboard/host/workflow_loader.hpp
// says what each one adds and in which order), and written back as
// arguments for a command printed for later.
//
// Thread-safety: plain functions.
#pragma once

#include <switchboard/host/workflow_loader.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::cli {

// Takes the option at args[i] (and its value, advancing i) into `settings`,
// paths made absolute. False when args[i] is none of them; throws
// usage_error when its value is missing or bad.
bool take_loader_option(std::span<const std::string> args, std::size_t& i, host::loader_settings& settings);

// --mcp's value NAME=SPEC as a server configuration; usage_error when it
// is not one.
mcp::server_config parse_mcp_option(const std::string& value);

// The options that give `settings`, as command line words that
// take_loader_option reads back to the same settings.
std::vector<std::string> loader_arguments(const host::loader_settings& settings);

// The usage lines of those options.
inline constexpr std::string_view loader_options_usage =
    "  --schemas DIR         JSON Schemas <name>@<version>.json (repeatable; also SWITCHBOARD_SCHEMA_PATH)\n"
    "  --plugin FILE         a plugin shared library (repeatable; also SWITCHBOARD_PLUGIN_PATH)\n"
    "  --plugin-path DIR     where plugins named in a workflow file are looked for (repeatable)\n"
    "  --prompts DIR         prompt files <name>.v<version>.json (repeatable; also SWITCHBOARD_PROMPT_PATH)\n"
    "  --mcp NAME=SPEC       an MCP server's tools as mcp:NAME/TOOL; SPEC is stdio:COMMAND ARG... or an\n"
    "                        http(s):// URL (repeatable; see docs/mcp.md)\n";

}  // namespace switchboard::cli
