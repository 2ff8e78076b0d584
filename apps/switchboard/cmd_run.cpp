// switchboard run / resume — runs any workflow file step by step, showing
// each agent's confidence, explanation and the route taken, then the outcome.
//
// What a workflow uses comes from the workflow file (its "schemas",
// "plugins", "prompts" and "mcp_servers", relative to the file), the command
// line and the environment (switchboard/host/workflow_loader.hpp). The tool
// knows no workflow in particular: what a workflow's agents read beyond the
// request comes with the input (--input-field KEY=VALUE, --input-file
// FILE.json), what its plugins need with their configuration in the
// workflow file. A stored run is data, not authority:
// resume takes all of it from its own command line, never from the
// checkpoint. SIGINT, SIGTERM and SIGHUP stop a run between steps and leave
// it resumable (exit 128 + the signal).
//
// Exit codes: 0 completed, 1 failed (or refused: another process owns the
// run, the definition changed), 2 usage (bad option, missing file), 3 paused
// for clarification with no answer available, 4 awaiting approval of tool
// calls with no decision available, 128 + N interrupted by signal N.
#include "command.hpp"
#include "run_session.hpp"
#include "state_store.hpp"
#include "terminal_output.hpp"

#include <switchboard/host/store.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>
#include <switchboard/protocol/limits.hpp>

#include <boost/json/parse.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace cli = switchboard::cli;
namespace orch = switchboard::orchestrator;
namespace host = switchboard::host;
using switchboard::cli::shown;
using switchboard::cli::usage_error;
using switchboard::cli::absolute_path;
using switchboard::cli::option_value;

// The largest input file read: a request is text a person wrote, and a JSON
// input carries a few fields, not a data set.
constexpr std::uintmax_t max_input_file_bytes = 1024 * 1024;

// At most max_input_file_bytes of a regular file, read from one open
// descriptor (a file that grows after a size check is still bounded).
std::string read_input_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) throw usage_error("input file '" + file.string() + "' does not exist");
  if (!fs::is_regular_file(file, ec))
    throw usage_error("input file '" + file.string() + "' is not a regular file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw usage_error("cannot read input file '" + file.string() + "': " + std::strerror(errno));
  std::string text(max_input_file_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > max_input_file_bytes)
    throw usage_error("input file '" + file.string() + "' is larger than " + std::to_string(max_input_file_bytes) +
                      " bytes");
  return text;
}

// FILE.json is the whole input (an object; anything else becomes its
// "request"); any other file is the request text.
json::object input_from_file(const fs::path& file) {
  std::string text = read_input_file(file);
  if (file.extension() == ".json") {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec, {}, switchboard::protocol::untrusted_parse_options());
    if (ec)
      throw std::runtime_error(file.string() + ": malformed JSON (or nested deeper than " +
                               std::to_string(switchboard::protocol::max_json_depth) + " levels): " + ec.message());
    if (v.is_object()) return std::move(v.get_object());
    return json::object{{"request", std::move(v)}};
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return json::object{{"request", std::move(text)}};
}

// --input TEXT is the request, always text: a script passing a user's words
// must not have "@/home/me/.ssh/id_rsa" read and sent to a model. Only
// --input-file FILE reads a file. --input-field KEY=VALUE sets one more
// string field of the input (over the file's), such as the reference time
// an agent reads.
struct input_choice {
  std::optional<std::string> text;
  std::optional<fs::path> file;
  std::map<std::string, std::string> fields;

  json::object build() const {
    json::object input = file ? input_from_file(*file) : json::object{{"request", *text}};
    for (const auto& [key, value] : fields) input[key] = value;
    return input;
  }
};

// KEY=VALUE of --input-field, into `input`.
void take_input_field(const std::string& text, input_choice& input) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw usage_error("--input-field expects KEY=VALUE, got '" + text + "'");
  std::string key = text.substr(0, eq);
  if (key == "request") throw usage_error("--input-field: the request is given with --input or --input-file");
  input.fields[std::move(key)] = text.substr(eq + 1);
}

