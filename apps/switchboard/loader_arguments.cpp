// The loader's options (see loader_arguments.hpp).
#include "loader_arguments.hpp"

#include "command.hpp"

#include <stdexcept>

namespace switchboard::cli {

mcp::server_config parse_mcp_option(const std::string& value) {
  const auto eq = value.find('=');
  if (eq == std::string::npos) throw usage_error("--mcp expects NAME=SPEC, got '" + value + "'");
  try {
    return mcp::parse_spec(value.substr(0, eq), std::string_view(value).substr(eq + 1));
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("--mcp: ") + e.what());
  }
}

bool take_loader_option(std::span<const std::string> args, std::size_t& i, host::loader_settings& settings) {
  const std::string& a = args[i];
  if (a == "--schemas") settings.schema_dirs.push_back(absolute_path(option_value(args, i)));
  else if (a == "--plugin") settings.plugins.push_back(absolute_path(option_value(args, i)));
  else if (a == "--plugin-path") settings.plugin_dirs.push_back(absolute_path(option_value(args, i)));
  else if (a == "--prompts") settings.prompt_dirs.push_back(absolute_path(option_value(args, i)));
  else if (a == "--mcp") settings.mcp_servers.push_back(parse_mcp_option(option_value(args, i)));
  else return false;
  return true;
}

namespace {

// A server as --mcp gives it: parse_spec makes either a command (the words
// of "stdio:COMMAND ARG...") or a URL, nothing else.
std::string mcp_argument(const mcp::server_config& server) {
  std::string spec = server.name + "=";
  if (!server.is_stdio()) return spec + server.url;
  spec += "stdio:";
  for (std::size_t k = 0; k < server.command.size(); ++k) spec += (k ? " " : "") + server.command[k];
  return spec;
}

}  // namespace

std::vector<std::string> loader_arguments(const host::loader_settings& settings) {
  std::vector<std::string> words;
  const auto add = [&](std::string_view option, std::string value) {
    words.emplace_back(option);
    words.push_back(std::move(value));
  };
  for (const auto& p : settings.schema_dirs) add("--schemas", p.string());
  for (const auto& p : settings.plugins) add("--plugin", p.string());
  for (const auto& p : settings.plugin_dirs) add("--plugin-path", p.string());
  for (const auto& p : settings.prompt_dirs) add("--prompts", p.string());
  for (const auto& server : settings.mcp_servers) add("--mcp", mcp_argument(server));
  return words;
}

}  // namespace switchboard::cli
