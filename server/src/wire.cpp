#include "wire.hpp"

#include "ids.hpp"

#include <boost/json/value_from.hpp>

#include <map>

namespace switchboard::server {

namespace json = boost::json;
namespace orch = switchboard::orchestrator;

namespace {

// Ids derived from the hub run, so the same pause has the same ids in every
// process and after a restart.
constexpr std::string_view id_namespace = "3f0e4c52-6d5b-5c1e-9a43-7b2f1d8e6a90";

std::string derived_id(const orch::workflow_state& s, std::string_view what, std::int64_t step) {
  return name_uuid(id_namespace, s.id + "/" + std::string(what) + "/" + std::to_string(step));
}

json::object outputs_until(const orch::workflow_state& s, std::int64_t step) {
  // The audit log says which agent ran at each step; the n-th step of an
  // agent produced its n-th envelope.
  std::map<std::string, std::size_t> seen;
  json::object out;
  for (const auto& entry : s.audit) {
    if (entry.step > step) break;
    if (entry.agent.empty()) continue;
    const auto& runs = s.history(entry.agent);
    auto& n = seen[entry.agent];
    if (n < runs.size()) out[entry.agent] = json::value_from(runs[n]);
    ++n;
  }
  return out;
}

json::object checkpoint_of(const thread_record& t, const orch::workflow_state& s, std::int64_t step) {
  return {{"thread_id", t.thread_id},
          {"checkpoint_ns", ""},
          {"checkpoint_id", derived_id(s, "checkpoint", step)},
          {"checkpoint_map", nullptr}};
}

}  // namespace

json::array interrupts_of(const orch::workflow_state& s) {
  json::array out;
  if (s.status == orch::workflow_status::awaiting_clarification && s.clarification) {
    json::object value{{"type", "clarification"},
                       {"question", s.clarification->question},
                       {"node", s.clarification->node},
                       {"agent", s.clarification->agent}};
    out.push_back(json::object{{"id", derived_id(s, "interrupt", s.step)}, {"value", std::move(value)}});
  } else if (s.status == orch::workflow_status::awaiting_approval && s.approval) {
    json::array calls;
    for (const auto& c : s.approval->calls)
      calls.push_back(json::object{{"id", c.id},
                                   {"tool", c.tool},
                                   {"description", c.description},
                                   {"arguments", c.arguments},
                                   {"agent", c.agent}});
    json::object value{{"type", "approval"}, {"node", s.approval->node}, {"calls", std::move(calls)}};
    out.push_back(json::object{{"id", derived_id(s, "interrupt", s.step)}, {"value", std::move(value)}});
  }
  return out;
}

std::string task_id_of(const orch::workflow_state& s) { return derived_id(s, "task", s.step); }

json::object values_of(const orch::workflow_state& s) {
  json::object out{{"input", s.input},
                   {"outputs", outputs_until(s, s.step)},
                   {"status", to_string(s.status)},
                   {"step", s.step},
                   {"result", s.result ? json::value_from(*s.result) : json::value(nullptr)}};
  if (orch::is_paused(s.status)) out["__interrupt__"] = interrupts_of(s);
  return out;
}

json::object thread_state(const thread_record& t, const std::optional<orch::workflow_state>& s) {
  if (!s)
    return {{"values", json::object{}}, {"next", json::array{}}, {"tasks", json::array{}},
            {"metadata", json::object{}}, {"created_at", nullptr}, {"checkpoint", nullptr},
            {"parent_checkpoint", nullptr}, {"interrupts", json::array{}}};
  auto values = values_of(*s);
  values.erase("__interrupt__");
  const auto interrupts = interrupts_of(*s);
  const bool continues = !orch::is_finished(s->status) && !s->next_node.empty();
  json::array next;
  json::array tasks;
  if (continues) {
    next.push_back(json::string(s->next_node));
    tasks.push_back(json::object{{"id", task_id_of(*s)},
                                 {"name", s->next_node},
                                 {"path", json::array{"__pregel_pull", json::string(s->next_node)}},
                                 {"error", nullptr},
                                 {"interrupts", interrupts},
                                 {"checkpoint", nullptr},
                                 {"state", nullptr},
                                 {"result", nullptr}});
  }
  return {{"values", std::move(values)},
          {"next", std::move(next)},
          {"tasks", std::move(tasks)},
          {"metadata", json::object{{"source", "loop"}, {"step", s->step}, {"graph_id", s->workflow_name},
                                    {"workflow_run", s->id}, {"status", to_string(s->status)}}},
          {"created_at", t.updated_at},
          {"checkpoint", checkpoint_of(t, *s, s->step)},
          {"parent_checkpoint", s->step > 0 ? json::value(checkpoint_of(t, *s, s->step - 1)) : json::value(nullptr)},
          {"interrupts", interrupts}};
}

json::array thread_history(const thread_record& t, const orch::workflow_state& s, std::size_t limit) {
  json::array out;
  out.push_back(thread_state(t, s));
  // Earlier steps, newest first: the values each step left.
  for (std::int64_t step = s.step - 1; step >= 0 && out.size() < limit; --step) {
    // The oldest state is before the first node, as LangGraph's is.
    std::string node = "__start__";
    if (step > 0)
      for (const auto& entry : s.audit)
        if (entry.step == step + 1) node = entry.node;
    json::object values{{"input", s.input}, {"outputs", outputs_until(s, step)}, {"step", step}};
    out.push_back(json::object{
        {"values", std::move(values)},
        {"next", json::array{json::string(node)}},
        {"tasks", json::array{}},
        {"metadata", json::object{{"source", step == 0 ? "input" : "loop"}, {"step", step},
                                  {"graph_id", s.workflow_name}, {"workflow_run", s.id}}},
        {"created_at", nullptr},
        {"checkpoint", checkpoint_of(t, s, step)},
        {"parent_checkpoint", step > 0 ? json::value(checkpoint_of(t, s, step - 1)) : json::value(nullptr)},
        {"interrupts", json::array{}}});
  }
  return out;
}

json::object to_wire(const assistant_record& a) {
  json::object metadata = a.metadata;
  if (a.system) metadata["created_by"] = "system";
  return {{"assistant_id", a.assistant_id}, {"graph_id", a.graph_id},   {"name", a.name},
          {"description", a.description},   {"config", a.config},       {"context", a.context},
          {"metadata", std::move(metadata)}, {"created_at", a.created_at}, {"updated_at", a.updated_at},
          {"version", 1}};
}

json::object to_wire(const thread_record& t) {
  return {{"thread_id", t.thread_id}, {"created_at", t.created_at}, {"updated_at", t.updated_at},
          {"state_updated_at", t.updated_at}, {"metadata", t.metadata}, {"status", t.status},
          {"config", json::object{}}, {"values", t.values}, {"interrupts", t.interrupts}};
}

json::object to_wire(const run_record& r) {
  return {{"run_id", r.run_id},         {"thread_id", r.thread_id},   {"assistant_id", r.assistant_id},
          {"created_at", r.created_at}, {"updated_at", r.updated_at}, {"status", r.status},
          {"metadata", r.metadata},     {"kwargs", r.kwargs},         {"multitask_strategy", r.multitask_strategy}};
}

}  // namespace switchboard::server
