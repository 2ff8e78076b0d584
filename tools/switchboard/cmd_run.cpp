// switchboard run / resume — runs a workflow file step by step, showing each
// agent's confidence, explanation and the route taken, then the outcome.
//
//   switchboard run WORKFLOW --input FILE_OR_TEXT [--data DIR] [--model NAME]
//       [--base-url URL] [--plugin PATH]... [--prompts DIR] [--store SPEC]
//       [--answer TEXT]... [--now YYYY-MM-DDTHH:MM] [--json] [--verbose]
//   switchboard resume ID --workflow FILE [--answer TEXT]... [the model,
//       plugin, prompt and data options of run] [--store SPEC] [--json] [--verbose]
//
// A stored run is data, not authority: resume takes the workflow file,
// plugins, model, base URL and data directory from its own command line and
// environment, never from the checkpoint. SIGINT, SIGTERM and SIGHUP stop a
// run between steps and leave it resumable (exit 128 + the signal).
//
// The scheduling sample's agents are always offered as built-ins (origin
// "builtin:scheduling"), configured by --data (default: data/ next to the
// workflow file). Without a model they are native C++; with one
// (OPENAI_BASE_URL/OPENAI_API_KEY or --model) nl_parser, resolution and query
// are LLM-backed agents from the prompt files.
//
// Exit codes: 0 completed, 1 failed (or refused: another process owns the
// run, the definition changed), 2 usage (bad option, missing file), 3 paused
// for clarification with no answer available (the output names the workflow
// id and the `switchboard resume` command), 128 + N interrupted by signal N.
#include "command.hpp"
#include "run_output.hpp"
#include "state_store.hpp"
#include "terminal_output.hpp"

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/model/model_error.hpp>
#include <switchboard/agents/model/model_factory.hpp>
#include <switchboard/agents/plugin_loader.hpp>
#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/agents/prompt_library.hpp>
#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/error.hpp>
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/orchestrator/workflow_file.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>
#include <switchboard/protocol/limits.hpp>
#include <switchboard/scheduling/agents.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/json/parse.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cctype>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <functional>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace cli = switchboard::cli;
namespace orch = switchboard::orchestrator;
namespace sched = switchboard::scheduling;
using switchboard::agents::agent_registry;
using switchboard::cli::shown;
using switchboard::cli::usage_error;

constexpr int exit_paused = 3;

// What a run or a resume is built from: the invoker's command line and
// environment (never a stored run).
struct setup {
  fs::path workflow_file;
  fs::path data_dir;            // empty: data/ next to the workflow file, if present
  bool data_explicit = false;
  std::vector<fs::path> plugins;
  fs::path prompts_dir;         // extra prompt-file agents (--prompts)
  std::string model;            // --model
  std::string base_url;         // --base-url
  std::string store_spec;
  bool json_output = false;
  bool verbose = false;
};

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw usage_error("cannot read '" + file.string() + "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

fs::path absolute(const fs::path& p) { return p.empty() ? p : fs::absolute(p).lexically_normal(); }

bool model_configured(const setup& s) {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
  };
  return !s.model.empty() || !s.base_url.empty() || env("OPENAI_BASE_URL") || env("OPENAI_API_KEY");
}

// The prompts/ directory of the sample: SWITCHBOARD_PROMPTS_DIR, else the
// first prompts/ with nl_parser prompt files above the workflow file.
fs::path find_sample_prompts(const fs::path& workflow_file) {
  if (const char* dir = std::getenv("SWITCHBOARD_PROMPTS_DIR"); dir && *dir) return dir;
  for (fs::path dir = workflow_file.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    const fs::path candidate = dir / "prompts";
    if (fs::exists(candidate / "nl_parser.v1.json")) return candidate;
    if (dir == dir.parent_path()) break;
  }
  return workflow_file.parent_path().parent_path().parent_path() / "prompts";
}

