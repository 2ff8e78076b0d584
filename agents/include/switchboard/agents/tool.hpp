// The tool interface: a function an LLM agent may ask the hub to call on
// its behalf ("calendar.lookup"), described to the model by a name, a
// description and a JSON Schema of its arguments. Tools sit beside agents
// (tool_registry.hpp); plugins register them like agents (plugin.hpp), and
// prompt files name the tools an agent may use (docs/prompt-files.md).
//
// llm_agent runs the tool loop (llm_agent.hpp, "Tools"), and native agents
// call tools through call_tool() (call_tool.hpp); both make every call
// through the same steps: argument checks, approval, the
// durable journal and its replay. Two flags steer those steps:
//   needs_approval()  the user must approve each call before it is made (a
//                     tool with side effects a person should confirm:
//                     sending mail). The loop stops with approval_required,
//                     the hub pauses the run (awaiting_approval) and a
//                     resume with the decision makes or refuses the call
//                     (hub_options::approval_policy may decide instead);
//   idempotent()      calling it twice with the same arguments has the same
//                     effect as once, so a call interrupted by a crash may be
//                     repeated; a non-idempotent call whose outcome is
//                     unknown is reported, never silently run again.
//
// call() completes with a tool_result: a JSON value, or a typed error the
// loop sends back to the model (code, message, retryable). Return errors for
// what the model can act on (no such event, date in the past); an exception
// is for what it cannot (a bug, a lost database) and the loop will turn it
// into an error result naming the tool. `arguments` has already been
// validated against parameters() (tool_registry::validate_arguments).
//
// Cancellation is Asio's, as for agents (agent_context.hpp): the caller
// binds a cancellation slot to the coroutine; awaited operations end with
// operation_aborted, which call() lets propagate.
// Lifetime: the tool must outlive every pending call(); `context` and
// `arguments` stay alive until call() completes, and a tool must not keep
// references to them past that.
// Thread-safety: call() may run concurrently for different workflows; a tool
// keeps no per-call state in members (or guards it). name(), description(),
// parameters() and the flags are constant for a tool's lifetime.
#pragma once

#include <switchboard/agents/model_terms.hpp>
#include <switchboard/models/tool_call.hpp>
#include <switchboard/telemetry/span_data.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <variant>

namespace spdlog { class logger; }

namespace switchboard::agents {

// What went wrong in a call, for the model to read and react to.
struct tool_error {
  // Stable, snake_case: "invalid_arguments", "not_found", "unavailable", ...
  std::string code;
  // One or two sentences naming what was wrong (sent to the model).
  std::string message;
  // True when the same call may succeed later (a busy resource).
  bool retryable = false;

  friend bool operator==(const tool_error&, const tool_error&) = default;
};

// The outcome of one call: a JSON value or a tool_error.
class tool_result {
 public:
  tool_result() = default;  // success with a null value (Asio's co_spawn wants a default)
  tool_result(boost::json::value value) : outcome_(std::move(value)) {}  // NOLINT: implicit by design
  tool_result(tool_error error) : outcome_(std::move(error)) {}          // NOLINT: implicit by design

  static tool_result success(boost::json::value value) { return tool_result(std::move(value)); }
  static tool_result failure(std::string code, std::string message, bool retryable = false) {
    return tool_result(tool_error{std::move(code), std::move(message), retryable});
  }

  bool ok() const noexcept { return std::holds_alternative<boost::json::value>(outcome_); }
  // Throws std::logic_error when the other alternative is held.
  const boost::json::value& value() const;
  const tool_error& error() const;

  // What the loop sends to the model as the tool's answer:
  // the value itself, or {"error": {"code", "message", "retryable"}}.
  boost::json::value to_json() const;

 private:
  std::variant<boost::json::value, tool_error> outcome_;
};

// What a tool sees during one call. Built by the caller, alive until call()
// completes; not thread-safe (one call's coroutine uses it).
struct tool_context {
  std::shared_ptr<spdlog::logger> logger;  // never null when built by the hub
  // The workflow run the call belongs to, the same across resumes (empty
  // outside a hub). With call_id, the key a tool with side effects dedupes on.
  std::string workflow_id{};
  std::string call_id{};  // the model's tool_call id (empty when called directly)
  std::string agent{};    // the agent whose model asked for the call
  // The execute_tool span this call is recorded as (trace_parents.hpp);
  // invalid when the run is not traced. A tool that calls another service
  // sends it on as W3C traceparent (the MCP Streamable-HTTP transport does).
  telemetry::span_context trace{};
};

class tool {
 public:
  virtual ~tool() = default;

  // Unique within a registry; [A-Za-z0-9_.:/-]{1,128} (is_valid_tool_name).
  virtual std::string_view name() const noexcept = 0;
  // What the tool does, for the model choosing among tools.
  virtual std::string_view description() const noexcept = 0;
  // JSON Schema (draft-07) of the arguments object; {} for any object.
  virtual boost::json::object parameters() const = 0;
  virtual bool needs_approval() const noexcept { return false; }
  virtual bool idempotent() const noexcept { return false; }

  virtual boost::asio::awaitable<tool_result> call(tool_context& context,
                                                   const boost::json::value& arguments) = 0;
};

// The model-layer description of `t` (name, description, parameters).
tool_definition to_definition(const tool& t);

}  // namespace switchboard::agents
