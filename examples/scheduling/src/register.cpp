// Registers the sample's agents and the calendar tools they call: the four
// always-native agents, and the three language agents either rule-based
// (offline) or from prompt files (with a model), the latter wrapped so their
// input carries the reference time (and, for prompt versions before v3, the
// household's calendar, which v3 reads through the tools).
#include <switchboard/scheduling/agents.hpp>
#include <switchboard/scheduling/tools.hpp>

#include "detail.hpp"

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/agents/plugin.hpp>
#include <switchboard/agents/prompt_library.hpp>
#include <switchboard/agents/tool_registry.hpp>

#include <algorithm>
#include <functional>

namespace switchboard::scheduling {
namespace {

// Only the sample's own prompt files: the directory may hold others.
agents::prompt_library load_sample_prompts(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir))
    throw agents::agent_error(agents::agent_errc::prompt_file_invalid,
                              dir.string() + ": not a directory (expected the sample's prompt files "
                                             "nl_parser.v<N>.json, resolution.v<N>.json, query.v<N>.json)");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto parsed = agents::parse_prompt_file_name(entry.path().filename().string());
    const auto names = language_agent_names();
    if (parsed && std::ranges::find(names, parsed->first) != names.end()) files.push_back(entry.path());
  }
  std::ranges::sort(files);
  agents::prompt_library library;
  for (const auto& file : files) library.load_file(file);
  for (const auto& name : language_agent_names())
    if (!library.find(name))
      throw agents::agent_error(agents::agent_errc::prompt_file_invalid,
                                dir.string() + ": no prompt file for " + name + " (expected " + name +
                                    ".v<N>.json)");
  return library;
}

// An LLM-backed agent whose input also carries the reference time as `now`
// and, for prompt versions without tools (before v3), the household's data
// (members, calendars, resources, rules) as `context`; v3 calls the calendar
// tools instead. Added per call, so checkpoints keep only the request. Everything else of the call (tool journal, approvals, streaming)
// passes through to the inner agent, and what it records comes back.
class with_household final : public agents::agent {
 public:
  with_household(std::shared_ptr<agents::llm_agent> inner, std::shared_ptr<calendar> cal,
                 std::shared_ptr<const agents::tool_registry> tools)
      : inner_(std::move(inner)), calendar_(std::move(cal)), tools_(std::move(tools)) {}

  std::string_view name() const noexcept override { return inner_->name(); }
  std::string_view description() const noexcept override { return inner_->description(); }
  std::string output_schema() const override { return inner_->output_schema(); }
  std::optional<std::string> input_schema() const override { return inner_->input_schema(); }
  std::string prompt_version() const override { return inner_->prompt_version(); }
  bool uses_tools() const noexcept override { return inner_->uses_tools(); }
  // The calendar tools read and write a SQLite file on the caller's thread:
  // the hub runs an agent that calls them on its blocking pool.
  bool blocks_thread() const noexcept override { return inner_->uses_tools(); }

  boost::asio::awaitable<protocol::envelope> run(agents::agent_context& context) override {
    boost::json::value input = context.input;
    if (input.is_string()) input = boost::json::object{{"request", input.get_string()}};
    if (auto* object = input.if_object()) add_household(*object, context.prompt_version);
    agents::agent_context inner{.input = input,
                                .outputs = context.outputs,
                                .additional_instructions = context.additional_instructions,
                                .clarification_answers = context.clarification_answers,
                                .models = context.models,
                                .logger = context.logger,
                                .prompt_version = context.prompt_version,
                                .usage = {},
                                .used_prompt_version = {},
                                .applied_policies = {}};
    inner.workflow_id = context.workflow_id;
    inner.journal = context.journal;
    inner.needs_approval = context.needs_approval;
    inner.stream = context.stream;
    inner.traces = context.traces;  // its model requests are the step's chat spans
    std::exception_ptr failure;
    protocol::envelope answer;
    try {
      answer = co_await inner_->run(inner);
    } catch (...) {
      failure = std::current_exception();
    }
    context.usage = inner.usage;
    context.used_prompt_version = std::move(inner.used_prompt_version);
    context.applied_policies = std::move(inner.applied_policies);
    context.raw_text = std::move(inner.raw_text);
    context.model_attempts = std::move(inner.model_attempts);
    context.tool_calls = std::move(inner.tool_calls);
    if (failure) std::rethrow_exception(failure);
    co_return answer;
  }

