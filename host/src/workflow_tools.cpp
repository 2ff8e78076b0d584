// Workflows as MCP tools (workflow_tools.hpp): a hub per workflow, the
// run of one tools/call from its start (or resume) through the pauses the
// client can answer by elicitation, progress per step, cancellation.
#include <switchboard/host/workflow_tools.hpp>

#include "workflow_tool_results.hpp"

#include <switchboard/host/error.hpp>
#include <switchboard/orchestrator/events.hpp>
#include <switchboard/protocol/limits.hpp>

#include <boost/json/parse.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <sstream>

namespace switchboard::host {

namespace asio = boost::asio;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace {

constexpr std::size_t max_shown_text = 300;

std::string cut(std::string_view text) {
  return text.size() > max_shown_text ? std::string(text.substr(0, max_shown_text)) + "..." : std::string(text);
}

// One progress line per step of the runs being watched, handed to the
// tool call that started them.
class progress_relay final : public orch::observer {
 public:
  using target = std::function<void(std::string)>;

  // Watches run `id` while the returned guard lives.
  std::shared_ptr<void> watch(const std::string& id, target to) {
    {
      std::lock_guard lock(mutex_);
      targets_[id] = std::move(to);
    }
    return std::shared_ptr<void>(nullptr, [this, id](void*) {
      std::lock_guard lock(mutex_);
      targets_.erase(id);
    });
  }

  void on_event(const orch::event& e) noexcept override {
    try {
      std::string message = describe(e);
      if (message.empty()) return;
      std::lock_guard lock(mutex_);
      const auto it = targets_.find(std::string(e.workflow_id));
      if (it != targets_.end()) it->second(std::move(message));
    } catch (...) {
      // A progress line is never worth a run: dropped.
    }
  }

 private:
  static std::string describe(const orch::event& e) {
    const std::string step = "step " + std::to_string(e.step) + " " + std::string(e.node);
    switch (e.kind) {
      case orch::event_kind::step_completed: {
        char confidence[16];
        std::snprintf(confidence, sizeof confidence, "%.2f", e.envelope ? e.envelope->confidence : 0.0);
        return step + " (" + std::string(e.agent) + "): confidence " + confidence +
               (e.envelope ? ": " + cut(e.envelope->explanation) : std::string{});
      }
      case orch::event_kind::step_failed:
        return step + " failed" + (e.error ? ": " + cut(e.error->message) : std::string{});
      case orch::event_kind::paused:
        return "paused for a clarification: " + cut(e.question);
      case orch::event_kind::approval_requested:
        return "waiting for approval: " + cut(e.question);
      default:
        return {};
    }
  }

  std::mutex mutex_;
  std::map<std::string, target> targets_;
};

struct served_workflow {
  std::shared_ptr<opened_workflow> opened;
  std::string description;
  std::unique_ptr<orch::hub> hub;
  std::optional<protocol::compiled_schema> entry_schema;

