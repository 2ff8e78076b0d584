// switchboard tools WORKFLOW — lists the tools a workflow's agents may call
// (its plugins', its MCP servers'), with origin, flags and arguments.
// switchboard tools --mcp SPEC — lists an MCP server's tools (name,
// description, a summary of the argument schema, the flags the annotations
// give), or calls one with --call NAME --args JSON and prints the result.
// SPEC is stdio:COMMAND ARG... (split on whitespace, no quoting) or an
// http(s):// URL. Everything a plugin or server sends is escaped before it
// reaches the terminal.
#include "command.hpp"
#include "loader_arguments.hpp"
#include "terminal_output.hpp"

#include <switchboard/host/model_options.hpp>
#include <switchboard/host/workflow_loader.hpp>

#include <switchboard/orchestrator/workflow_file.hpp>

#include <switchboard/mcp/mcp_tool.hpp>
#include <switchboard/protocol/limits.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <iostream>
#include <optional>
#include <set>

namespace {

namespace sb = switchboard;
namespace sbm = switchboard::mcp;
namespace json = boost::json;

constexpr std::string_view usage_text =
    "usage: switchboard tools WORKFLOW [--schemas DIR] [--plugin FILE] [--plugin-path DIR] [--prompts DIR]\n"
    "                        [--mcp NAME=SPEC] [--json]\n"
    "       switchboard tools --mcp SPEC [--json] [--timeout SECONDS]\n"
    "       switchboard tools --mcp SPEC --call NAME [--args JSON] [--json] [--timeout SECONDS]\n"
    "\n"
    "Lists the tools WORKFLOW's agents may call (from its plugins and MCP servers), with where\n"
    "each comes from, whether a call waits for the user's approval and its arguments.\n"
    "Lists the tools of the MCP server SPEC, or calls one of them and prints its result.\n"
    "SPEC is stdio:COMMAND ARG... (the server is started as a child process; the rest is\n"
    "split on whitespace, without quoting) or an http:// or https:// URL (Streamable HTTP).\n"
    "\n"
    "  --mcp SPEC            the server\n"
    "  --call NAME           call the tool NAME (as the server names it, without mcp:...)\n"
    "  --args JSON           its arguments, a JSON object (default {})\n"
    "  --json                print one JSON document instead of text\n"
    "  --timeout SECONDS     the deadline of each request (default 60)\n"
    "\n"
    "Exit status: 0 listed or called, 1 the server failed or the tool reported an error,\n"
    "2 usage error.\n";

struct options {
  std::string spec;
  std::optional<std::string> call;
  json::value arguments = json::object{};
  bool json_output = false;
  std::chrono::milliseconds timeout{60'000};
};

options parse(std::span<const std::string> args) {
  options out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--mcp") out.spec = sb::cli::option_value(args, i);
    else if (a == "--call") out.call = sb::cli::option_value(args, i);
    else if (a == "--args") {
      boost::system::error_code ec;
      out.arguments = json::parse(sb::cli::option_value(args, i), ec, {}, sb::protocol::untrusted_parse_options());
      if (ec || !out.arguments.is_object()) throw sb::cli::usage_error("--args must be a JSON object");
    } else if (a == "--json") out.json_output = true;
    else if (a == "--timeout") {
      const auto& v = sb::cli::option_value(args, i);
      std::size_t used = 0;
      double seconds = 0;
      try {
        seconds = std::stod(v, &used);
      } catch (const std::exception&) {
      }
      if (used != v.size() || !(seconds > 0 && seconds <= 3600)) throw sb::cli::usage_error("--timeout expects seconds (0 < s <= 3600)");
      out.timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    } else throw sb::cli::usage_error("unexpected argument '" + a + "'");
  }
  if (out.spec.empty()) throw sb::cli::usage_error("--mcp SPEC is required");
  if (!out.call && out.arguments != json::value(json::object{})) throw sb::cli::usage_error("--args needs --call");
  return out;
}

// "a: number*, b: string" from an object schema's properties (* required).
std::string schema_summary(const json::object& schema) {
  const auto* props = schema.if_contains("properties");
  if (!props || !props->is_object() || props->get_object().empty()) return "no arguments";
  const auto* required = schema.if_contains("required");
  std::string out;
  for (const auto& [name, prop] : props->get_object()) {
    if (!out.empty()) out += ", ";
    out += std::string(name);
    const auto* type = prop.is_object() ? prop.get_object().if_contains("type") : nullptr;
    if (type) out += ": " + (type->is_string() ? std::string(type->get_string()) : json::serialize(*type));
    if (required && required->is_array() && std::ranges::find(required->get_array(), json::value(name)) != required->get_array().end())
      out += "*";
  }
  return out;
}

int list(sbm::server_host& host, const std::shared_ptr<sbm::client>& client, bool json_output) {
  const auto tools = host.run(client->list_tools());
  if (json_output) {
    json::array out;
    for (const auto& t : tools) {
      const sbm::mcp_tool adapter(client, t);
      out.push_back({{"name", t.name},
                     {"registry_name", adapter.name()},
                     {"description", t.description},
                     {"input_schema", t.input_schema},
                     {"needs_approval", adapter.needs_approval()},
                     {"idempotent", adapter.idempotent()}});
    }
    sb::cli::print_json(std::cout, json::object{{"server", client->name()},
                                                {"protocol_version", client->protocol_version()},
                                                {"server_info", client->server_info()},
                                                {"tools", std::move(out)}});
    return sb::cli::exit_ok;
  }
  std::cout << "MCP server " << sb::cli::shown(json::serialize(client->server_info())) << ", protocol "
            << sb::cli::shown(client->protocol_version()) << ", " << tools.size() << " tools\n";
  for (const auto& t : tools) {
    const sbm::mcp_tool adapter(client, t);
    std::cout << sb::cli::shown(t.name) << (adapter.needs_approval() ? "  [needs approval]" : "")
              << (adapter.idempotent() ? "  [idempotent]" : "") << "\n"
              << "  " << sb::cli::shown(t.description) << "\n"
              << "  arguments: " << sb::cli::shown(schema_summary(t.input_schema)) << "\n";
  }
  return sb::cli::exit_ok;
}

int call(sbm::server_host& host, const std::shared_ptr<sbm::client>& client, const options& opts) {
  const auto r = host.run(client->call_tool(*opts.call, opts.arguments));
  if (opts.json_output) {
    json::object out{{"is_error", r.is_error}, {"text", r.text}, {"content", r.content}};
    if (r.structured) out["structured"] = *r.structured;
    sb::cli::print_json(std::cout, out);
  } else if (r.structured && !r.is_error) {
    sb::cli::print_json(std::cout, *r.structured);
  } else {
    (r.is_error ? std::cerr : std::cout) << sb::cli::shown_lines(r.text) << "\n";
  }
  return r.is_error ? sb::cli::exit_failure : sb::cli::exit_ok;
}

// --- a workflow's tools -------------------------------------------------------

// Whether `args` name a workflow file: a word that is neither an option nor
// the value of one (`tools --json WORKFLOW` as well as `tools WORKFLOW`).
bool names_a_workflow(std::span<const std::string> args) {
  static const std::set<std::string, std::less<>> with_value{
      "--mcp", "--call", "--args", "--timeout", "--schemas", "--plugin", "--plugin-path", "--prompts"};
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (with_value.contains(args[i])) ++i;
    else if (!args[i].starts_with("-")) return true;
  }
  return false;
}

