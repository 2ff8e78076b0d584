// switchboard run / resume — runs a workflow file step by step, showing each
// agent's confidence, explanation and the route taken, then the outcome.
//
//   switchboard run WORKFLOW --input FILE_OR_TEXT [--data DIR] [--model NAME]
//       [--base-url URL] [--plugin PATH]... [--prompts DIR] [--store SPEC]
//       [--answer TEXT]... [--now YYYY-MM-DDTHH:MM] [--json] [--verbose]
//   switchboard resume ID --answer TEXT [--store SPEC] [--json] [--verbose]
//
// The scheduling sample's agents are always offered as built-ins (origin
// "builtin:scheduling"), configured by --data (default: data/ next to the
// workflow file). Without a model they are native C++; with one
// (OPENAI_BASE_URL/OPENAI_API_KEY or --model) nl_parser, resolution and query
// are LLM-backed agents from the prompt files.
//
// Exit codes: 0 completed, 1 failed, 2 usage (bad option, missing file),
// 3 paused for clarification with no answer available (the output names the
// workflow id and the `switchboard resume` command).
#include "command.hpp"

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
#include <switchboard/scheduling/agents.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cctype>
#include <cstdio>
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
using switchboard::cli::usage_error;

constexpr int exit_paused = 3;

// What a run needs to be rebuilt on resume; stored in the workflow input
// under "_switchboard" so that `switchboard resume ID` needs nothing else.
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

  json::object to_json() const {
    json::array plugin_list;
    for (const auto& p : plugins) plugin_list.emplace_back(p.string());
    return {{"workflow_file", workflow_file.string()}, {"data_dir", data_dir.string()},
            {"data_explicit", data_explicit}, {"plugins", std::move(plugin_list)},
            {"prompts_dir", prompts_dir.string()}, {"model", model}, {"base_url", base_url}};
  }
  static setup from_json(const json::value& v) {
    setup s;
    const auto* o = v.if_object();
    if (!o) throw std::runtime_error("the stored workflow has no run settings (\"_switchboard\"); "
                                     "it was not started by `switchboard run`");
    auto text = [&](std::string_view key) {
      const auto* f = o->if_contains(key);
      return f && f->is_string() ? std::string(f->get_string()) : std::string{};
    };
    s.workflow_file = text("workflow_file");
    s.data_dir = text("data_dir");
    if (const auto* f = o->if_contains("data_explicit"); f && f->is_bool()) s.data_explicit = f->get_bool();
    if (const auto* f = o->if_contains("plugins"); f && f->is_array())
      for (const auto& p : f->get_array())
        if (p.is_string()) s.plugins.emplace_back(std::string(p.get_string()));
    s.prompts_dir = text("prompts_dir");
    s.model = text("model");
    s.base_url = text("base_url");
    return s;
  }
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

std::string default_store_spec() {
  fs::path dir;
  if (const char* state = std::getenv("SWITCHBOARD_STATE_DIR"); state && *state) {
    dir = state;
  } else if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) {
    dir = fs::path(xdg) / "switchboard";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = fs::path(home) / ".local" / "state" / "switchboard";
  } else {
    dir = fs::temp_directory_path() / "switchboard";
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create the state directory '" + dir.string() + "': " + ec.message() +
                                   " (set SWITCHBOARD_STATE_DIR or pass --store sqlite:PATH)");
  return "sqlite:" + (dir / "workflows.db").string();
}

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
  if (verbose) {
    auto logger = spdlog::stderr_color_mt("switchboard-run");
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
    return logger;
  }
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
  out.store = orch::open_checkpoint_store(s.store_spec.empty() ? default_store_spec() : s.store_spec);
  return out;
}

// Prints each step as the hub reports it.
class progress_printer final : public orch::observer {
 public:
  explicit progress_printer(std::ostream& out) : out_(out) {}

  void on_event(const orch::event& e) noexcept override {
    try {
      print(e);
    } catch (...) {
      // Printing must never break the run.
    }
  }

 private:
  void print(const orch::event& e) {
    using orch::event_kind;
    switch (e.kind) {
      case event_kind::step_completed:
        out_ << "[" << e.step << "] " << e.agent << "  (confidence " << format(e.envelope->confidence)
             << ")\n    " << e.envelope->explanation << "\n";
        break;
      case event_kind::step_failed:
        out_ << "[" << e.step << "] " << e.agent << "  FAILED: "
             << (e.error ? e.error->message : std::string("unknown error")) << "\n";
        break;
      case event_kind::routed:
        out_ << "    -> " << e.target << "  (" << e.condition << ")\n";
        break;
      case event_kind::resumed:
        out_ << "    (resumed with the answer)\n";
        break;
      default:
        break;
    }
    out_.flush();
  }

