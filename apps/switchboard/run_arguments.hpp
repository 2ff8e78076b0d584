// What `switchboard run` and `resume` read from their command lines in
// common, and the resume command they print for later: it repeats every
// option that decides what a resume loads (the workflow file, the loader's
// and the model's options, the store) and none of this invocation's own
// (output choices, --reset, answers).
//
// Thread-safety: plain functions and values.
#pragma once

#include <switchboard/host/opened_workflow.hpp>

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::cli {

// What a run or a resume is built from: the invoker's command line and
// environment (never a stored run).
struct run_settings {
  host::workflow_settings workflow;   // the workflow file, the loader's and the model's options
  std::string store_url;              // --store; "" = the default SQLite file
  std::filesystem::path metrics_file; // --metrics FILE ("-": standard error)
  bool json_output = false;
  bool verbose = false;
  bool stream = false;                // --stream: agents' model text as it arrives (stream_output.hpp)
};

// Takes the options run and resume share; false when args[i] is none.
// Paths are made absolute: the resume command printed must work from any
// directory.
bool take_run_option(std::span<const std::string> args, std::size_t& i, run_settings& settings);

// The usage lines of those options.
std::string run_options_usage();

// The OpenTelemetry variables `run`, `resume` and `serve` read
// (docs/observability.md): part of their --help.
inline constexpr std::string_view tracing_environment_usage =
    "tracing (OpenTelemetry, docs/observability.md), from the environment:\n"
    "  OTEL_EXPORTER_OTLP_ENDPOINT   collector base URL (OTLP/HTTP JSON, /v1/traces); unset: no tracing\n"
    "  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  the traces URL as is, instead\n"
    "  OTEL_EXPORTER_OTLP_HEADERS    key=value,... sent with every export (a vendor's key)\n"
    "  OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES   who emits (default service: switchboard)\n"
    "  OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG  parentbased_always_on (default), traceidratio, ...\n"
    "  OTEL_SDK_DISABLED=true        no tracing at all\n"
    "  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true   also record explanations, questions\n"
    "                                and tool arguments/results (never by default)\n"
    "  model requests and MCP HTTP calls carry W3C traceparent while tracing is on\n";

// "resume ID --workflow FILE" and the options that make a resume of run
// `id` load what this one did, as words take_run_option reads back.
std::vector<std::string> resume_arguments(const std::string& id, const run_settings& settings);

// `words` as one shell command line, each quoted where it needs to be.
std::string shell_command(const std::vector<std::string>& words);

}  // namespace switchboard::cli
