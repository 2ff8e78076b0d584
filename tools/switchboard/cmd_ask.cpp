// switchboard ask — sends one structured request to a model and prints the
// validated value with every attempt and the token usage as JSON.
//
//   switchboard ask --schema FILE_OR_NAME [--model NAME] [--base-url URL]
//                   [--provider openai|anthropic] [--mode RUNG] [--max-attempts N]
//                   [--ca-file PEM] [--timeout SECONDS] [--schemas DIR]... PROMPT
//
// Exit 0 when a valid value came back, 1 when the model failed to give one
// (or the request failed), 2 on a usage or configuration error.
#include "command.hpp"
#include "schema_lookup.hpp"
#include "terminal_output.hpp"

#include <switchboard/agents/model/model_error.hpp>
#include <switchboard/agents/model/model_factory.hpp>
#include <switchboard/agents/model/structured.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace sa = switchboard::agents;
namespace sp = switchboard::protocol;
using namespace switchboard::cli;

constexpr std::string_view usage_text =
    "usage: switchboard ask --schema FILE_OR_NAME [--model NAME] [--base-url URL]\n"
    "                       [--provider openai|anthropic] [--mode RUNG] [--max-attempts N]\n"
    "                       [--ca-file PEM] [--timeout SECONDS] [--schemas DIR]... PROMPT\n"
    "\n"
    "Sends PROMPT to a model, asking for a value valid against the schema (re-asking with\n"
    "the validator's errors when needed), and prints {ok, value, attempts, usage, ...} as JSON.\n"
    "\n"
    "  --schema FILE_OR_NAME  a schema file, or a registered name / name@version looked up in\n"
    "                         the schema directories\n"
    "  --model NAME           the model (default: SWITCHBOARD_MODEL)\n"
    "  --base-url URL         the server (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else\n"
    "                         the provider's public API)\n"
    "  --provider NAME        openai (any OpenAI-compatible server) or anthropic\n"
    "                         (default: SWITCHBOARD_PROVIDER, else openai)\n"
    "  --mode RUNG            force json_schema, json_object or prompt_schema\n"
    "  --max-attempts N       first answer + re-asks (default 3)\n"
    "  --ca-file PEM          also trust the certificates in PEM\n"
    "  --timeout SECONDS      per-request deadline (default 120)\n"
    "  --schemas DIR          a schema directory (repeatable). Default: SWITCHBOARD_SCHEMA_PATH\n"
    "                         (':'-separated), else ./schemas\n"
    "\n"
    "API keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY.\n"
    "exit status: 0 valid value, 1 no valid value or the request failed, 2 usage error\n";

struct options {
  std::string schema;
  std::string prompt;
  sa::model_config model;
  std::optional<sa::output_mode> mode;
  int max_attempts = 3;
  std::vector<fs::path> schema_dirs;
};

int parse_int(const std::string& option, const std::string& text, int min) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min) {
    throw usage_error("option '" + option + "' needs an integer >= " + std::to_string(min) + ", got '" + text + "'");
  }
  return value;
}

options parse_options(std::span<const std::string> args) {
  options opts;
  auto value_of = [&](std::size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw usage_error("option '" + args[i] + "' needs a value");
    return args[++i];
  };
  std::vector<std::string> positional;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--schema") {
      opts.schema = value_of(i);
    } else if (arg == "--model") {
      opts.model.model = value_of(i);
    } else if (arg == "--base-url") {
      opts.model.http.base_url = value_of(i);
    } else if (arg == "--provider") {
      opts.model.provider = value_of(i);
      if (opts.model.provider != "openai" && opts.model.provider != "anthropic") {
        throw usage_error("--provider must be openai or anthropic, got '" + opts.model.provider + "'");
      }
    } else if (arg == "--mode") {
      opts.mode = sa::parse_output_mode(value_of(i));
      if (!opts.mode) throw usage_error("--mode must be json_schema, json_object or prompt_schema, got '" + args[i] + "'");
    } else if (arg == "--max-attempts") {
      opts.max_attempts = parse_int(arg, value_of(i), 1);
    } else if (arg == "--ca-file") {
      opts.model.http.ca_file = value_of(i);
    } else if (arg == "--timeout") {
      opts.model.http.request_timeout = std::chrono::seconds(parse_int(arg, value_of(i), 1));
    } else if (arg == "--schemas") {
      opts.schema_dirs.emplace_back(value_of(i));
    } else if (arg.starts_with("--")) {
      throw usage_error("unknown option '" + arg + "'");
    } else {
      positional.push_back(arg);
    }
  }
  if (opts.schema.empty()) throw usage_error("--schema is required");
  if (positional.size() != 1) throw usage_error("exactly one PROMPT is required (quote it)");
  opts.prompt = positional.front();
  return opts;
}