 private:
  // The reference time, and for a prompt version that reads the calendars
  // from its input (no tools) the household as it is now.
  void add_household(boost::json::object& input, const std::string& requested_version) const {
    const bool reads_tools = reads_through_tools(requested_version);
    // Checked before a model reads it, as the native agents check it.
    const auto given_now = detail::input_now(input);
    if (reads_tools && given_now) return;
    const household now = calendar_->snapshot();
    if (!given_now) input["now"] = format_datetime(now.now);
    if (!reads_tools) input["context"] = sample_context(now);
  }

  bool reads_through_tools(const std::string& requested_version) const {
    try {
      return !inner_->select(requested_version).tools.empty();
    } catch (const agents::agent_error&) {
      return false;  // an unknown version: the inner agent says so when it runs
    }
  }

  std::shared_ptr<agents::llm_agent> inner_;
  std::shared_ptr<calendar> calendar_;
  std::shared_ptr<const agents::tool_registry> tools_;  // what inner_'s options point to
};

using add_fn = std::function<void(std::shared_ptr<agents::agent>, const std::string& origin)>;

sample_registration register_into(const sample_options& options,
                                  const std::shared_ptr<protocol::schema_registry>& schemas, const add_fn& add) {
  sample_registration out;
  out.data = std::make_shared<const household>(load_household(options.data_dir));
  out.calendar = options.calendar_file.empty()
                     ? calendar::in_memory(*out.data)
                     : calendar::open_file(options.calendar_file, *out.data, options.reset_calendar);
  for (const auto& id : sample_schema_ids())
    if (!schemas->find(id)) schemas->load_file(options.schemas_dir / (id + ".json"));
  out.tools = make_calendar_tool_registry(
      out.calendar, {.confirm_changes = options.confirm_bookings, .booking_hold = options.booking_hold});
  const std::string origin{builtin_origin};
  auto add_native = [&](std::shared_ptr<agents::agent> a) {
    out.native_agents.emplace_back(a->name());
    add(std::move(a), origin);
  };
  add_native(make_scheduling(out.calendar));
  add_native(make_resource_manager(out.calendar));
  add_native(make_conflict_detection(out.calendar));
  add_native(make_booking(out.calendar, out.tools));
  if (options.llm_backed) {
    const auto library = load_sample_prompts(options.prompts_dir);
    agents::llm_agent_options llm_options;
    llm_options.tools = out.tools.get();
    for (const auto& name : language_agent_names()) {
      auto agent = agents::llm_agent::from_library(library, name, schemas, llm_options);
      const std::string origin_file = "prompt:" + agent->newest().path.string();
      add(std::make_shared<with_household>(std::move(agent), out.calendar, out.tools), origin_file);
      out.llm_backed_agents.push_back(name);
    }
    return out;
  }
  add_native(make_nl_parser(out.calendar, out.tools));
  add_native(make_resolution(out.calendar, out.tools));
  add_native(make_query(out.calendar, out.tools));
  return out;
}

}  // namespace

std::vector<std::string> language_agent_names() { return {"nl_parser", "resolution", "query"}; }

std::vector<std::string> sample_schema_ids() {
  return {"nl_parser.output@1",  "scheduling.output@1", "resource_manager.output@1", "conflict_detection.output@1",
          "resolution.output@1", "booking.output@1",    "query.output@1"};
}

sample_registration register_sample_agents(agents::agent_registry& registry, const sample_options& options) {
  return register_into(options, registry.schemas_ptr(),
                       [&](std::shared_ptr<agents::agent> a, const std::string& origin) {
                         registry.add(std::move(a), origin);
                       });
}

sample_registration register_sample_agents(agents::plugin_registrar& registrar, const sample_options& options) {
  auto schemas = registrar.host().schemas ? registrar.host().schemas
                                          : std::make_shared<protocol::schema_registry>();
  auto out = register_into(options, schemas, [&](std::shared_ptr<agents::agent> a, const std::string&) {
    registrar.add(std::move(a));
  });
  // The host's tool registry gets the same tools, so that `switchboard
  // tools` lists them and the user's own prompt files may name them.
  for (const auto& info : out.tools->list()) registrar.add_tool(out.tools->find_shared(info.name));
  // The loader registers the schemas an agent declares from the host's
  // registry; hand over the ones this plugin loaded itself.
  for (const auto& id : sample_schema_ids())
    if (const auto schema = schemas->find(id)) registrar.add_schema(id, schema->json());
  return out;
}

}  // namespace switchboard::scheduling
