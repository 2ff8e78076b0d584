// Opening, driving and ending a run of `switchboard run` / `resume`
// (see run_session.hpp).
#include "run_session.hpp"

#include "command.hpp"
#include "metrics_output.hpp"
#include "run_output.hpp"
#include "stream_output.hpp"
#include "terminal_output.hpp"

#include <switchboard/host/workflow_metrics.hpp>
#include <switchboard/host/workflow_tracing.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/orchestrator/error.hpp>
#include <switchboard/orchestrator/hub_metrics.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <csignal>
#include <iostream>

namespace switchboard::cli {
namespace {

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

bool keeps_runs(const run_settings& settings) { return settings.store_url != "memory"; }

// The command that continues `state`, for the user to copy: everything
// that decides what is loaded comes from this command line again.
std::string resume_command(const orch::workflow_state& state, const run_settings& settings, bool with_answer,
                           std::string_view tail = {}) {
  std::vector<std::string> words{"switchboard"};
  for (auto& word : resume_arguments(state.id, settings)) words.push_back(std::move(word));
  std::string command = shell_command(words);
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

session open_session(const run_settings& settings, std::shared_ptr<orch::checkpoint_store> store) {
  const auto& model = settings.workflow.model;
  if (!host::configured(model) && host::model_only_options_given(model))
    std::cerr << "switchboard: no model is configured (--model, --base-url, OPENAI_BASE_URL or OPENAI_API_KEY): "
                 "the model options given have no effect\n";
  return host::open_workflow(settings.workflow, std::move(store));
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
  orch::hub_options options = s.hub_options();
  options.logger = make_logger(settings.verbose);
  orch::hub hub{io.get_executor(), *s.agents.registry, options};
  // --stream first: it ends its line of streamed text before the progress printer writes.
  if (settings.stream) hub.add_observer(make_stream_printer(settings.json_output ? std::cerr : std::cout));
  if (!settings.json_output) hub.add_observer(make_progress_printer(std::cout));
  const auto counters = std::make_shared<orch::hub_metrics>();
  hub.add_observer(counters);
  // Spans only when the OTEL_* variables ask for them: otherwise nothing
  // is attached and the hub pays nothing. Declared after the hub's
  // observers so that its destructor (end what is open, flush, bounded)
  // runs before the hub is gone, also when the run throws.
  host::process_tracing tracing(telemetry::process_environment(), "switchboard");
  if (tracing.enabled()) {
    hub.add_observer(tracing.observer());
    // Model requests as chat spans under their step, with traceparent on
    // the wire; MCP calls with the execute_tool span's (ADR 0034).
    hub.set_trace_parents(tracing.observer());
    s.model.trace_with(tracing.tracing().tracer);
  }
  // Metrics over OTLP likewise; destroyed first: one last export, bounded.
  host::process_metrics metrics(telemetry::process_environment(), "switchboard");
  if (metrics.exporting()) {
    hub.add_observer(metrics.observer());
    metrics.watch(s, s.workflow->name());
  }

  orch::workflow_state state = run_to_completion(io, [&] { return first(hub); });
  // A paused run continues here while the terminal or --answer can give
  // what it waits for; an interrupted one stops (it is resumed later).
  while (state.status != orch::workflow_status::interrupted) {
    orch::resume_options resume = host::resume_options_for(state);
    const auto awaited = host::awaited_by(state);
    if (awaited == host::awaited_input::answer) {
      resume.answer = answers.next(state.clarification->question, settings.json_output);
      if (!resume.answer) break;
    } else if (awaited == host::awaited_input::decision) {
      resume.decision = ask_decision(*state.approval, settings.json_output);
      if (!resume.decision) break;
    } else {
      break;
    }
    state = run_to_completion(io, [&] { return hub.start_resume(s.workflow, state.id, resume); });
  }
  const int code = finish_run(state, settings);
  if (!settings.metrics_file.empty()) {
    auto sources = s.metrics_sources();
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
  } catch (const models::model_error& e) {
    std::cerr << "switchboard: " << shown(e.what()) << "\n";
    return e.errc() == models::model_errc::not_configured ? exit_usage : exit_failure;
  } catch (const std::exception& e) {
    const bool usage_mistake = is_usage_mistake(e);
    std::cerr << "switchboard: " << shown(e.what()) << "\n" << (usage_mistake ? usage : std::string_view{});
    return usage_mistake ? exit_usage : exit_failure;
  }
}

}  // namespace switchboard::cli
