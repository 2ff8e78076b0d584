// Messages and tasks of A2A v1.0, as the client sends and reads them.
#include "task_wire.hpp"

#include "remote_failure.hpp"

#include <switchboard/protocol/limits.hpp>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>

namespace switchboard::a2a {

namespace json = boost::json;

namespace {

std::string who(const remote_agent_config& config) { return "remote agent '" + config.name + "'"; }

std::string task_name(const task_view& task) {
  return task.id.empty() ? std::string("its answer") : "task '" + task.id + "'";
}

// Text parts joined by newlines, the first data part kept.
void read_parts(const json::value* parts, parts_read& into) {
  if (!parts || !parts->is_array()) return;
  for (const auto& p : parts->get_array()) {
    const auto* part = p.if_object();
    if (!part) continue;
    if (const auto* text = part->if_contains("text"); text && text->is_string()) {
      if (!into.text.empty()) into.text += '\n';
      into.text += text->get_string();
    } else if (const auto* data = part->if_contains("data"); data && !into.data) {
      into.data = *data;
    }
  }
}

std::string string_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

// Cut to `most` bytes at a character boundary.
std::string bounded(std::string text, std::size_t most) {
  if (text.size() <= most) return text;
  std::size_t end = most;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "...";
}

protocol::envelope failed(std::string type, std::string message, bool retryable = false) {
  protocol::envelope e;
  e.error = protocol::error_record{std::move(type), std::move(message), retryable, {}};
  return e;
}

}  // namespace

json::object new_message(std::string_view message_id, const json::value& input, std::string_view instructions) {
  json::array parts;
  if (input.is_string()) {
    parts.push_back(json::object{{"text", input.get_string()}});
  } else {
    const auto* request = input.is_object() ? input.get_object().if_contains("request") : nullptr;
    if (request && request->is_string()) parts.push_back(json::object{{"text", request->get_string()}});
    parts.push_back(json::object{{"data", input}});
  }
  if (!instructions.empty()) parts.push_back(json::object{{"text", instructions}});
  return json::object{{"messageId", message_id}, {"role", "ROLE_USER"}, {"parts", std::move(parts)}};
}

json::object reply_message(std::string_view message_id, std::string_view task_id, std::string_view context_id,
                           std::string_view answer) {
  boost::system::error_code ec;
  auto parsed = json::parse(answer, ec, {}, protocol::untrusted_parse_options());
  json::array parts;
  if (!ec && parsed.is_object()) {
    parts.push_back(json::object{{"data", std::move(parsed)}});
  } else {
    parts.push_back(json::object{{"text", answer}});
  }
  json::object message{{"messageId", message_id}, {"role", "ROLE_USER"}, {"taskId", task_id},
                       {"parts", std::move(parts)}};
  if (!context_id.empty()) message["contextId"] = context_id;
  return message;
}

task_view read_task(const json::value& value, const remote_agent_config& config) {
  const auto* task = value.if_object();
  if (!task) throw remote_failure("invalid_remote_response", who(config) + ": a task is not a JSON object");
  task_view out;
  out.id = string_at(*task, "id");
  if (out.id.empty()) throw remote_failure("invalid_remote_response", who(config) + ": a task has no id");
  out.context_id = string_at(*task, "contextId");
  // Ids go into the journal, the messages and the logs: short, printable.
  for (const auto* id : {&out.id, &out.context_id}) {
    if (id->size() > max_id_bytes ||
        std::ranges::any_of(*id, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
      throw remote_failure("invalid_remote_response",
                           who(config) + ": a task id or context id longer than " + std::to_string(max_id_bytes) +
                               " bytes or with control characters");
    }
  }
  const auto* status = task->if_contains("status");
  if (!status || !status->is_object()) {
    throw remote_failure("invalid_remote_response", who(config) + ": task '" + out.id + "' has no status");
  }
  out.state = string_at(status->get_object(), "state");
  if (out.state.empty()) {
    throw remote_failure("invalid_remote_response", who(config) + ": task '" + out.id + "' has no status.state");
  }
  if (const auto* message = status->get_object().if_contains("message"); message && message->is_object()) {
    read_parts(message->get_object().if_contains("parts"), out.status);
  }
  if (const auto* artifacts = task->if_contains("artifacts"); artifacts && artifacts->is_array()) {
    for (const auto& artifact : artifacts->get_array()) {
      if (const auto* a = artifact.if_object()) read_parts(a->if_contains("parts"), out.artifacts);
    }
  }
  return out;
}

task_view read_send_result(const json::value& result, const remote_agent_config& config) {
  const auto* o = result.if_object();
  if (o) {
    if (const auto* task = o->if_contains("task")) return read_task(*task, config);
    if (const auto* message = o->if_contains("message"); message && message->is_object()) {
      task_view out;
      out.state = state_completed;
      read_parts(message->get_object().if_contains("parts"), out.artifacts);
      return out;
    }
  }
  throw remote_failure("invalid_remote_response", who(config) + ": SendMessage answered neither a task nor a message");
}

protocol::envelope outcome_of(const task_view& task, const remote_agent_config& config) {
  const std::string name = task_name(task);
  const std::string said = task.status.text.empty() ? std::string() : ": " + bounded(task.status.text, 2048);
  if (task.state == "TASK_STATE_FAILED") return failed("remote_task_failed", who(config) + ": " + name + " failed" + said);
  if (task.state == "TASK_STATE_REJECTED")
    return failed("remote_task_failed", who(config) + ": " + name + " was rejected" + said);
  if (task.state == "TASK_STATE_CANCELED")
    return failed("remote_task_failed", who(config) + ": " + name + " was cancelled" + said);
  if (task.state == "TASK_STATE_AUTH_REQUIRED") {
    return failed("remote_task_failed", who(config) + ": " + name +
                                            " needs authorization the workflow cannot give (TASK_STATE_AUTH_REQUIRED)" +
                                            said);
  }
  if (task.state != state_completed) {
    return failed("invalid_remote_response", who(config) + ": " + name + " is in an unknown state '" +
                                                 bounded(task.state, 64) + "'");
  }
  if (!task.artifacts.data) {
    return failed("invalid_artifact", who(config) + ": " + name +
                                          " completed without an artifact holding a data part; the output schema '" +
                                          config.output_schema + "' needs one");
  }
  if (!task.artifacts.data->is_object()) {
    return failed("invalid_artifact", who(config) + ": the data part of " + name +
                                          "'s artifact is not a JSON object; the output schema '" +
                                          config.output_schema + "' needs one");
  }
  protocol::envelope e;
  e.data = task.artifacts.data->get_object();
  e.explanation = task.artifacts.text.empty() ? who(config) + " completed " + name
                                              : bounded(task.artifacts.text, 16 * 1024);
  e.confidence = 1.0;
  e.reasoning = task.id.empty() ? "A2A answer of " + who(config) : "A2A task '" + task.id + "' of " + who(config);
  return e;
}

std::string question_of(const task_view& task, const remote_agent_config& config) {
  std::string question = task.status.text;
  if (question.empty() && task.status.data) question = json::serialize(*task.status.data);
  if (question.empty()) question = who(config) + " asks for more input (task '" + task.id + "')";
  return bounded(std::move(question), max_question_bytes);
}

}  // namespace switchboard::a2a