std::shared_ptr<spdlog::logger> make_logger(bool verbose) {
  if (verbose) return cli::use_stderr_logger("switchboard-run", spdlog::level::debug);
  auto logger = std::make_shared<spdlog::logger>("switchboard-run", std::make_shared<spdlog::sinks::null_sink_mt>());
  spdlog::set_level(spdlog::level::warn);
  return logger;
}

// Everything a run or a resume needs, built from the settings.
struct session {
  std::unique_ptr<agent_registry> registry;
  std::optional<sched::sample_registration> sample;
  switchboard::agents::model_set models;
  bool llm_backed = false;
  std::shared_ptr<const orch::compiled_workflow> workflow;
  std::shared_ptr<orch::checkpoint_store> store;
};

session open_session(const setup& s) {
  if (!fs::exists(s.workflow_file))
    throw usage_error("workflow file '" + s.workflow_file.string() + "' does not exist");
  orch::workflow_definition definition = orch::load_workflow_file(s.workflow_file);

  session out;
  out.registry = std::make_unique<agent_registry>(std::make_shared<switchboard::protocol::schema_registry>());
  out.llm_backed = model_configured(s);
  if (out.llm_backed) {
    switchboard::agents::model_config config;
    config.model = s.model;
    config.http.base_url = s.base_url;
    out.models.add("default", std::shared_ptr<switchboard::agents::chat_model>(
                                  switchboard::agents::make_model_from_env(config)));
  }

  const fs::path sample_dir = s.workflow_file.parent_path();
  const fs::path data_dir = s.data_explicit ? s.data_dir : sample_dir / "data";
  if (s.data_explicit && !fs::is_directory(data_dir))
    throw usage_error("data directory '" + data_dir.string() + "' does not exist");
  if (fs::is_directory(data_dir)) {
    sched::sample_options options;
    options.data_dir = data_dir;
    options.schemas_dir = sample_dir / "schemas";
    if (!fs::is_directory(options.schemas_dir))
      options.schemas_dir = data_dir.parent_path() / "schemas";
    options.llm_backed = out.llm_backed;
    options.prompts_dir = find_sample_prompts(s.workflow_file);
    out.sample = sched::register_sample_agents(*out.registry, options);
  }

  std::vector<fs::path> plugins = s.plugins;
  for (const auto& p : definition.plugins) {
    const fs::path file = fs::path(p).is_absolute() ? fs::path(p) : sample_dir / p;
    plugins.push_back(file);
  }
  for (const auto& p : plugins) switchboard::agents::load_plugin(*out.registry, p);
  switchboard::agents::load_plugins_from_environment(*out.registry);
  if (!s.prompts_dir.empty()) {
    switchboard::agents::prompt_library library;
    library.load_directory(s.prompts_dir);
    switchboard::agents::register_prompt_agents(*out.registry, library);
  }

  try {
    out.workflow = orch::compile(std::move(definition), *out.registry);
  } catch (const orch::orchestrator_error& e) {
    std::string hint;
    if (!out.sample)
      hint = " (the scheduling sample's agents were not offered: no data directory at '" +
             data_dir.string() + "'; pass --data DIR)";
    throw std::runtime_error(std::string(e.what()) + hint);
  }
  return out;
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

std::optional<std::string> next_answer(const std::string& question, std::deque<std::string>& answers,
                                       bool quiet) {
  if (!answers.empty()) {
    std::string answer = std::move(answers.front());
    answers.pop_front();
    if (!quiet) std::cout << "\n? " << shown(question) << "\n> " << shown(answer) << "   (from --answer)\n\n";
    return answer;
  }
  if (isatty(STDIN_FILENO) && !quiet) {
    std::cout << "\n? " << shown(question) << "\n> " << std::flush;
    std::string answer;
    if (std::getline(std::cin, answer) && !answer.empty()) {
      std::cout << "\n";
      return answer;
    }
  }
  return std::nullopt;
}

// The command that continues `state`, for the user to copy.
std::string resume_command(const orch::workflow_state& state, const setup& settings, bool with_answer) {
  std::string command = "switchboard resume " + state.id + " --workflow " + settings.workflow_file.string();
  if (settings.data_explicit) command += " --data " + settings.data_dir.string();
  for (const auto& p : settings.plugins) command += " --plugin " + p.string();
  if (!settings.prompts_dir.empty()) command += " --prompts " + settings.prompts_dir.string();
  if (!settings.store_spec.empty()) command += " --store " + settings.store_spec;
  if (with_answer) command += " --answer \"...\"";
  return command;
}

int finish(const orch::workflow_state& state, const setup& settings) {
  if (settings.json_output) {
    cli::print_json(std::cout, state.to_json());
  }
  std::ostream& notes = settings.json_output ? std::cerr : std::cout;
  switch (state.status) {
    case orch::workflow_status::completed: {
      if (!settings.json_output) std::cout << "\n" << cli::shown_outcome(state) << "\n";
      return cli::exit_ok;
    }
    case orch::workflow_status::awaiting_clarification: {
      const std::string question = state.clarification ? state.clarification->question : std::string{};
      notes << "\nPaused for clarification: " << shown(question) << "\nworkflow id: " << shown(state.id);
      if (settings.store_spec == "memory") {
        notes << "\n(--store memory keeps nothing after this command: run it again with answers, --answer TEXT)\n";
      } else {
        notes << "\nContinue with:\n  " << shown(resume_command(state, settings, true)) << "\n";
      }
      return exit_paused;
    }
    case orch::workflow_status::interrupted: {
      notes << "\nInterrupted" << (interrupting_signal ? " by signal " + std::to_string(interrupting_signal) : "")
            << "; the completed steps are saved.\nworkflow id: " << shown(state.id);
      if (settings.store_spec != "memory")
        notes << "\nContinue with:\n  " << shown(resume_command(state, settings, false));
      notes << "\n";
      return 128 + (interrupting_signal ? interrupting_signal : SIGINT);
    }
    default: {
      const auto* error = state.first_error();
      std::string message = error ? error->message : "the workflow " + std::string(orch::to_string(state.status));
      if (error && !error->agent.empty() && message.find(error->agent) == std::string::npos)
        message = error->agent + ": " + message;
      std::cerr << "\nswitchboard: the workflow " << orch::to_string(state.status) << ": " << shown(message) << "\n";
      return cli::exit_failure;
    }
  }
}

int drive(session& s, const setup& settings, std::deque<std::string> answers,
          const std::function<orch::workflow_handle(orch::hub&)>& first) {
  boost::asio::io_context io;
  orch::hub_options options;
  options.store = s.store;
  options.models = s.models;
  options.logger = make_logger(settings.verbose);
  orch::hub hub{io.get_executor(), *s.registry, options};
  if (!settings.json_output) hub.add_observer(cli::make_progress_printer(std::cout));

  orch::workflow_state state = run_to_completion(io, [&] { return first(hub); });
  while (state.status == orch::workflow_status::awaiting_clarification && state.clarification) {
    // --json keeps standard output one JSON value: answers are taken
    // without an echo (the state lists them) and nobody is asked.
    auto answer = next_answer(state.clarification->question, answers, settings.json_output);
    if (!answer) break;
    orch::resume_options options;
    options.answer = std::move(*answer);
    options.expected_step = state.step;
    state = run_to_completion(io, [&] { return hub.start_resume(s.workflow, state.id, options); });
  }
  return finish(state, settings);
}

void print_header(const session& s, const std::string& request, const setup& settings) {
  if (settings.json_output) return;
  if (s.sample) {
    if (s.llm_backed)
      std::cout << "LLM-backed: " << shown(join_names(s.sample->llm_backed_agents)) << " (prompts from "
                << shown(find_sample_prompts(settings.workflow_file).string()) << ")\n";
    else
      std::cout << sched::offline_note << "\n";
  }
  if (!request.empty()) std::cout << "request: \"" << shown(request) << "\"\n\n";
}

json::value read_input(const std::string& arg) {
  if (fs::exists(arg) && fs::is_regular_file(arg)) {
    const std::string text = read_file(arg);
    if (fs::path(arg).extension() == ".json") {
      boost::system::error_code ec;
      json::value v = json::parse(text, ec, {}, switchboard::protocol::untrusted_parse_options());
      if (ec) throw std::runtime_error(arg + ": malformed JSON (or nested deeper than " +
                                       std::to_string(switchboard::protocol::max_json_depth) + " levels): " +
                                       ec.message());
      if (v.is_object()) return v;
      return json::object{{"request", std::move(v)}};
    }
    std::string trimmed = text;
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.pop_back();
    return json::object{{"request", trimmed}};
  }
  const fs::path p{arg};
  if (p.extension() == ".json" || p.extension() == ".txt")
    throw usage_error("input file '" + arg + "' does not exist");
  return json::object{{"request", arg}};
}

std::string take_value(std::span<const std::string> args, std::size_t& i) {
  if (i + 1 >= args.size()) throw usage_error("option " + args[i] + " needs a value");
  return args[++i];
}

constexpr std::string_view run_usage =
    "usage: switchboard run WORKFLOW --input FILE_OR_TEXT [--data DIR] [--model NAME] [--base-url URL]\n"
    "                       [--plugin PATH]... [--prompts DIR] [--store memory|sqlite:PATH]\n"
    "                       [--answer TEXT]... [--now YYYY-MM-DDTHH:MM] [--json] [--verbose]\n"
    "exit codes: 0 completed, 1 failed, 2 usage, 3 paused for clarification (resume with `switchboard resume`),\n"
    "            128+N interrupted by signal N (resume with `switchboard resume` without --answer)\n";

constexpr std::string_view resume_usage =
    "usage: switchboard resume ID --workflow FILE [--answer TEXT]... [--data DIR] [--model NAME]\n"
    "                          [--base-url URL] [--plugin PATH]... [--prompts DIR]\n"
    "                          [--store memory|sqlite:PATH] [--json] [--verbose]\n"
    "A paused run needs --answer; an interrupted one (its process stopped or died) continues without.\n"
    "The workflow file, plugins, model and data come from this command line, never from the stored run.\n";

int guarded(std::string_view usage, const std::function<int()>& body) {
  try {
    return body();
  } catch (const usage_error& e) {
    std::cerr << "switchboard: " << shown(e.what()) << "\n" << usage;
    return cli::exit_usage;
  } catch (const sched::data_error& e) {
    std::cerr << "switchboard: malformed data: " << shown(e.what()) << "\n";
    return cli::exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "switchboard: " << shown(e.what()) << "\n";
    return cli::exit_failure;
  }
}

// The options run and resume share: what to load, which model, which
// store, how to print. False when `args[i]` is none of them.
bool take_shared_option(std::span<const std::string> args, std::size_t& i, setup& settings) {
  const std::string& a = args[i];
  if (a == "--data") {
    settings.data_dir = absolute(take_value(args, i));
    settings.data_explicit = true;
  } else if (a == "--model") {
    settings.model = take_value(args, i);
  } else if (a == "--base-url") {
    settings.base_url = take_value(args, i);
  } else if (a == "--plugin") {
    settings.plugins.push_back(absolute(take_value(args, i)));
  } else if (a == "--prompts") {
    settings.prompts_dir = absolute(take_value(args, i));
  } else if (a == "--store") {
    settings.store_spec = take_value(args, i);
  } else if (a == "--json") {
    settings.json_output = true;
  } else if (a == "--verbose") {
    settings.verbose = true;
  } else {
    return false;
  }
  return true;
}

int run_run(std::span<const std::string> args) {
  return guarded(run_usage, [&] {
    setup settings;
    std::optional<std::string> input_arg;
    std::optional<std::string> now;
    std::deque<std::string> answers;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::cout << run_usage;
        return cli::exit_ok;
      }
      if (take_shared_option(args, i, settings)) continue;
      if (a == "--input") input_arg = take_value(args, i);
      else if (a == "--answer") answers.push_back(take_value(args, i));
      else if (a == "--now") now = take_value(args, i);
      else if (a.starts_with("-")) throw usage_error("unknown option '" + a + "'");
      else if (settings.workflow_file.empty()) settings.workflow_file = absolute(a);
      else throw usage_error("unexpected argument '" + a + "'");
    }
    if (settings.workflow_file.empty()) throw usage_error("missing the workflow file");
    if (!input_arg) throw usage_error("missing --input FILE_OR_TEXT");
    if (now && !sched::parse_datetime(*now))
      throw usage_error("--now expects YYYY-MM-DDTHH:MM, got '" + *now + "'");

    json::value input = read_input(*input_arg);
    session s = open_session(settings);
    s.store = cli::open_state_store(settings.store_spec);
    auto& object = input.as_object();
    if (now) object["now"] = *now;
    if (s.sample) {
      // The reference time and, for the LLM-backed agents' prompts, the
      // household's data travel with the input (and so with checkpoints).
      if (!object.contains("now")) object["now"] = sched::format_datetime(s.sample->data->now);
      if (s.llm_backed) object["context"] = sched::sample_context(settings.data_explicit ? settings.data_dir
                                                                                          : settings.workflow_file.parent_path() / "data");
    }
    const auto* request = object.if_contains("request");
    print_header(s, request && request->is_string() ? std::string(request->get_string()) : std::string{},
                 settings);
    return drive(s, settings, std::move(answers),
                 [&](orch::hub& hub) { return hub.start(s.workflow, std::move(input)); });
  });
}

