// Opening, driving and ending a run of `switchboard run` / `resume`
// (see run_session.hpp).
#include "run_session.hpp"

#include "command.hpp"
#include "metrics_output.hpp"
#include "run_output.hpp"
#include "state_store.hpp"
#include "stream_output.hpp"
#include "terminal_output.hpp"

#include <switchboard/models/model_error.hpp>
#include <switchboard/orchestrator/error.hpp>
#include <switchboard/orchestrator/hub_metrics.hpp>
#include <switchboard/orchestrator/workflow_file.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <iostream>

namespace switchboard::cli {
namespace {

namespace fs = std::filesystem;
namespace orch = switchboard::orchestrator;

// The longest clarification answer read from standard input: the rest of
// a longer line is an error, not a silently cut answer.
constexpr std::size_t max_answer_bytes = 64 * 1024;

std::shared_ptr<spdlog::logger> make_logger(bool verbose) {
  if (verbose) return use_stderr_logger("switchboard-run", spdlog::level::debug);
  auto logger = std::make_shared<spdlog::logger>("switchboard-run", std::make_shared<spdlog::sinks::null_sink_mt>());
  spdlog::set_level(spdlog::level::warn);
  return logger;
}

// One line of standard input, at most max_answer_bytes; nullopt at its end.
std::optional<std::string> read_answer_line() {
  std::string line;
  int c = 0;
  while ((c = std::cin.get()) != EOF && c != '\n') {
    if (line.size() == max_answer_bytes)
      throw std::runtime_error("an answer on standard input is longer than " +
                               std::to_string(max_answer_bytes) + " bytes");
    line.push_back(static_cast<char>(c));
  }
  if (c == EOF && line.empty()) return std::nullopt;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// The signal that interrupted the last run, or 0.
int interrupting_signal = 0;

// Runs the workflow `start` returns until it stops. SIGINT, SIGTERM and
// SIGHUP interrupt it between steps: it stops `interrupted`, resumable.
orch::workflow_state run_to_completion(boost::asio::io_context& io,
                                       const std::function<orch::workflow_handle()>& start) {
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  const orch::workflow_handle handle = start();
  signals.async_wait([&](const boost::system::error_code& ec, int signal_number) {
    if (ec) return;
    interrupting_signal = signal_number;
    handle.interrupt();
  });
  std::optional<orch::workflow_state> result;
  std::exception_ptr failure;
  boost::asio::co_spawn(io, handle.async_wait(), [&](std::exception_ptr e, orch::workflow_state state) {
    if (e) failure = e;
    else result = std::move(state);
    signals.cancel();
  });
  io.restart();
  io.run();
  if (failure) std::rethrow_exception(failure);
  return std::move(*result);
}

// The model options as given, for a command to repeat.
template <class Add>
void add_model_arguments(const model_options& model, const Add& add) {
  if (!model.model.empty()) add("--model", model.model);
  if (!model.base_url.empty()) add("--base-url", model.base_url);
  if (!model.provider.empty()) add("--provider", model.provider);
  if (model.mode) add("--mode", std::string(models::to_string(*model.mode)));
  if (model.max_attempts) add("--max-attempts", std::to_string(*model.max_attempts));
  if (!model.ca_file.empty()) add("--ca-file", model.ca_file);
  if (model.timeout) add("--timeout", std::to_string(model.timeout->count()));
  if (!model.cache_dir.empty()) add("--cache", model.cache_dir.string());
}

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

// "sqlite:runs.db" as "sqlite:/abs/runs.db": a resume command printed for
// later must find the same file from any directory.
std::string store_spec_of(const std::string& spec) {
  constexpr std::string_view sqlite = "sqlite:";
  if (!spec.starts_with(sqlite) || spec.size() == sqlite.size()) return spec;
  return std::string(sqlite) + absolute_path(spec.substr(sqlite.size())).string();
}

bool model_options_given(const model_options& m) {
  return m.mode || m.max_attempts || !m.ca_file.empty() || m.timeout || !m.cache_dir.empty();
}

bool keeps_runs(const run_settings& settings) { return settings.store_spec != "memory"; }

// The command that continues `state`, for the user to copy: everything
// that decides what is loaded comes from this command line again.
std::string resume_command(const orch::workflow_state& state, const run_settings& settings, bool with_answer,
                           std::string_view tail = {}) {
  std::vector<std::string> words{"switchboard", "resume", state.id, "--workflow", settings.workflow_file.string()};
  auto add = [&](std::string_view option, const std::string& value) {
    words.emplace_back(option);
    words.push_back(value);
  };
  for (const auto& p : settings.loader.schema_dirs) add("--schemas", p.string());
  for (const auto& p : settings.loader.plugins) add("--plugin", p.string());
  for (const auto& p : settings.loader.plugin_dirs) add("--plugin-path", p.string());
  for (const auto& p : settings.loader.prompt_dirs) add("--prompts", p.string());
  add_model_arguments(settings.model, add);
  if (!settings.store_spec.empty()) add("--store", settings.store_spec);
  std::string command;
  for (const auto& word : words) command += (command.empty() ? "" : " ") + shell_word(word);
  if (with_answer) command += " --answer \"...\"";
  return command + std::string(tail);
}

// What the pending calls would do, for the person who decides.
void print_pending_calls(std::ostream& out, const orch::approval_request& approval) {
  for (const auto& call : approval.calls) {
    out << "  " << shown(call.agent) << " wants to call " << shown(call.tool) << " "
        << shown(boost::json::serialize(call.arguments)) << "\n";
    if (!call.description.empty()) out << "    (" << shown(call.description) << ")\n";
  }
}

int finish_run(const orch::workflow_state& state, const run_settings& settings) {
  if (settings.json_output) print_json(std::cout, state.to_json());
  std::ostream& notes = settings.json_output ? std::cerr : std::cout;
  switch (state.status) {
    case orch::workflow_status::completed:
      if (!settings.json_output) std::cout << "\n" << shown_outcome(state) << "\n";
      return exit_ok;
    case orch::workflow_status::awaiting_clarification: {
      const std::string question = state.clarification ? state.clarification->question : std::string{};
      notes << "\nPaused for clarification: " << shown(question) << "\n";
      if (keeps_runs(settings)) {
        notes << "workflow id: " << shown(state.id) << "\nContinue with:\n  "
              << shown(resume_command(state, settings, true)) << "\n";
      } else {
        notes << "(--store memory keeps nothing after this command: run it again with the answer as "
                 "--answer TEXT or on standard input)\n";
      }
      return exit_paused;
    }
    case orch::workflow_status::awaiting_approval: {
      notes << "\nWaiting for your approval before acting:\n";
      if (state.approval) print_pending_calls(notes, *state.approval);
      if (keeps_runs(settings)) {
        notes << "workflow id: " << shown(state.id) << "\nApprove with:\n  "
              << shown(resume_command(state, settings, false, " --approve")) << "\nor reject with:\n  "
              << shown(resume_command(state, settings, false, " --reject --reason \"...\"")) << "\n";
      } else {
        notes << "(--store memory keeps nothing after this command: keep runs in a store (the default) to "
                 "approve them)\n";
      }
      return exit_awaiting_approval;
    }
    case orch::workflow_status::interrupted: {
      notes << "\nInterrupted" << (interrupting_signal ? " by signal " + std::to_string(interrupting_signal) : "");
      if (keeps_runs(settings)) {
        notes << "; the completed steps are saved.\nworkflow id: " << shown(state.id) << "\nContinue with:\n  "
              << shown(resume_command(state, settings, false)) << "\n";
      } else {
        notes << "; --store memory kept nothing of the run. What its finished steps did outside it (a booking, "
                 "a message sent) is not undone: check before running it again, or keep runs in a store "
                 "(the default) to resume instead.\n";
      }
      return 128 + (interrupting_signal ? interrupting_signal : SIGINT);
    }
    default: {
      const auto* error = state.first_error();
      std::string message = error ? error->message : "the workflow " + std::string(orch::to_string(state.status));
      if (error && !error->agent.empty() && message.find(error->agent) == std::string::npos)
        message = error->agent + ": " + message;
      std::cerr << "\nswitchboard: the workflow " << orch::to_string(state.status) << ": " << shown(message) << "\n";
      return exit_failure;
    }
  }
}

}  // namespace

bool take_run_option(std::span<const std::string> args, std::size_t& i, run_settings& settings) {
  const std::string& a = args[i];
  if (take_loader_option(args, i, settings.loader)) return true;
  if (take_model_option(args, i, settings.model)) {
    // Printed again in resume commands: those must work from any directory.
    settings.model.ca_file = absolute_path(settings.model.ca_file).string();
    settings.model.cache_dir = absolute_path(settings.model.cache_dir);
    return true;
  }
  if (a == "--store") settings.store_spec = store_spec_of(option_value(args, i));
  else if (a == "--metrics") settings.metrics_file = option_value(args, i);
  else if (a == "--json") settings.json_output = true;
  else if (a == "--verbose") settings.verbose = true;
  else if (a == "--stream") settings.stream = true;
  else return false;
  return true;
}

std::string run_options_usage() {
  return std::string(loader_options_usage) + std::string(model_options_usage) +
         "  --store SPEC          memory, or sqlite:PATH (default: workflows.db in the state directory,\n"
         "                        SWITCHBOARD_STATE_DIR or ~/.local/state/switchboard)\n"
         "  --metrics FILE        write the parser, model, cache and hub counters in Prometheus text\n"
         "                        format to FILE after the run ('-': standard error)\n"
         "  --json                print the final state as one JSON document, notes on standard error\n"
         "  --verbose             log the hub's decisions to standard error\n"
         "  --stream              print each agent's model text as it arrives (on standard error with --json)\n";
}

std::optional<std::string> answer_source::take_given() {
  if (given_.empty()) return std::nullopt;
  std::string answer = std::move(given_.front());
  given_.pop_front();
  return answer;
}

std::optional<std::string> answer_source::next(const std::string& question, bool quiet) {
  if (auto answer = take_given()) {
    if (!quiet) std::cout << "\n? " << shown(question) << "\n> " << shown(*answer) << "   (from --answer)\n\n";
    return answer;
  }
  if (input_exhausted_) return std::nullopt;
  const bool terminal = isatty(STDIN_FILENO) != 0;
  if (terminal && quiet) return std::nullopt;  // nobody is asked under --json
  if (terminal) std::cout << "\n? " << shown(question) << "\n> " << std::flush;
  auto answer = read_answer_line();
  if (!answer || answer->empty()) {
    input_exhausted_ = true;
    return std::nullopt;
  }
  if (!quiet && !terminal)
    std::cout << "\n? " << shown(question) << "\n> " << shown(*answer) << "   (from standard input)\n";
  if (!quiet) std::cout << "\n";
  return answer;
}

std::optional<orch::approval_decision> ask_decision(const orch::approval_request& approval, bool quiet) {
  // Only a person at a terminal approves here: a pipe or a script decides
  // with `resume --approve` / `--reject`, after reading what would happen.
  if (quiet || isatty(STDIN_FILENO) == 0) return std::nullopt;
  std::cout << "\n? Waiting for your approval before acting:\n";
  print_pending_calls(std::cout, approval);
  std::cout << "Approve? [y/N] " << std::flush;
  auto line = read_answer_line();
  if (!line) return std::nullopt;  // end of input: the run stays paused
  const bool approve = *line == "y" || *line == "Y" || *line == "yes";
  std::cout << "\n";
  return orch::approval_decision{approve, approve ? "" : "declined at the prompt"};
}

session open_session(const run_settings& settings) {
  if (!fs::is_regular_file(settings.workflow_file))
    throw usage_error("workflow file '" + settings.workflow_file.string() + "' does not exist");
  orch::workflow_definition definition = orch::load_workflow_file(settings.workflow_file);

  session out;
  loader_settings loader = settings.loader;
  loader.model_configured = configured(settings.model);
  if (loader.state_dir.empty()) loader.state_dir = state_directory();
  if (!loader.model_configured && model_options_given(settings.model))
    std::cerr << "switchboard: no model is configured (--model, --base-url, OPENAI_BASE_URL or OPENAI_API_KEY): "
                 "the model options given have no effect\n";
  if (loader.model_configured) {
    out.model = make_model_from_env(settings.model);
    out.models.add("default", out.model.model);
    auto limits = call_limits_of(settings.model);
    limits.metrics = out.parser_counts.get();
    out.models.set_limits(limits);
  }
  out.agents = load_agents(definition, settings.workflow_file, loader);
  out.workflow = orch::compile(std::move(definition), *out.agents.registry);
  return out;
}

void print_header(const session& s, const std::string& request, const run_settings& settings) {
  // Notes are notes: on standard error when standard output is the JSON.
  std::ostream& notes = settings.json_output ? std::cerr : std::cout;
  for (const auto& notice : s.agents.notices) notes << shown(notice) << "\n";
  if (settings.json_output) return;
  if (!request.empty()) std::cout << "request: \"" << shown(request) << "\"\n\n";
}

int drive(session& s, const run_settings& settings, answer_source& answers,
          const std::function<orch::workflow_handle(orch::hub&)>& first) {
  boost::asio::io_context io;
  orch::hub_options options;
  options.store = s.store;
  options.models = s.models;
  options.logger = make_logger(settings.verbose);
  orch::hub hub{io.get_executor(), *s.agents.registry, options};
  // --stream first: it ends its line of streamed text before the progress printer writes.
  if (settings.stream) hub.add_observer(make_stream_printer(settings.json_output ? std::cerr : std::cout));
  if (!settings.json_output) hub.add_observer(make_progress_printer(std::cout));
  const auto counters = std::make_shared<orch::hub_metrics>();
  hub.add_observer(counters);

  orch::workflow_state state = run_to_completion(io, [&] { return first(hub); });
  for (;;) {
    orch::resume_options resume;
    resume.expected_step = state.step;
    if (state.status == orch::workflow_status::awaiting_clarification && state.clarification) {
      resume.answer = answers.next(state.clarification->question, settings.json_output);
      if (!resume.answer) break;
    } else if (state.status == orch::workflow_status::awaiting_approval && state.approval) {
      resume.decision = ask_decision(*state.approval, settings.json_output);
      if (!resume.decision) break;
      resume.expected_calls = state.approval->calls_key();
    } else {
      break;
    }
    state = run_to_completion(io, [&] { return hub.start_resume(s.workflow, state.id, resume); });
  }
  const int code = finish_run(state, settings);
  if (!settings.metrics_file.empty()) {
    std::vector<const protocol::metrics_source*> sources{s.parser_counts.get()};
    for (const auto* source : s.model.metrics_sources()) sources.push_back(source);
    sources.push_back(counters.get());
    try {
      write_metrics(settings.metrics_file.string(), render_prometheus(sources));
    } catch (const std::exception& e) {
      // The run's own ending stands: a lost metrics file is reported, not made the run's failure.
      std::cerr << "switchboard: metrics not written: " << shown(e.what()) << "\n";
    }
  }
  return code;
}

int report(const orch::workflow_state& state, const run_settings& settings) { return finish_run(state, settings); }

int guarded(std::string_view usage, const std::function<int()>& body) {
  try {
    return body();
  } catch (const usage_error& e) {
    std::cerr << "switchboard: " << shown(e.what()) << "\n" << usage;
    return exit_usage;
  } catch (const models::model_error& e) {
    std::cerr << "switchboard: " << shown(e.what()) << "\n";
    return e.errc() == models::model_errc::not_configured ? exit_usage : exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "switchboard: " << shown(e.what()) << "\n";
    return exit_failure;
  }
}

}  // namespace switchboard::cli
