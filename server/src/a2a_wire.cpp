// A2A v1.0 shapes (a2a_wire.hpp).
#include "a2a_wire.hpp"

#include "catalog.hpp"

#include <switchboard/protocol/envelope.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

namespace switchboard::server::a2a {

namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace {

constexpr std::size_t max_id_length = 256;

std::string_view reason_of(int error_code) {
  switch (error_code) {
    case code::parse_error: return "PARSE_ERROR";
    case code::invalid_request: return "INVALID_REQUEST";
    case code::method_not_found: return "METHOD_NOT_FOUND";
    case code::invalid_params: return "INVALID_PARAMS";
    case code::task_not_found: return "TASK_NOT_FOUND";
    case code::task_not_cancelable: return "TASK_NOT_CANCELABLE";
    case code::unsupported_operation: return "UNSUPPORTED_OPERATION";
    case code::version_not_supported: return "VERSION_NOT_SUPPORTED";
    case code::push_notification_not_supported: return "PUSH_NOTIFICATION_NOT_SUPPORTED";
    case code::extended_card_not_configured: return "EXTENDED_AGENT_CARD_NOT_CONFIGURED";
    default: return "INTERNAL_ERROR";
  }
}

json::object text_part(std::string text) { return json::object{{"text", std::move(text)}}; }
json::object data_part(json::value data) { return json::object{{"data", std::move(data)}}; }

json::object agent_message(std::string id, std::string_view task_id, std::string_view context_id, json::array parts) {
  return json::object{{"messageId", std::move(id)}, {"role", "ROLE_AGENT"}, {"taskId", task_id},
                      {"contextId", context_id},    {"parts", std::move(parts)}};
}

json::array pending_calls(const orch::workflow_state& state) {
  json::array calls;
  if (!state.approval) return calls;
  for (const auto& call : state.approval->calls)
    calls.push_back(json::object{{"agent", call.agent}, {"tool", call.tool},
                                 {"description", call.description}, {"arguments", call.arguments}});
  return calls;
}

// What the run asks of the client, or why it stopped: status.message's parts.
json::array status_parts(const orch::workflow_state& state) {
  json::array parts;
  switch (state.status) {
    case orch::workflow_status::awaiting_clarification:
      parts.push_back(text_part(state.clarification ? state.clarification->question
                                                    : std::string("The workflow needs more information.")));
      break;
    case orch::workflow_status::awaiting_approval: {
      std::string text = "Approve these tool calls?";
      if (state.approval)
        for (const auto& call : state.approval->calls) text += "\n- " + call.agent + " wants to call " + call.tool;
      parts.push_back(text_part(std::move(text)));
      parts.push_back(data_part(json::object{
          {"pending_calls", pending_calls(state)},
          {"reply", "a message with taskId and a data part {\"decision\": \"approve\"} or "
                    "{\"decision\": \"reject\", \"reason\": \"...\"}"}}));
      break;
    }
    case orch::workflow_status::interrupted:
    case orch::workflow_status::running:
      if (state.status == orch::workflow_status::interrupted)
        parts.push_back(text_part("The run was interrupted (its completed steps are saved): send a message with "
                                  "this taskId to continue it."));
      break;
    case orch::workflow_status::failed:
    case orch::workflow_status::cancelled: {
      const auto* error = state.first_error();
      std::string message = error ? error->message : "the run " + std::string(orch::to_string(state.status));
      if (error && !error->agent.empty() && message.find(error->agent) == std::string::npos)
        message = error->agent + ": " + message;
      parts.push_back(text_part(std::move(message)));
      if (error) parts.push_back(data_part(json::value_from(*error)));
      break;
    }
    case orch::workflow_status::completed:
      break;
  }
  return parts;
}

json::array history_of(const orch::workflow_state& state) {
  json::array history;
  const auto* request = state.input.is_object() ? state.input.get_object().if_contains("request") : nullptr;
  json::object first{{"messageId", state.id + "-request"}, {"role", "ROLE_USER"}, {"taskId", state.id},
                     {"contextId", state.workflow_name}};
  first["parts"] = json::array{request && request->is_string() ? json::value(text_part(std::string(request->get_string())))
                                                                : json::value(data_part(state.input))};
  history.push_back(std::move(first));
  for (std::size_t i = 0; i < state.clarification_answers.size(); ++i) {
    json::object answer{{"messageId", state.id + "-answer-" + std::to_string(i + 1)}, {"role", "ROLE_USER"},
                        {"taskId", state.id}, {"contextId", state.workflow_name},
                        {"parts", json::array{text_part(state.clarification_answers[i])}}};
    history.push_back(std::move(answer));
  }
  return history;
}

bool valid_id(std::string_view id) { return !id.empty() && id.size() <= max_id_length; }

}  // namespace

namespace {

json::object error_info(int error_code) {
  return json::object{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
                      {"reason", reason_of(error_code)},
                      {"domain", "a2a-protocol.org"}};
}

}  // namespace

rest_error rest_error_of(int error_code, std::string message) {
  // A2A §5.4's table: the HTTP status and the google.rpc code's name.
  auto mapped = [&]() -> std::pair<int, std::string_view> {
    switch (error_code) {
      case code::task_not_found:
      case code::method_not_found: return {404, "NOT_FOUND"};
      case code::task_not_cancelable:
      case code::push_notification_not_supported:
      case code::unsupported_operation:
      case code::extended_card_not_configured:
      case code::version_not_supported: return {400, "FAILED_PRECONDITION"};
      case code::parse_error:
      case code::invalid_request:
      case code::invalid_params: return {400, "INVALID_ARGUMENT"};
      default: return {500, "INTERNAL"};
    }
  }();
  rest_error out;
  out.http_status = mapped.first;
  out.body = json::object{{"error", json::object{{"code", mapped.first},
                                                 {"status", mapped.second},
                                                 {"message", std::move(message)},
                                                 {"details", json::array{error_info(error_code)}}}}};
  return out;
}

json::object error_response(const json::value& id, int error_code, std::string message) {
  json::object info = error_info(error_code);
  return json::object{{"jsonrpc", "2.0"},
                      {"id", id},
                      {"error", json::object{{"code", error_code},
                                             {"message", std::move(message)},
                                             {"data", json::array{std::move(info)}}}}};
}

json::object result_response(const json::value& id, json::value result) {
  return json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

std::string_view task_state(orch::workflow_status status) noexcept {
  switch (status) {
    case orch::workflow_status::running: return "TASK_STATE_WORKING";
    case orch::workflow_status::completed: return "TASK_STATE_COMPLETED";
    case orch::workflow_status::failed: return "TASK_STATE_FAILED";
    case orch::workflow_status::cancelled: return "TASK_STATE_CANCELED";
    case orch::workflow_status::awaiting_clarification:
    case orch::workflow_status::awaiting_approval:
    case orch::workflow_status::interrupted: return "TASK_STATE_INPUT_REQUIRED";
  }
  return "TASK_STATE_UNSPECIFIED";
}

std::optional<orch::workflow_status> run_status_of(std::string_view state) noexcept {
  if (state == "TASK_STATE_WORKING") return orch::workflow_status::running;
  if (state == "TASK_STATE_COMPLETED") return orch::workflow_status::completed;
  if (state == "TASK_STATE_FAILED") return orch::workflow_status::failed;
  if (state == "TASK_STATE_CANCELED") return orch::workflow_status::cancelled;
  if (state == "TASK_STATE_INPUT_REQUIRED") return orch::workflow_status::awaiting_clarification;
  return std::nullopt;
}

json::object task_of(const orch::workflow_state& state, bool with_history) {
  json::object status{{"state", task_state(state.status)}, {"timestamp", now_iso8601()}};
  if (auto parts = status_parts(state); !parts.empty())
    status["message"] = agent_message(state.id + "-status-" + std::to_string(state.step), state.id,
                                      state.workflow_name, std::move(parts));
  json::object task{{"id", state.id}, {"contextId", state.workflow_name}, {"status", std::move(status)}};
  json::array artifacts;
  if (state.status == orch::workflow_status::completed && state.result) {
    artifacts.push_back(json::object{
        {"artifactId", state.id + "-result"},
        {"name", "result"},
        {"parts", json::array{data_part(json::value_from(*state.result)), text_part(state.result->explanation)}}});
  }
  task["artifacts"] = std::move(artifacts);
  if (with_history) task["history"] = history_of(state);
  return task;
}

json::object submitted_task(std::string_view task_id, std::string_view context_id) {
  return json::object{{"id", task_id},
                      {"contextId", context_id},
                      {"status", json::object{{"state", "TASK_STATE_SUBMITTED"}, {"timestamp", now_iso8601()}}},
                      {"artifacts", json::array{}}};
}

std::optional<incoming_message> read_message(const json::object& params, std::string& error) {
  const auto* m = params.if_contains("message");
  if (!m || !m->is_object()) return error = "params.message must be a Message (an object)", std::nullopt;
  const auto& message = m->get_object();
  incoming_message out;
  auto read_id = [&](std::string_view key, std::string& into, bool required) {
    const auto* v = message.if_contains(key);
    // "" is proto3's default: an id not given.
    if (!v || v->is_null() || (v->is_string() && v->get_string().empty())) return !required;
    if (!v->is_string() || !valid_id(v->get_string())) return false;
    into = v->get_string();
    return true;
  };
  if (!read_id("messageId", out.message_id, true))
    return error = "message.messageId must be a string of 1 to 256 characters", std::nullopt;
  if (!read_id("taskId", out.task_id, false))
    return error = "message.taskId must be a string of 1 to 256 characters", std::nullopt;
  if (!read_id("contextId", out.context_id, false))
    return error = "message.contextId must be a string of 1 to 256 characters", std::nullopt;
  const auto* role = message.if_contains("role");
  if (!role || !role->is_string() || role->get_string() != "ROLE_USER")
    return error = "message.role must be \"ROLE_USER\"", std::nullopt;
  const auto* parts = message.if_contains("parts");
  if (!parts || !parts->is_array() || parts->get_array().empty())
    return error = "message.parts must be a non-empty array of Parts", std::nullopt;
  for (const auto& p : parts->get_array()) {
    const auto* part = p.if_object();
    if (!part) return error = "each message part must be an object", std::nullopt;
    if (const auto* text = part->if_contains("text")) {
      if (!text->is_string()) return error = "a part's \"text\" must be a string", std::nullopt;
      if (!out.text.empty()) out.text += "\n";
      out.text += text->get_string();
    } else if (const auto* data = part->if_contains("data")) {
      if (!data->is_object()) return error = "a part's \"data\" must be an object here", std::nullopt;
      if (!out.data) out.data = data->get_object();
    } else {
      return error = "only text and data parts are accepted (no raw or url parts)", std::nullopt;
    }
  }
  return out;
}

json::object workflow_input(const incoming_message& message) {
  if (message.data) return *message.data;
  return json::object{{"request", message.text}};
}

std::optional<json::object> resume_arguments(const orch::workflow_state& state, const incoming_message& message,
                                             std::string& error) {
  json::object args{{"run_id", state.id}};
  switch (state.status) {
    case orch::workflow_status::awaiting_clarification:
      if (message.text.empty()) return error = "the task asks a question: reply with a text part", std::nullopt;
      args["answer"] = message.text;
      return args;
    case orch::workflow_status::awaiting_approval: {
      const auto* decision = message.data ? message.data->if_contains("decision") : nullptr;
      if (!decision || !decision->is_string() ||
          (decision->get_string() != "approve" && decision->get_string() != "reject"))
        return error = "the task waits for a decision: reply with a data part {\"decision\": \"approve\"} or "
                       "{\"decision\": \"reject\", \"reason\": \"...\"}",
               std::nullopt;
      args["decision"] = *decision;
      const auto* reason = message.data->if_contains("reason");
      if (reason && !reason->is_string()) return error = "\"reason\" must be a string", std::nullopt;
      if (reason && decision->get_string() == "reject") args["reason"] = *reason;
      return args;
    }
    case orch::workflow_status::interrupted:
      return args;
    default:
      return error = "the task is " + std::string(task_state(state.status)) + " and takes no message", std::nullopt;
  }
}

json::object agent_card(const card_settings& s) {
  json::object skill{{"id", s.name},
                     {"name", s.name},
                     {"description", s.description.empty() ? "Runs the workflow '" + s.name + "'." : s.description},
                     {"tags", json::array{"workflow", "switchboard"}},
                     {"inputModes", json::array{"text/plain", "application/json"}},
                     {"outputModes", json::array{"application/json", "text/plain"}},
                     {"examples", json::array{"Input (a data part): " + json::serialize(s.input_schema)}}};
  json::object card{
      {"name", s.name},
      {"description", s.description.empty() ? "The Switchboard workflow '" + s.name + "'." : s.description},
      {"version", "0.1.0"},
      {"provider", json::object{{"organization", "Switchboard"}, {"url", "https://github.com/switchboard"}}},
      {"capabilities", json::object{{"streaming", true}, {"pushNotifications", false}, {"extendedAgentCard", false}}},
      // JSON-RPC first (the preferred one, §8.3); HTTP+JSON at the same base.
      {"supportedInterfaces",
       json::array{
           json::object{{"url", s.rpc_url}, {"protocolBinding", "JSONRPC"}, {"protocolVersion", protocol_version}},
           json::object{{"url", s.rpc_url}, {"protocolBinding", "HTTP+JSON"}, {"protocolVersion", protocol_version}}}},
      {"defaultInputModes", json::array{"text/plain", "application/json"}},
      {"defaultOutputModes", json::array{"application/json", "text/plain"}},
      {"skills", json::array{std::move(skill)}}};
  if (s.bearer_auth) {
    card["securitySchemes"] = json::object{
        {"bearer", json::object{{"httpAuthSecurityScheme", json::object{{"scheme", "Bearer"}}}}}};
    card["securityRequirements"] = json::array{json::object{{"schemes", json::object{{"bearer", json::object{{"list", json::array{}}}}}}}};
  }
  return card;
}

}  // namespace switchboard::server::a2a