int list_workflow_tools(std::span<const std::string> args) {
  std::filesystem::path workflow;
  sb::host::loader_settings loader;
  bool json_output = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (sb::cli::take_loader_option(args, i, loader)) continue;
    if (a == "--json") json_output = true;
    else if (a.starts_with("-")) throw sb::cli::usage_error("unknown option '" + a + "'");
    else if (workflow.empty()) workflow = std::filesystem::absolute(a).lexically_normal();
    else throw sb::cli::usage_error("unexpected argument '" + a + "'");
  }
  if (!std::filesystem::is_regular_file(workflow))
    throw sb::cli::usage_error("workflow file '" + workflow.string() + "' does not exist");
  const auto definition = sb::orchestrator::load_workflow_file(workflow);
  loader.model_configured = sb::host::configured({});  // as `run` would load the plugins
  const auto loaded = sb::host::load_agents(definition, workflow, loader);
  const auto infos = loaded.tools->list();
  if (json_output) {
    json::array out;
    for (const auto& t : infos)
      out.push_back({{"name", t.name},
                     {"description", t.description},
                     {"origin", t.origin},
                     {"needs_approval", t.needs_approval},
                     {"idempotent", t.idempotent},
                     {"parameters", loaded.tools->at(t.name).parameters()}});
    sb::cli::print_json(std::cout, out);
    return sb::cli::exit_ok;
  }
  for (const auto& notice : loaded.notices) std::cout << sb::cli::shown(notice) << "\n";
  if (infos.empty()) std::cout << "no tools: the workflow's plugins and MCP servers bring none\n";
  for (const auto& t : infos) {
    std::cout << sb::cli::shown(t.name) << "  (" << sb::cli::shown(t.origin) << ")"
              << (t.needs_approval ? "  [needs approval]" : "") << (t.idempotent ? "  [idempotent]" : "") << "\n"
              << "  " << sb::cli::shown(t.description) << "\n"
              << "  arguments: " << sb::cli::shown(schema_summary(loaded.tools->at(t.name).parameters())) << "\n";
  }
  return sb::cli::exit_ok;
}

int run_tools(std::span<const std::string> args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << usage_text;
    return sb::cli::exit_ok;
  }
  try {
    if (names_a_workflow(args)) return list_workflow_tools(args);
    const options opts = parse(args);
    auto config = sb::cli::parse_mcp_option("cli=" + opts.spec);
    config.request_timeout = opts.timeout;
    sbm::server_host host;
    const auto client = host.connect(config);
    return opts.call ? call(host, client, opts) : list(host, client, opts.json_output);
  } catch (const std::exception& e) {
    const bool usage_mistake = sb::cli::is_usage_mistake(e);
    std::cerr << "switchboard tools: " << sb::cli::shown(e.what()) << "\n"
              << (usage_mistake ? "\n" + std::string(usage_text) : std::string{});
    return usage_mistake ? sb::cli::exit_usage : sb::cli::exit_failure;
  }
}

const sb::cli::command_registration registration{
    "tools", "list a workflow's tools, or list or call an MCP server's (--mcp stdio:COMMAND... or URL)",
    &run_tools};

}  // namespace
