#include "interrupt_answer.hpp"

#include "json_fields.hpp"
#include "run_engine.hpp"

#include <string>
#include <string_view>

namespace switchboard::server {

namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace {

// What a thread's pause asks: "clarification", "approval" or "".
std::string pause_type(const thread_record& t) {
  for (const auto& [task, list] : t.interrupts)
    if (list.is_array())
      for (const auto& i : list.get_array())
        if (i.is_object())
          if (const auto* v = i.get_object().if_contains("value"); v && v->is_object())
            return text_field(v->get_object(), "type");
  return {};
}

std::string interrupt_id(const thread_record& t) {
  for (const auto& [task, list] : t.interrupts)
    if (list.is_array())
      for (const auto& i : list.get_array())
        if (i.is_object()) return text_field(i.get_object(), "id");
  return {};
}

}  // namespace

json::value checked_resume(const thread_record& t, json::value resume) {
  const auto type = pause_type(t);
  if (resume.is_object() && resume.get_object().size() == 1) {
    const auto id = interrupt_id(t);
    if (const auto* v = resume.get_object().if_contains(id)) resume = *v;
  }
  if (type == "clarification") {
    if (!resume.is_string() || resume.get_string().empty())
      throw api_error(422, "command.resume must be the answer to the question, a non-empty string");
    return resume;
  }
  if (type == "approval") {
    const auto* o = resume.if_object();
    const auto decision = o ? text_field(*o, "decision") : std::string{};
    if (decision != "approve" && decision != "reject")
      throw api_error(422, "command.resume must be {\"decision\": \"approve\"|\"reject\", \"reason\": ...}");
    if (const auto* reason = o->if_contains("reason"); reason && !reason->is_string() && !reason->is_null())
      throw api_error(422, "command.resume.reason must be a string");
    return resume;
  }
  throw api_error(409, "thread " + t.thread_id + " is not waiting for input");
}

void apply_resume(orch::resume_options& options, const json::value& resume) {
  if (resume.is_string()) {
    options.answer = std::string(resume.get_string());
    return;
  }
  const auto& o = resume.get_object();
  orch::approval_decision d;
  d.approve = text_field(o, "decision") == "approve";
  d.reason = text_field(o, "reason");
  options.decision = d;
}

}  // namespace switchboard::server
