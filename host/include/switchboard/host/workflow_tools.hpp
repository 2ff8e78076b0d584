// Workflows as MCP tools: a tool_provider (switchboard/mcp/server.hpp) that
// serves each opened workflow as one tool, plus a `resume` tool, running
// them on hubs of its own with the workflows' store, so that every run is
// durable and listed by `switchboard runs` like one `switchboard run`
// started (docs/interop.md).
//
//   tools/call WORKFLOW {arguments = the workflow input}
//     completed  -> structuredContent = the final envelope, text = its explanation
//     failed     -> isError, structuredContent = {run_id, status, error}
//     a clarification question -> elicitation/create {answer} when the client
//                   offers elicitation, and the run continues with the answer;
//                   otherwise (or declined) a result saying the run is paused,
//                   with its run_id and the question
//     tool calls awaiting approval -> elicitation/create {decision, reason},
//                   or a paused result listing the pending calls
//   tools/call resume {run_id, answer | decision (approve|reject) [, reason]}
//                   continues a paused (or interrupted) run the same way.
//
// A tool's input schema is the input schema of the workflow's entry agent
// (agent::input_schema(), from the workflow's schema registry) when it has
// an object schema; otherwise {"request": string (required), other string
// fields}. Progress: one notifications/progress per step (when the client
// gave a progressToken). A call the client cancels cancels its run (also
// one paused on a question the client was being asked); a session that ends
// interrupts its runs (resumable with the `resume` tool or `switchboard
// resume`).
//
// Lifetimes: the opened workflows (and their stores) must outlive the
// provider and every call it runs. Thread-safety: the provider's members are
// called on the MCP session's strand; the hubs run on `executor`.
#pragma once

#include <switchboard/host/opened_workflow.hpp>
#include <switchboard/host/workflow_tracing.hpp>
#include <switchboard/mcp/server.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::host {

inline constexpr std::string_view resume_tool_name = "resume";

// One workflow to serve: opened with its store set, and the description
// its file gives (workflow_description).
struct tool_workflow {
  std::shared_ptr<opened_workflow> opened;
  std::string description;
};

// The "description" of a workflow file ("" when it has none). Throws
// host_error naming the file when it cannot be read as JSON.
std::string workflow_description(const std::filesystem::path& workflow_file);

class workflow_tools final : public mcp::tool_provider {
 public:
  // Throws host_error (bad_workflow) naming the workflow when a
  // name is not a valid tool name ([A-Za-z0-9_.-]{1,128}), is "resume", or
  // is served twice; or when the workflows do not share one store.
  workflow_tools(boost::asio::any_io_executor executor, std::vector<tool_workflow> workflows);
  ~workflow_tools() override;

  // Attaches `o` to every workflow's hub (metrics, tracing); set-up time,
  // before the first call.
  void add_observer(std::shared_ptr<orchestrator::observer> o);
  // Traces every workflow's runs with `tracing`: its spans, and the model's
  // chat spans and outgoing traceparent under them (ADR 0034). Set-up time.
  void trace_with(const std::shared_ptr<workflow_tracer>& tracing);

  std::vector<mcp::exposed_tool> list_tools() const override;
  boost::asio::awaitable<boost::json::object> call_tool(std::string name, boost::json::object arguments,
                                                        mcp::tool_call& call) override;

  // For other bindings of the same runs (A2A, server/src/a2a_endpoint.hpp):
  // call_tool(workflow, arguments) with the run id the caller chose.
  boost::asio::awaitable<boost::json::object> start_run(std::string workflow, boost::json::object arguments,
                                                        std::string run_id, mcp::tool_call& call);
  // Why `arguments` are no input of `workflow` (or that it is not served),
  // or nullopt when they are.
  std::optional<std::string> check_arguments(std::string_view workflow, const boost::json::object& arguments) const;
  // The stored state of a run, or nullopt. Throws as hub::find.
  boost::asio::awaitable<std::optional<orchestrator::workflow_state>> find_run(std::string run_id);
  // Cancels a paused or interrupted run (hub::cancel_stored_run).
  boost::asio::awaitable<orchestrator::workflow_state> cancel_stored_run(std::string run_id);

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace switchboard::host