  static std::string format(double v) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.2f", v);
    return buffer;
  }

  std::ostream& out_;
};

template <typename Awaitable>
orch::workflow_state run_to_completion(boost::asio::io_context& io, Awaitable operation) {
  std::optional<orch::workflow_state> result;
  std::exception_ptr failure;
  boost::asio::co_spawn(io, std::move(operation),
                        [&](std::exception_ptr e, orch::workflow_state state) {
                          if (e) failure = e;
                          else result = std::move(state);
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
    if (!quiet) std::cout << "\n? " << question << "\n> " << answer << "   (from --answer)\n\n";
    return answer;
  }
  if (isatty(STDIN_FILENO) && !quiet) {
    std::cout << "\n? " << question << "\n> " << std::flush;
    std::string answer;
    if (std::getline(std::cin, answer) && !answer.empty()) {
      std::cout << "\n";
      return answer;
    }
  }
  return std::nullopt;
}

int finish(const orch::workflow_state& state, const session& s, const setup& settings) {
  if (settings.json_output) {
    std::cout << json::serialize(state.to_json()) << "\n";
  }
  switch (state.status) {
    case orch::workflow_status::completed: {
      if (!settings.json_output) {
        const std::string outcome = sched::describe_outcome(state);
        std::cout << "\n" << (outcome.empty() && state.result ? state.result->explanation : outcome) << "\n";
      }
      s.store->erase(state.id);
      return cli::exit_ok;
    }
    case orch::workflow_status::awaiting_clarification: {
      const std::string question = state.clarification ? state.clarification->question : std::string{};
      (settings.json_output ? std::cerr : std::cout)
          << "\nPaused for clarification: " << question << "\nworkflow id: " << state.id
          << "\nContinue with:\n  switchboard resume " << state.id << " --answer \"...\""
          << (settings.store_spec.empty() ? "" : " --store " + settings.store_spec) << "\n";
      return exit_paused;
    }
    default: {
      const auto* error = state.first_error();
      std::string message = error ? error->message : "the workflow " + std::string(orch::to_string(state.status));
      if (error && !error->agent.empty() && message.find(error->agent) == std::string::npos)
        message = error->agent + ": " + message;
      std::cerr << "\nswitchboard: the workflow " << orch::to_string(state.status) << ": " << message << "\n";
      s.store->erase(state.id);
      return cli::exit_failure;
    }
  }
}

int drive(session& s, const setup& settings, std::deque<std::string> answers,
          const std::function<orch::workflow_state(orch::hub&, boost::asio::io_context&)>& first) {
  boost::asio::io_context io;
  orch::hub_options options;
  options.store = s.store;
  options.models = s.models;
  options.logger = make_logger(settings.verbose);
  orch::hub hub{io.get_executor(), *s.registry, options};
  if (!settings.json_output) hub.add_observer(std::make_shared<progress_printer>(std::cout));

  orch::workflow_state state = first(hub, io);
  while (state.status == orch::workflow_status::awaiting_clarification && state.clarification) {
    auto answer = next_answer(state.clarification->question, answers, settings.json_output && answers.empty());
    if (!answer) break;
    state = run_to_completion(io, hub.resume(s.workflow, state.id, std::move(*answer)));
  }
  return finish(state, s, settings);
}

void print_header(const session& s, const std::string& request, const setup& settings) {
  if (settings.json_output) return;
  if (s.sample) {
    if (s.llm_backed)
      std::cout << "LLM-backed: " << join_names(s.sample->llm_backed_agents) << " (prompts from "
                << find_sample_prompts(settings.workflow_file).string() << ")\n";
    else
      std::cout << sched::offline_note << "\n";
  }
  if (!request.empty()) std::cout << "request: \"" << request << "\"\n\n";
}

json::value read_input(const std::string& arg) {
  if (fs::exists(arg) && fs::is_regular_file(arg)) {
    const std::string text = read_file(arg);
    if (fs::path(arg).extension() == ".json") {
      boost::system::error_code ec;
      json::value v = json::parse(text, ec);
      if (ec) throw std::runtime_error(arg + ": malformed JSON: " + ec.message());
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
    "exit codes: 0 completed, 1 failed, 2 usage, 3 paused for clarification (resume with `switchboard resume`)\n";

constexpr std::string_view resume_usage =
    "usage: switchboard resume ID --answer TEXT [--store memory|sqlite:PATH] [--json] [--verbose]\n";

int guarded(std::string_view usage, const std::function<int()>& body) {
  try {
    return body();
  } catch (const usage_error& e) {
    std::cerr << "switchboard: " << e.what() << "\n" << usage;
    return cli::exit_usage;
  } catch (const sched::data_error& e) {
    std::cerr << "switchboard: malformed data: " << e.what() << "\n";
    return cli::exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "switchboard: " << e.what() << "\n";
    return cli::exit_failure;
  }
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
      if (a == "--input") input_arg = take_value(args, i);
      else if (a == "--data") {
        settings.data_dir = absolute(take_value(args, i));
        settings.data_explicit = true;
      } else if (a == "--model") settings.model = take_value(args, i);
      else if (a == "--base-url") settings.base_url = take_value(args, i);
      else if (a == "--plugin") settings.plugins.push_back(absolute(take_value(args, i)));
      else if (a == "--prompts") settings.prompts_dir = absolute(take_value(args, i));
      else if (a == "--store") settings.store_spec = take_value(args, i);
      else if (a == "--answer") answers.push_back(take_value(args, i));
      else if (a == "--now") now = take_value(args, i);
      else if (a == "--json") settings.json_output = true;
      else if (a == "--verbose") settings.verbose = true;
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
    auto& object = input.as_object();
    if (now) object["now"] = *now;
    if (s.sample) {
      // The reference time and, for the LLM-backed agents' prompts, the
      // household's data travel with the input (and so with checkpoints).
      if (!object.contains("now")) object["now"] = sched::format_datetime(s.sample->data->now);
      if (s.llm_backed) object["context"] = sched::sample_context(settings.data_explicit ? settings.data_dir
                                                                                          : settings.workflow_file.parent_path() / "data");
    }
    object["_switchboard"] = settings.to_json();
    const auto* request = object.if_contains("request");
    print_header(s, request && request->is_string() ? std::string(request->get_string()) : std::string{},
                 settings);
    return drive(s, settings, std::move(answers), [&](orch::hub& hub, boost::asio::io_context& io) {
      return run_to_completion(io, hub.run(s.workflow, std::move(input)));
    });
  });
}

int run_resume(std::span<const std::string> args) {
  return guarded(resume_usage, [&] {
    std::string id;
    std::string store_spec;
    bool json_output = false;
    bool verbose = false;
    std::deque<std::string> answers;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::cout << resume_usage;
        return cli::exit_ok;
      }
      if (a == "--answer") answers.push_back(take_value(args, i));
      else if (a == "--store") store_spec = take_value(args, i);
      else if (a == "--json") json_output = true;
      else if (a == "--verbose") verbose = true;
      else if (a.starts_with("-")) throw usage_error("unknown option '" + a + "'");
      else if (id.empty()) id = a;
      else throw usage_error("unexpected argument '" + a + "'");
    }
    if (id.empty()) throw usage_error("missing the workflow id");
    if (answers.empty()) throw usage_error("missing --answer TEXT");

    auto store = orch::open_checkpoint_store(store_spec.empty() ? default_store_spec() : store_spec);
    const auto checkpoint = store->load(id);
    if (!checkpoint)
      throw std::runtime_error("no paused workflow with id '" + id + "' in the store" +
                               (store_spec.empty() ? std::string{} : " " + store_spec) +
                               " (it may have completed already, or was started with another --store)");
    boost::system::error_code ec;
    const json::value state_json = json::parse(checkpoint->state_json, ec);
    if (ec) throw std::runtime_error("the checkpoint of '" + id + "' is not valid JSON: " + ec.message());
    const auto stored = orch::workflow_state::from_json(state_json);
    const auto* input = stored.input.if_object();
    setup settings = setup::from_json(input && input->contains("_switchboard") ? input->at("_switchboard")
                                                                               : json::value{});
    settings.store_spec = store_spec;
    settings.json_output = json_output;
    settings.verbose = verbose;
    session s = open_session(settings);
    s.store = store;
    print_header(s, {}, settings);
    std::string first = std::move(answers.front());
    answers.pop_front();
    if (!json_output && stored.clarification)
      std::cout << "? " << stored.clarification->question << "\n> " << first << "\n\n";
    return drive(s, settings, std::move(answers), [&](orch::hub& hub, boost::asio::io_context& io) {
      return run_to_completion(io, hub.resume(s.workflow, id, first));
    });
  });
}

const cli::command_registration run_registration{
    "run", "run a workflow file, showing each step, route and the outcome", &run_run};
const cli::command_registration resume_registration{
    "resume", "continue a workflow paused for clarification", &run_resume};

}  // namespace