std::string usage_of_run() {
  return "usage: switchboard run WORKFLOW (--input TEXT | --input-file FILE) [options]\n"
         "  --input TEXT          the request, as text (never read as a file name)\n"
         "  --input-file FILE     the request from FILE: FILE.json is the whole workflow input\n"
         "  --answer TEXT         a clarification answer (repeatable, used in order); more answers are\n"
         "                        read from standard input when it is not a terminal, one per line\n"
         "  --input-field KEY=VALUE  sets the input's string field KEY besides the request (repeatable;\n"
         "                        over the fields of --input-file), e.g. a reference time its agents read\n"
         "  --reset               the workflow's plugins restore their state to its seed first (for this\n"
         "                        run only: a resume does not repeat it)\n" +
         cli::run_options_usage() + std::string(cli::run_exit_codes_usage);
}

std::string usage_of_resume() {
  return "usage: switchboard resume ID --workflow FILE [--answer TEXT]... [--approve | --reject [--reason TEXT]]\n"
         "                        [options]\n"
         "A paused run needs an answer (--answer, or a line on standard input); a run awaiting approval of\n"
         "tool calls needs --approve or --reject (with --reason, told to the model); an interrupted one (its\n"
         "process stopped or died) continues without. The workflow file, plugins, prompts, schemas and\n"
         "model come from this command line, never from the stored run.\n" +
         cli::run_options_usage() + std::string(cli::run_exit_codes_usage);
}

int run_run(std::span<const std::string> args) {
  const std::string usage = usage_of_run();
  return cli::guarded(usage, [&] {
    cli::run_settings settings;
    input_choice input;
    std::deque<std::string> answers;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::cout << usage;
        return cli::exit_ok;
      }
      if (cli::take_run_option(args, i, settings)) continue;
      if (a == "--input") input.text = option_value(args, i);
      else if (a == "--input-file") input.file = absolute_path(option_value(args, i));
      else if (a == "--answer") answers.push_back(option_value(args, i));
      else if (a == "--input-field") take_input_field(option_value(args, i), input);
      else if (a == "--reset") settings.workflow.loader.reset_state = true;
      else if (a.starts_with("-")) throw usage_error("unknown option '" + a + "'");
      else if (settings.workflow.workflow_file.empty()) settings.workflow.workflow_file = absolute_path(a);
      else throw usage_error("unexpected argument '" + a + "'");
    }
    if (settings.workflow.workflow_file.empty()) throw usage_error("missing the workflow file");
    if (!input.text && !input.file) throw usage_error("missing --input TEXT or --input-file FILE");
    if (input.text && input.file) throw usage_error("give --input or --input-file, not both");

    json::object object = input.build();
    // The workflow first: what is wrong with the user's own files is named
    // before a store is opened (or created).
    cli::session s = cli::open_session(settings, nullptr);
    s.store = cli::open_state_store(settings.store_url);
    const auto* request = object.if_contains("request");
    cli::print_header(s, request && request->is_string() ? std::string(request->get_string()) : std::string{},
                      settings);
    cli::answer_source source(std::move(answers));
    return cli::drive(s, settings, source,
                      [&](orch::hub& hub) { return hub.start(s.workflow, json::value(std::move(object))); });
  });
}