  const std::string& name() const { return opened->workflow->name(); }
};

// The input schema the workflow's entry agent declares, if it has one the
// registry knows.
std::optional<protocol::compiled_schema> entry_input_schema(const opened_workflow& opened) {
  const auto& definition = opened.workflow->definition();
  const auto* entry = definition.find(definition.entry);
  if (!entry || entry->kind != orch::node_kind::agent) return std::nullopt;
  const auto* agent = opened.agents.registry->find(entry->agent);
  const auto id = agent ? agent->input_schema() : std::nullopt;
  if (!id) return std::nullopt;
  auto schema = opened.agents.registry->schemas().find(*id);
  if (!schema) spdlog::warn("workflow '{}': the input schema {} is not in its schemas", opened.workflow->name(), *id);
  return schema;
}

// A run id no other process makes: "mcp-" and 128 random bits.
std::string new_run_id() {
  static thread_local std::mt19937_64 random{(std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
  char text[40];
  std::snprintf(text, sizeof text, "mcp-%016llx%016llx", static_cast<unsigned long long>(random()),
                static_cast<unsigned long long>(random()));
  return text;
}

void check_tool_names(const std::vector<served_workflow>& workflows) {
  static const std::regex valid{"[A-Za-z0-9_.-]{1,128}"};
  std::vector<std::string> seen;
  for (const auto& w : workflows) {
    const std::string& name = w.name();
    if (!std::regex_match(name, valid))
      throw host_error(host_errc::bad_workflow, "workflow '" + name + "': its name is not a valid MCP tool name "
                                                "(letters, digits, _ . -, at most 128)");
    if (name == resume_tool_name)
      throw host_error(host_errc::bad_workflow, "workflow 'resume': the name is taken by the resume tool");
    if (std::ranges::find(seen, name) != seen.end())
      throw host_error(host_errc::bad_workflow, "workflow '" + name + "' is given twice");
    seen.push_back(name);
  }
}

// Stops the run of a call (the current one: a call resumes its run after
// each answer) when the client cancels or the session ends.
struct call_stopper {
  std::optional<orch::workflow_handle> handle;
  std::optional<mcp::stop_reason> reason;

  void apply() const {
    if (!handle || !reason) return;
    if (*reason == mcp::stop_reason::cancelled) handle->cancel();
    else handle->interrupt();  // the run stays resumable
  }
};

}  // namespace

std::string workflow_description(const std::filesystem::path& workflow_file) {
  std::ifstream in(workflow_file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  const json::value file = json::parse(text.str(), ec, {}, protocol::untrusted_parse_options());
  if (!in || ec) throw host_error(host_errc::bad_workflow, workflow_file.string() + ": cannot be read as JSON");
  const auto* o = file.if_object();
  const auto* description = o ? o->if_contains("description") : nullptr;
  return description && description->is_string() ? std::string(description->get_string()) : std::string{};
}

struct workflow_tools::impl {
  asio::any_io_executor executor;
  std::shared_ptr<progress_relay> relay = std::make_shared<progress_relay>();
  std::vector<served_workflow> workflows;

  served_workflow* find(std::string_view name) {
    const auto it = std::ranges::find_if(workflows, [&](const auto& w) { return w.name() == name; });
    return it == workflows.end() ? nullptr : &*it;
  }

  asio::awaitable<json::object> start(served_workflow& w, json::object arguments, mcp::tool_call& call,
                                      std::string run_id);
  asio::awaitable<json::object> resume(json::object arguments, mcp::tool_call& call);
  asio::awaitable<json::object> drive(served_workflow& w, const std::string& run_id,
                                      const std::function<orch::workflow_handle()>& first, mcp::tool_call& call);
};

workflow_tools::workflow_tools(asio::any_io_executor executor, std::vector<tool_workflow> workflows)
    : impl_(std::make_shared<impl>()) {
  impl_->executor = executor;
  const auto store = workflows.empty() || !workflows.front().opened ? nullptr : workflows.front().opened->store;
  for (auto& t : workflows) {
    if (!t.opened || !t.opened->store || t.opened->store != store)
      throw host_error(host_errc::bad_workflow, "workflow tools need every workflow opened with the same store");
    served_workflow w;
    w.entry_schema = entry_input_schema(*t.opened);
    w.hub = std::make_unique<orch::hub>(executor, *t.opened->agents.registry, t.opened->hub_options());
    w.hub->add_observer(impl_->relay);
    w.opened = std::move(t.opened);
    w.description = std::move(t.description);
    impl_->workflows.push_back(std::move(w));
  }
  check_tool_names(impl_->workflows);
}

workflow_tools::~workflow_tools() = default;

void workflow_tools::add_observer(std::shared_ptr<orch::observer> o) {
  for (auto& w : impl_->workflows) w.hub->add_observer(o);
}

void workflow_tools::trace_with(const std::shared_ptr<workflow_tracer>& tracing) {
  for (auto& w : impl_->workflows) {
    w.hub->add_observer(tracing);
    w.hub->set_trace_parents(tracing);
    w.opened->model.trace_with(tracing->tracer());
  }
}

std::vector<mcp::exposed_tool> workflow_tools::list_tools() const {
  std::vector<mcp::exposed_tool> tools;
  for (const auto& w : impl_->workflows) {
    std::string description = w.description.empty() ? "Runs the workflow '" + w.name() + "'." : w.description;
    description += " If the run pauses for a question or an approval, the result says so with its run_id, and the "
                   "resume tool continues it.";
    tools.push_back({.name = w.name(),
                     .title = {},
                     .description = std::move(description),
                     .input_schema = detail::input_schema_for(w.entry_schema),
                     .output_schema = std::nullopt,
                     .annotations = {}});
  }
  if (!tools.empty()) {
    tools.push_back({.name = std::string(resume_tool_name),
                     .title = "Continue a paused run",
                     .description = "Continues a paused or interrupted run of one of the other tools: its run_id "
                                    "and the answer to its question, or the decision (approve or reject, with an "
                                    "optional reason) on the tool calls it waits for.",
                     .input_schema = detail::resume_input_schema(),
                     .output_schema = std::nullopt,
                     .annotations = {}});
  }
  return tools;
}

asio::awaitable<json::object> workflow_tools::call_tool(std::string name, json::object arguments,
                                                        mcp::tool_call& call) {
  const auto self = impl_;
  if (name == resume_tool_name) {
    auto resuming = self->resume(std::move(arguments), call);
    co_return co_await std::move(resuming);
  }
  auto* w = self->find(name);
  if (!w) co_return detail::error_result("unknown tool '" + name + "'");
  auto starting = self->start(*w, std::move(arguments), call, new_run_id());
  co_return co_await std::move(starting);
}

asio::awaitable<json::object> workflow_tools::start_run(std::string workflow, json::object arguments,
                                                        std::string run_id, mcp::tool_call& call) {
  const auto self = impl_;
  auto* w = self->find(workflow);
  if (!w) co_return detail::error_result("unknown workflow '" + workflow + "'");
  auto starting = self->start(*w, std::move(arguments), call, std::move(run_id));
  co_return co_await std::move(starting);
}

std::optional<std::string> workflow_tools::check_arguments(std::string_view workflow,
                                                           const json::object& arguments) const {
  const auto* w = impl_->find(workflow);
  if (!w) return "unknown workflow '" + std::string(workflow) + "'";
  return detail::check_input(arguments, w->entry_schema);
}

asio::awaitable<std::optional<orch::workflow_state>> workflow_tools::find_run(std::string run_id) {
  const auto self = impl_;
  auto finding = self->workflows.front().hub->find(std::move(run_id));
  co_return co_await std::move(finding);
}

asio::awaitable<orch::workflow_state> workflow_tools::cancel_stored_run(std::string run_id) {
  const auto self = impl_;
  auto cancelling = self->workflows.front().hub->cancel_stored_run(std::move(run_id));
  co_return co_await std::move(cancelling);
}

asio::awaitable<json::object> workflow_tools::impl::start(served_workflow& w, json::object arguments,
                                                          mcp::tool_call& call, std::string run_id) {
  if (auto problem = detail::check_input(arguments, w.entry_schema))
    co_return detail::error_result(w.name() + ": " + *problem);
  spdlog::info("MCP server: starting run {} of workflow '{}'", run_id, w.name());
  json::value input(std::move(arguments));
  const std::function<orch::workflow_handle()> first = [&] {
    return w.hub->start(w.opened->workflow, std::move(input), orch::run_options{run_id});
  };
  auto driving = drive(w, run_id, first, call);
  co_return co_await std::move(driving);
}

asio::awaitable<json::object> workflow_tools::impl::drive(served_workflow& w, const std::string& run_id,
                                                          const std::function<orch::workflow_handle()>& first,
                                                          mcp::tool_call& call) {
  const auto watching = relay->watch(run_id, [&call](std::string line) { call.progress(std::move(line)); });
  auto stopper = std::make_shared<call_stopper>();
  call.on_stop([stopper](mcp::stop_reason reason) {
    stopper->reason = reason;
    stopper->apply();
  });
  orch::workflow_state state;
  std::string failure;
  try {
    stopper->handle = first();
    stopper->apply();
    for (;;) {
      auto waiting = stopper->handle->async_wait();
      state = co_await std::move(waiting);
      const auto awaited = awaited_by(state);
      orch::resume_options options = resume_options_for(state);
      if (awaited == awaited_input::answer && call.can_elicit()) {
        auto asking = call.elicit(detail::question_message(state), detail::answer_schema());
        const mcp::elicitation_reply reply = co_await std::move(asking);
        options.answer = detail::answer_from(reply);
        if (!options.answer) break;
      } else if (awaited == awaited_input::decision && call.can_elicit()) {
        auto asking = call.elicit(detail::approval_message(state), detail::decision_schema());
        const mcp::elicitation_reply reply = co_await std::move(asking);
        options.decision = detail::decision_from(reply);
        if (!options.decision) break;
      } else {
        break;
      }
      if (stopper->reason) break;  // stopped while the client was asked: the run stays paused
      stopper->handle = w.hub->start_resume(w.opened->workflow, state.id, std::move(options));
      stopper->apply();
    }
    // The client cancelled the call while it was asked a question: the
    // run is cancelled too, as one that was working would be. (A session
    // that ended leaves it paused, to be resumed.)
    if (stopper->reason == mcp::stop_reason::cancelled && orch::is_paused(state.status)) {
      auto cancelling = w.hub->cancel_stored_run(state.id);
      state = co_await std::move(cancelling);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!failure.empty()) {
    spdlog::warn("MCP server: run {} of workflow '{}': {}", run_id, w.name(), failure);
    co_return detail::error_result("run " + run_id + " of workflow '" + w.name() + "': " + failure);
  }
  spdlog::info("MCP server: run {} of workflow '{}' stopped: {}", run_id, w.name(), orch::to_string(state.status));
  co_return detail::run_result(state);
}

asio::awaitable<json::object> workflow_tools::impl::resume(json::object arguments, mcp::tool_call& call) {
  std::string problem;
  const auto args = detail::read_resume_arguments(arguments, problem);
  if (!args) co_return detail::error_result("resume: " + problem);
  const std::string& id = args->run_id;
  std::optional<orch::workflow_state> state;
  try {
    auto finding = workflows.front().hub->find(id);
    state = co_await std::move(finding);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (!problem.empty()) co_return detail::error_result("resume: run '" + id + "': " + problem);
  if (!state) co_return detail::error_result("resume: no run with id '" + id + "' in the store");
  auto* w = find(state->workflow_name);
  if (!w) {
    co_return detail::error_result("resume: run '" + id + "' is a run of workflow '" + state->workflow_name +
                                   "', which this server does not serve");
  }
  orch::resume_options options = resume_options_for(*state);
  const auto awaited = awaited_by(*state);
  const std::string status(orch::to_string(state->status));
  if (awaited == awaited_input::answer || awaited == awaited_input::optional_answer) {
    if (args->decision)
      co_return detail::error_result("resume: run '" + id + "' is " + status + " and takes an answer, not a decision");
    if (!args->answer && awaited == awaited_input::answer)
      co_return detail::error_result("resume: run '" + id + "' is paused for a clarification: give \"answer\" to "
                                     "its question: " + detail::question_message(*state));
    options.answer = args->answer;
  } else if (awaited == awaited_input::decision) {
    if (!args->decision)
      co_return detail::error_result("resume: run '" + id + "' waits for a decision on tool calls: give \"decision\" "
                                     "(approve or reject)\n" + detail::approval_message(*state));
    options.decision = args->decision;
  } else if (orch::is_finished(state->status)) {
    co_return detail::error_result("resume: run '" + id + "' is " + status + ": there is nothing to continue");
  } else if (args->answer || args->decision) {
    co_return detail::error_result("resume: run '" + id + "' is " + status +
                                   " and awaits no answer or decision: call resume with its run_id alone");
  }
  spdlog::info("MCP server: resuming run {} of workflow '{}' ({})", id, w->name(), status);
  const std::function<orch::workflow_handle()> first = [&] {
    return w->hub->start_resume(w->opened->workflow, id, std::move(options));
  };
  auto driving = drive(*w, id, first, call);
  co_return co_await std::move(driving);
}

}  // namespace switchboard::host
