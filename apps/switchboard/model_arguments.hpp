// The model options every `switchboard` command that talks to a model
// accepts (ask, run, resume), read into the host library's model options
// (switchboard/host/model_options.hpp): one parser, one usage text, so the
// same flag means the same thing everywhere; and written back as arguments
// for a command printed for later.
//
//   --model NAME --base-url URL --provider openai|anthropic --mode RUNG
//   --max-attempts N --ca-file PEM --timeout SECONDS --cache DIR
//
// Thread-safety: plain functions.
#pragma once

#include <switchboard/host/model_options.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::cli {

// The usage lines of these options, for every command's usage text.
inline constexpr std::string_view model_options_usage =
    "  --model NAME           the model (default: SWITCHBOARD_MODEL)\n"
    "  --base-url URL         the server (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else\n"
    "                         the provider's public API)\n"
    "  --provider NAME        openai (any OpenAI-compatible server) or anthropic\n"
    "                         (default: SWITCHBOARD_PROVIDER, else openai)\n"
    "  --mode RUNG            force json_schema, json_object or prompt_schema\n"
    "  --max-attempts N       requests per model call in total: the first, retries after\n"
    "                         429/5xx/timeouts and re-asks after invalid answers (default 3)\n"
    "  --ca-file PEM          also trust the certificates in PEM\n"
    "  --timeout SECONDS      the most one model call takes, retries and re-asks included\n"
    "                         (default: none; each request 120 s)\n"
    "  --cache DIR            answer repeated requests from DIR (created 0700) without asking\n"
    "                         the model; new answers are kept there\n";

// Takes the option at args[i] (and its value, advancing i) into `out`.
// False when args[i] is not one of these options. Throws usage_error
// naming the option and the value when the value is missing or bad.
bool take_model_option(std::span<const std::string> args, std::size_t& i, host::model_options& out);

// The options that give `options`, as command line words that
// take_model_option reads back to the same options.
std::vector<std::string> model_arguments(const host::model_options& options);

}  // namespace switchboard::cli