int run_resume(std::span<const std::string> args) {
  return guarded(resume_usage, [&] {
    std::string id;
    setup settings;
    std::deque<std::string> answers;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::cout << resume_usage;
        return cli::exit_ok;
      }
      if (take_shared_option(args, i, settings)) continue;
      if (a == "--answer") answers.push_back(take_value(args, i));
      else if (a == "--workflow") settings.workflow_file = absolute(take_value(args, i));
      else if (a.starts_with("-")) throw usage_error("unknown option '" + a + "'");
      else if (id.empty()) id = a;
      else throw usage_error("unexpected argument '" + a + "'");
    }
    if (id.empty()) throw usage_error("missing the workflow id");

    auto store = cli::open_state_store(settings.store_spec);
    const auto stored = cli::wait_for(store->load(id));
    if (!stored)
      throw std::runtime_error("no workflow with id '" + id + "' in the store" +
                               (settings.store_spec.empty() ? std::string{} : " " + settings.store_spec) +
                               " (it was started with another --store, or pruned)");
    const auto state = orch::workflow_state::from_checkpoint(*stored);
    if (settings.workflow_file.empty())
      throw usage_error("missing --workflow FILE: the file of workflow '" + state.workflow_name +
                        "' that run " + id + " was started with (a stored run never decides which files "
                        "are loaded)");
    session s = open_session(settings);
    s.store = store;
    print_header(s, {}, settings);
    orch::resume_options options;
    options.expected_step = state.step;
    if (!answers.empty()) {
      options.answer = std::move(answers.front());
      answers.pop_front();
      if (!settings.json_output && state.clarification)
        std::cout << "? " << shown(state.clarification->question) << "\n> " << shown(*options.answer) << "\n\n";
    } else if (!settings.json_output) {
      std::cout << "continuing workflow " << shown(id) << " after step " << state.step << " ("
                << orch::to_string(state.status) << ")\n\n";
    }
    return drive(s, settings, std::move(answers),
                 [&](orch::hub& hub) { return hub.start_resume(s.workflow, id, options); });
  });
}

const cli::command_registration run_registration{
    "run", "run a workflow file, showing each step, route and the outcome", &run_run};
const cli::command_registration resume_registration{
    "resume", "continue a workflow paused for clarification, or one that was interrupted", &run_resume};

}  // namespace