json::object usage_json(const sa::token_usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.total()}};
}

json::array attempts_json(const std::vector<sa::attempt_record>& attempts) {
  json::array out;
  for (const auto& a : attempts) {
    // Repairs, where the value was found and how the model stopped: what
    // a reader needs to trust (or distrust) the value.
    json::object attempt = a.to_json();
    attempt["usage"] = usage_json(a.usage);
    out.push_back(std::move(attempt));
  }
  return out;
}

int run_ask(std::span<const std::string> args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << usage_text;
    return exit_ok;
  }
  // Standard output is the JSON result: warnings (retries, the ladder's
  // failures) go to standard error.
  use_stderr_logger("switchboard-ask", spdlog::level::info);
  options opts;
  std::optional<sp::compiled_schema> schema;
  std::unique_ptr<sa::chat_model> model;
  try {
    opts = parse_options(args);
    sp::schema_registry registry;
    schema = resolve_schema(opts.schema, opts.schema_dirs, registry);
    model = sa::make_model_from_env(opts.model);
  } catch (const usage_error& e) {
    std::cerr << "switchboard ask: " << shown(e.what()) << "\n\n" << usage_text;
    return exit_usage;
  } catch (const sp::protocol_error& e) {
    std::cerr << "switchboard ask: " << shown(e.what()) << "\n";
    return exit_usage;
  } catch (const sa::model_error& e) {
    std::cerr << "switchboard ask: " << shown(e.what()) << "\n";
    return exit_usage;
  }

  sa::chat_request request;
  request.messages.push_back({sa::chat_role::user, opts.prompt});
  sa::structured_options structured;
  structured.schema = *schema;
  structured.schema_name = schema->id();
  structured.max_attempts = opts.max_attempts;
  structured.force_mode = opts.mode;

  boost::asio::io_context io;
  auto pending = boost::asio::co_spawn(io, sa::complete_structured(*model, request, structured),
                                       boost::asio::use_future);
  io.run();
  try {
    const sa::structured_result result = pending.get();
    json::object out{{"ok", true},
                     {"schema", schema->id()},
                     {"provider", model->provider()},
                     {"model", result.last.model},
                     {"mode", sa::to_string(result.mode)},
                     {"value", result.value},
                     {"attempts", attempts_json(result.attempts)},
                     {"usage", usage_json(result.usage)}};
    print_json(std::cout, out);
    return exit_ok;
  } catch (const sa::structured_output_error& e) {
    json::object out{{"ok", false},
                     {"error", sa::to_string(e.errc())},
                     {"message", e.what()},
                     {"schema", e.schema()},
                     {"last_reason", e.last_reason()},
                     {"attempts", attempts_json(e.attempts())},
                     {"usage", usage_json(e.usage())}};
    print_json(std::cout, out);
    return exit_failure;
  } catch (const sa::model_error& e) {
    if (e.errc() == sa::model_errc::not_configured) {
      std::cerr << "switchboard ask: " << shown(e.what()) << "\n";
      return exit_usage;
    }
    json::object out{{"ok", false}, {"error", sa::to_string(e.errc())}, {"message", e.what()}};
    if (e.http_status() != 0) out["http_status"] = e.http_status();
    if (!e.provider_message().empty()) out["provider_message"] = e.provider_message();
    print_json(std::cout, out);
    return exit_failure;
  }
}

const command_registration registration{"ask", "send one structured request to a model and print the value",
                                        &run_ask};

}  // namespace
