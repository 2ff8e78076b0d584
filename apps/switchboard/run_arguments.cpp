// The options run and resume share (see run_arguments.hpp).
#include "run_arguments.hpp"

#include "command.hpp"
#include "loader_arguments.hpp"
#include "model_arguments.hpp"

#include <switchboard/host/store.hpp>

#include <algorithm>
#include <cctype>

namespace switchboard::cli {
namespace {

// `word` as one shell word: quoted when it holds anything but the
// characters paths and ids are usually made of.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::ranges::all_of(word, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("/._-:@=+,").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

bool take_run_option(std::span<const std::string> args, std::size_t& i, run_settings& settings) {
  const std::string& a = args[i];
  if (take_loader_option(args, i, settings.workflow.loader)) return true;
  if (take_model_option(args, i, settings.workflow.model)) {
    settings.workflow.model.ca_file = absolute_path(settings.workflow.model.ca_file).string();
    settings.workflow.model.cache_dir = absolute_path(settings.workflow.model.cache_dir);
    return true;
  }
  if (a == "--store") settings.store_url = host::absolute_store_url(option_value(args, i));
  else if (a == "--metrics") settings.metrics_file = option_value(args, i);
  else if (a == "--json") settings.json_output = true;
  else if (a == "--verbose") settings.verbose = true;
  else if (a == "--stream") settings.stream = true;
  else return false;
  return true;
}

std::string run_options_usage() {
  return std::string(loader_options_usage) + std::string(model_options_usage) +
         "  --store SPEC          memory, sqlite:PATH or postgresql://USER@HOST/DB (default: workflows.db\n"
         "                        in the state directory, SWITCHBOARD_STATE_DIR or ~/.local/state/switchboard)\n"
         "  --metrics FILE        write the parser, model, cache and hub counters in Prometheus text\n"
         "                        format to FILE after the run ('-': standard error)\n"
         "  --json                print the final state as one JSON document, notes on standard error\n"
         "  --verbose             log the hub's decisions to standard error\n"
         "  --stream              print each agent's model text as it arrives (on standard error with --json)\n" +
         std::string(tracing_environment_usage);
}

std::vector<std::string> resume_arguments(const std::string& id, const run_settings& settings) {
  std::vector<std::string> words{"resume", id, "--workflow", settings.workflow.workflow_file.string()};
  for (auto& word : loader_arguments(settings.workflow.loader)) words.push_back(std::move(word));
  for (auto& word : model_arguments(settings.workflow.model)) words.push_back(std::move(word));
  if (!settings.store_url.empty()) {
    words.emplace_back("--store");
    // Printed for later: a password stays in PGPASSWORD or PGPASSFILE.
    words.push_back(host::printable_store_url(settings.store_url));
  }
  return words;
}

std::string shell_command(const std::vector<std::string>& words) {
  std::string command;
  for (const auto& word : words) command += (command.empty() ? "" : " ") + shell_word(word);
  return command;
}

}  // namespace switchboard::cli