int run_resume(std::span<const std::string> args) {
  const std::string usage = usage_of_resume();
  return cli::guarded(usage, [&] {
    std::string id;
    cli::run_settings settings;
    std::deque<std::string> answers;
    std::optional<orch::approval_decision> decision;
    std::optional<std::string> reason;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::cout << usage;
        return cli::exit_ok;
      }
      if (cli::take_run_option(args, i, settings)) continue;
      if (a == "--answer") answers.push_back(option_value(args, i));
      else if (a == "--approve" || a == "--reject") {
        if (decision && decision->approve != (a == "--approve")) throw usage_error("give --approve or --reject, not both");
        if (!decision) decision.emplace();
        decision->approve = a == "--approve";
      } else if (a == "--reason") reason = option_value(args, i);
      else if (a == "--workflow") settings.workflow.workflow_file = absolute_path(option_value(args, i));
      else if (a.starts_with("-")) throw usage_error("unknown option '" + a + "'");
      else if (id.empty()) id = a;
      else throw usage_error("unexpected argument '" + a + "'");
    }
    if (id.empty()) throw usage_error("missing the workflow id");
    if (reason && (!decision || decision->approve)) throw usage_error("--reason goes with --reject");
    if (decision && reason) decision->reason = *reason;

    auto store = cli::open_state_store(settings.store_url);
    const auto stored = cli::wait_for(store->load(id));
    const std::string shown_store = host::printable_store_url(settings.store_url);
    if (!stored)
      throw std::runtime_error("no workflow with id '" + id + "' in the store" +
                               (settings.store_url.empty() ? std::string{} : " " + shown_store) +
                               " (it was started with another --store, or pruned)");
    const auto state = orch::workflow_state::from_checkpoint(*stored);
    if (settings.workflow.workflow_file.empty())
      throw usage_error("missing --workflow FILE: the file of workflow '" + state.workflow_name + "' that run " +
                        id + " was started with (a stored run never decides which files are loaded)");
    cli::session s = cli::open_session(settings, store);
    cli::print_header(s, {}, settings);
    cli::answer_source source(std::move(answers));
    orch::resume_options options = host::resume_options_for(state);
    const auto awaited = host::awaited_by(state);
    if (awaited == host::awaited_input::decision) {
      if (!decision) decision = cli::ask_decision(*state.approval, settings.json_output);
      if (!decision) {
        // No decision: the run stays paused, reported as it paused (exit 4),
        // also when it was interrupted while a decision was being saved.
        std::cerr << "switchboard: run " << shown(id) << " is awaiting approval of tool calls: resume it with "
                  << "--approve or --reject [--reason TEXT]\n";
        auto waiting = state;
        waiting.status = orch::workflow_status::awaiting_approval;
        return cli::report(waiting, settings);
      }
      options.decision = decision;
      if (!settings.json_output) {
        std::cout << (decision->approve ? "approved" : "rejected") << ": the pending tool calls of workflow "
                  << shown(id) << "\n\n";
      }
      return cli::drive(s, settings, source,
                        [&](orch::hub& hub) { return hub.start_resume(s.workflow, id, options); });
    }
    if (decision) {
      throw usage_error("run '" + id + "' is " + std::string(orch::to_string(state.status)) +
                        " and awaits no approval; --approve and --reject apply only to a run awaiting approval");
    }
    const bool paused = awaited == host::awaited_input::answer;
    // Interrupted while its question was being answered: the question stands
    // and may be answered now, or the run continues to ask it again.
    if (paused || awaited == host::awaited_input::optional_answer) {
      options.answer = source.next(state.clarification->question, settings.json_output);
      if (!options.answer && paused) {
        // No answer: the run stays paused, reported as a run that paused is (exit 3).
        std::cerr << "switchboard: run " << shown(id) << " is awaiting clarification and needs an answer "
                  << "(--answer TEXT, or a line on standard input)\n";
        return cli::report(state, settings);
      }
    }
    if (!paused && !settings.json_output) {
      // Any --answer not used here is kept for a question a later step may ask.
      std::cout << "continuing workflow " << shown(id) << " after step " << state.step << " ("
                << orch::to_string(state.status) << ")\n\n";
    }
    return cli::drive(s, settings, source,
                      [&](orch::hub& hub) { return hub.start_resume(s.workflow, id, options); });
  });
}

const cli::command_registration run_registration{
    "run", "run a workflow file, showing each step, route and the outcome", &run_run};
const cli::command_registration resume_registration{
    "resume", "continue a workflow paused for clarification, or one that was interrupted", &run_resume};

}  // namespace
