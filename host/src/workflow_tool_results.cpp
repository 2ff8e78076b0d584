// Results, elicitations and argument checks of the workflow tools
// (workflow_tool_results.hpp).
#include "workflow_tool_results.hpp"

#include <switchboard/protocol/envelope.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

namespace switchboard::host::detail {

namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace {

constexpr std::size_t max_run_id_length = 256;
constexpr std::size_t shown_arguments_bytes = 2000;

std::string status_text(const orch::workflow_state& state) { return std::string(orch::to_string(state.status)); }

json::array pending_calls(const orch::workflow_state& state) {
  json::array calls;
  if (!state.approval) return calls;
  for (const auto& call : state.approval->calls) {
    calls.push_back(json::object{{"agent", call.agent},
                                 {"tool", call.tool},
                                 {"description", call.description},
                                 {"arguments", call.arguments}});
  }
  return calls;
}

// The pending calls, one per line, for a person to decide on.
std::string describe_calls(const orch::workflow_state& state) {
  std::string text;
  if (!state.approval) return text;
  for (const auto& call : state.approval->calls) {
    std::string arguments = json::serialize(call.arguments);
    if (arguments.size() > shown_arguments_bytes) arguments = arguments.substr(0, shown_arguments_bytes) + "...";
    text += "- " + call.agent + " wants to call " + call.tool + " " + arguments;
    if (!call.description.empty()) text += " (" + call.description + ")";
    text += "\n";
  }
  return text;
}

json::object paused_result(const orch::workflow_state& state) {
  json::object structured{{"status", status_text(state)}, {"run_id", state.id}};
  std::string text;
  if (state.status == orch::workflow_status::awaiting_clarification) {
    const std::string question = state.clarification ? state.clarification->question : std::string{};
    structured["question"] = question;
    text = "The run " + state.id + " is paused for a clarification: " + question +
           "\nContinue it with the resume tool: {\"run_id\": \"" + state.id + "\", \"answer\": \"...\"}.";
  } else {
    structured["pending_calls"] = pending_calls(state);
    text = "The run " + state.id + " is waiting for approval of these tool calls:\n" + describe_calls(state) +
           "Continue it with the resume tool: {\"run_id\": \"" + state.id +
           "\", \"decision\": \"approve\"} or {\"run_id\": \"" + state.id +
           "\", \"decision\": \"reject\", \"reason\": \"...\"}.";
  }
  return mcp::structured_result(std::move(text), std::move(structured));
}

json::object failed_result(const orch::workflow_state& state) {
  const auto* error = state.first_error();
  json::object structured{{"status", status_text(state)}, {"run_id", state.id}};
  std::string message = error ? error->message : "the workflow " + status_text(state);
  if (error && !error->agent.empty() && message.find(error->agent) == std::string::npos)
    message = error->agent + ": " + message;
  if (error) structured["error"] = json::value_from(*error);
  return mcp::structured_result("The run " + state.id + " " + status_text(state) + ": " + message,
                                std::move(structured), true);
}

}  // namespace

json::object run_result(const orch::workflow_state& state) {
  switch (state.status) {
    case orch::workflow_status::completed: {
      if (!state.result) return error_result("the run " + state.id + " completed without a final envelope");
      json::value envelope = json::value_from(*state.result);
      json::object result = mcp::structured_result(state.result->explanation, std::move(envelope.as_object()));
      result["_meta"] = json::object{{"switchboard/run_id", state.id}};
      return result;
    }
    case orch::workflow_status::awaiting_clarification:
    case orch::workflow_status::awaiting_approval:
      return paused_result(state);
    case orch::workflow_status::interrupted:
    case orch::workflow_status::running:
      return mcp::structured_result("The run " + state.id + " was interrupted (its completed steps are saved). " +
                                        "Continue it with the resume tool: {\"run_id\": \"" + state.id + "\"}.",
                                    json::object{{"status", status_text(state)}, {"run_id", state.id}});
    default:
      return failed_result(state);
  }
}

json::object error_result(std::string message) { return mcp::text_result(std::move(message), true); }

std::string question_message(const orch::workflow_state& state) {
  return state.clarification ? state.clarification->question : std::string("The workflow needs more information.");
}

json::object answer_schema() {
  return json::object{
      {"type", "object"},
      {"properties", json::object{{"answer", json::object{{"type", "string"}, {"title", "Answer"},
                                                          {"description", "Your answer to the question"}}}}},
      {"required", json::array{"answer"}}};
}

std::optional<std::string> answer_from(const mcp::elicitation_reply& reply) {
  if (reply.action != "accept") return std::nullopt;
  const auto* answer = reply.content.if_contains("answer");
  if (!answer || !answer->is_string() || answer->get_string().empty()) return std::nullopt;
  return std::string(answer->get_string());
}

std::string approval_message(const orch::workflow_state& state) {
  return "Approve these actions?\n" + describe_calls(state);
}

json::object decision_schema() {
  return json::object{
      {"type", "object"},
      {"properties",
       json::object{{"decision", json::object{{"type", "string"},
                                              {"title", "Decision"},
                                              {"enum", json::array{"approve", "reject"}}}},
                    {"reason", json::object{{"type", "string"},
                                            {"title", "Reason"},
                                            {"description", "Why you reject them (told to the agent)"}}}}},
      {"required", json::array{"decision"}}};
}

std::optional<orch::approval_decision> decision_from(const mcp::elicitation_reply& reply) {
  if (reply.action != "accept") return std::nullopt;
  const auto* decision = reply.content.if_contains("decision");
  if (!decision || !decision->is_string()) return std::nullopt;
  const std::string_view d = decision->get_string();
  if (d != "approve" && d != "reject") return std::nullopt;
  orch::approval_decision result{d == "approve", {}};
  const auto* reason = reply.content.if_contains("reason");
  if (!result.approve && reason && reason->is_string()) result.reason = reason->get_string();
  return result;
}

// Whether the entry agent's schema describes an object, so that it can be
// the tool's input schema as it is.
static bool is_object_schema(const std::optional<protocol::compiled_schema>& entry_schema) {
  if (!entry_schema) return false;
  const auto* o = entry_schema->json().if_object();
  const auto* type = o ? o->if_contains("type") : nullptr;
  return type && type->is_string() && type->get_string() == "object";
}

json::object input_schema_for(const std::optional<protocol::compiled_schema>& entry_schema) {
  if (is_object_schema(entry_schema)) return entry_schema->json().get_object();
  return json::object{
      {"type", "object"},
      {"properties", json::object{{"request", json::object{{"type", "string"},
                                                           {"description", "The request, in plain language"}}}}},
      {"required", json::array{"request"}},
      {"additionalProperties", json::object{{"type", "string"}}}};
}

std::optional<std::string> check_input(const json::object& arguments,
                                       const std::optional<protocol::compiled_schema>& entry_schema) {
  if (is_object_schema(entry_schema)) {
    const auto errors = entry_schema->validate(arguments);
    if (errors.empty()) return std::nullopt;
    std::string message = "the arguments do not match the workflow's input schema " + entry_schema->id() + ":";
    for (const auto& e : errors) message += " " + e.to_string() + ";";
    message.pop_back();
    return message;
  }
  const auto* request = arguments.if_contains("request");
  if (!request || !request->is_string() || request->get_string().empty())
    return std::string("the arguments need \"request\": a non-empty string, the request in plain language");
  for (const auto& [key, value] : arguments) {
    if (!value.is_string()) return "the argument \"" + std::string(key) + "\" must be a string";
  }
  return std::nullopt;
}

json::object resume_input_schema() {
  return json::object{
      {"type", "object"},
      {"properties",
       json::object{
           {"run_id", json::object{{"type", "string"}, {"description", "The id of the paused run"}}},
           {"answer", json::object{{"type", "string"}, {"description", "The answer to its clarification question"}}},
           {"decision", json::object{{"type", "string"},
                                     {"enum", json::array{"approve", "reject"}},
                                     {"description", "The decision on the tool calls it waits for"}}},
           {"reason", json::object{{"type", "string"}, {"description", "Why they are rejected (with reject)"}}}}},
      {"required", json::array{"run_id"}},
      {"additionalProperties", false}};
}

std::optional<resume_arguments> read_resume_arguments(const json::object& arguments, std::string& error) {
  resume_arguments out;
  std::optional<std::string> reason;
  std::optional<std::string> decision;
  for (const auto& [key, value] : arguments) {
    if (key != "run_id" && key != "answer" && key != "decision" && key != "reason")
      return error = "unknown argument \"" + std::string(key) + "\" (run_id, answer, decision, reason)", std::nullopt;
    if (!value.is_string()) return error = "the argument \"" + std::string(key) + "\" must be a string", std::nullopt;
    const std::string text(value.get_string());
    if (key == "run_id") out.run_id = text;
    else if (key == "answer") out.answer = text;
    else if (key == "decision") decision = text;
    else reason = text;
  }
  if (out.run_id.empty() || out.run_id.size() > max_run_id_length)
    return error = "\"run_id\" must be the id of a run (1 to 256 characters)", std::nullopt;
  if (out.answer && out.answer->empty()) return error = "\"answer\" must not be empty", std::nullopt;
  if (decision && *decision != "approve" && *decision != "reject")
    return error = "\"decision\" must be \"approve\" or \"reject\"", std::nullopt;
  if (out.answer && decision) return error = "give \"answer\" or \"decision\", not both", std::nullopt;
  if (reason && decision != "reject") return error = "\"reason\" goes with \"decision\": \"reject\"", std::nullopt;
  if (decision) out.decision = orch::approval_decision{*decision == "approve", reason.value_or("")};
  return out;
}

}  // namespace switchboard::host::detail
