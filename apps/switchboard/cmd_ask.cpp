// switchboard ask — sends one structured request to a model and prints the
// validated value with every attempt and the token usage as JSON.
//
//   switchboard ask --schema FILE_OR_NAME [the model options: model_arguments.hpp]
//                   [--schemas DIR]... [--metrics DEST] PROMPT
//
// Exit 0 when a valid value came back, 1 when the model failed to give one
// (or the request failed), 2 on a usage or configuration error.
#include "command.hpp"
#include "metrics_output.hpp"
#include "model_arguments.hpp"
#include "schema_lookup.hpp"
#include "terminal_output.hpp"

#include <switchboard/host/model_options.hpp>
#include <switchboard/host/workflow_metrics.hpp>
#include <switchboard/telemetry/configuration.hpp>
#include <switchboard/models/caching_model.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/models/structured.hpp>
#include <switchboard/protocol/metrics.hpp>
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
namespace sm = switchboard::models;
namespace sp = switchboard::protocol;
using namespace switchboard::cli;

constexpr std::string_view usage_head =
    "usage: switchboard ask --schema FILE_OR_NAME [--model NAME] [--base-url URL]\n"
    "                       [--provider openai|anthropic] [--mode RUNG] [--max-attempts N]\n"
    "                       [--ca-file PEM] [--timeout SECONDS] [--cache DIR] [--schemas DIR]...\n"
    "                       [--metrics DEST] PROMPT\n"
    "\n"
    "Sends PROMPT to a model, asking for a value valid against the schema (re-asking with\n"
    "the validator's errors when needed), and prints {ok, value, attempts, usage, ...} as JSON.\n"
    "\n"
    "  --schema FILE_OR_NAME  a schema file, or a registered name / name@version looked up in\n"
    "                         the schema directories\n";

constexpr std::string_view usage_tail =
    "  --schemas DIR          a schema directory (repeatable). Default: SWITCHBOARD_SCHEMA_PATH\n"
    "                         (':'-separated), else ./schemas\n"
    "  --metrics DEST         write the parser, model and cache counters in Prometheus text\n"
    "                         format to DEST (a file, replaced atomically; '-': standard error)\n"
    "\n"
    "API keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY. OTEL_EXPORTER_OTLP_ENDPOINT (or\n"
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) sends gen_ai.client.token.usage and\n"
    "gen_ai.client.operation.duration as OTLP/HTTP JSON when the request ends\n"
    "(OTEL_METRICS_EXPORTER=none or OTEL_SDK_DISABLED=true: off).\n"
    "exit status: 0 valid value, 1 no valid value or the request failed, 2 usage error\n";

void print_usage(std::ostream& out) { out << usage_head << switchboard::cli::model_options_usage << usage_tail; }

struct options {
  std::string schema;
  std::string prompt;
  switchboard::host::model_options model;
  std::vector<fs::path> schema_dirs;
  std::string metrics;  // --metrics DEST, empty: none
};

options parse_options(std::span<const std::string> args) {
  options opts;
  auto value_of = [&](std::size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw usage_error("option '" + args[i] + "' needs a value");
    return args[++i];
  };
  std::vector<std::string> positional;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (take_model_option(args, i, opts.model)) continue;
    if (arg == "--schema") {
      opts.schema = value_of(i);
    } else if (arg == "--schemas") {
      opts.schema_dirs.emplace_back(value_of(i));
    } else if (arg == "--metrics") {
      opts.metrics = value_of(i);
      if (opts.metrics.empty()) throw usage_error("option '--metrics' needs a file or '-', got ''");
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

json::object usage_json(const sm::token_usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.total()}};
}

json::array attempts_json(const std::vector<sm::attempt_record>& attempts) {
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
    print_usage(std::cout);
    return exit_ok;
  }
  // Standard output is the JSON result: warnings (retries, the ladder's
  // failures) go to standard error.
  use_stderr_logger("switchboard-ask", spdlog::level::info);
  options opts;
  std::optional<sp::compiled_schema> schema;
  switchboard::host::configured_model model;
  try {
    opts = parse_options(args);
    sp::schema_registry registry;
    schema = resolve_schema(opts.schema, opts.schema_dirs, registry);
    model = switchboard::host::make_configured_model(opts.model);
  } catch (const usage_error& e) {
    std::cerr << "switchboard ask: " << shown(e.what()) << "\n\n";
    print_usage(std::cerr);
    return exit_usage;
  } catch (const sp::protocol_error& e) {
    std::cerr << "switchboard ask: " << shown(e.what()) << "\n";
    return exit_usage;
  } catch (const sm::model_error& e) {
    std::cerr << "switchboard ask: " << shown(e.what()) << "\n";
    return exit_usage;
  } catch (const std::runtime_error& e) {  // the cache directory
    std::cerr << "switchboard ask: " << shown(e.what()) << "\n";
    return exit_usage;
  }

  sm::chat_request request;
  request.messages.push_back({sm::chat_role::user, opts.prompt});
  sm::structured_options structured;
  structured.schema = *schema;
  structured.schema_name = schema->id();
  sp::parser_metrics parser_metrics;
  structured.metrics = &parser_metrics;
  switchboard::host::apply_model_options(opts.model, structured);

  // Token usage and request durations over OTLP when the OTEL_* variables
  // ask for them; sent once when this function returns (bounded).
  switchboard::host::process_metrics process_metrics(switchboard::telemetry::process_environment(), "switchboard");
  if (process_metrics.exporting()) process_metrics.watch(model);

  boost::asio::io_context io;
  auto pending = boost::asio::co_spawn(io, sm::complete_structured(*model.model, request, structured),
                                       boost::asio::use_future);
  io.run();
  if (!opts.metrics.empty()) {
    std::vector<const sp::metrics_source*> sources{&parser_metrics};
    for (const auto* source : model.metrics_sources()) sources.push_back(source);
    try {
      write_metrics(opts.metrics, render_prometheus(sources));
    } catch (const std::runtime_error& e) {
      std::cerr << "switchboard ask: " << shown(e.what()) << "\n";
    }
  }
  try {
    const sm::structured_result result = pending.get();
    json::object out{{"ok", true},
                     {"schema", schema->id()},
                     {"provider", model.model->provider()},
                     {"model", result.last.model},
                     {"mode", sm::to_string(result.mode)},
                     {"value", result.value},
                     {"attempts", attempts_json(result.attempts)},
                     {"usage", usage_json(result.usage)}};
    print_json(std::cout, out);
    return exit_ok;
  } catch (const sm::structured_output_error& e) {
    json::object out{{"ok", false},
                     {"error", sm::to_string(e.errc())},
                     {"message", e.what()},
                     {"schema", e.schema()},
                     {"last_reason", e.last_reason()},
                     {"attempts", attempts_json(e.attempts())},
                     {"usage", usage_json(e.usage())}};
    print_json(std::cout, out);
    return exit_failure;
  } catch (const sm::model_error& e) {
    if (e.errc() == sm::model_errc::not_configured) {
      std::cerr << "switchboard ask: " << shown(e.what()) << "\n";
      return exit_usage;
    }
    json::object out{{"ok", false}, {"error", sm::to_string(e.errc())}, {"message", e.what()}};
    if (e.http_status() != 0) out["http_status"] = e.http_status();
    if (!e.provider_message().empty()) out["provider_message"] = e.provider_message();
    print_json(std::cout, out);
    return exit_failure;
  }
}

const command_registration registration{"ask", "send one structured request to a model and print the value",
                                        &run_ask};

}  // namespace
