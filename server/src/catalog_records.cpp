// How the catalog's records are written: as JSON objects in the journal,
// and in the form kept in memory (kept_record).
#include "catalog_records.hpp"

#include "json_fields.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace switchboard::server {

namespace json = boost::json;

namespace {

json::object object(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_object() ? v->get_object() : json::object{};
}

json::value value(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? *v : json::value(nullptr);
}

}  // namespace

std::int64_t version_of(const json::object& o) {
  const auto* v = o.if_contains("version");
  return v && v->is_int64() ? v->get_int64() : 0;
}

json::object to_json(const assistant_record& a) {
  return {{"assistant_id", a.assistant_id}, {"graph_id", a.graph_id}, {"name", a.name},
          {"description", a.description},   {"config", a.config},     {"context", a.context},
          {"metadata", a.metadata},         {"created_at", a.created_at}, {"updated_at", a.updated_at},
          {"version", a.version}};
}

assistant_record assistant_from(const json::object& o) {
  return {.assistant_id = text_field(o, "assistant_id"), .graph_id = text_field(o, "graph_id"), .name = text_field(o, "name"),
          .description = text_field(o, "description"), .config = object(o, "config"), .context = object(o, "context"),
          .metadata = object(o, "metadata"), .created_at = text_field(o, "created_at"),
          .updated_at = text_field(o, "updated_at"), .system = false, .version = version_of(o)};
}

json::object to_json(const thread_record& t) {
  return {{"thread_id", t.thread_id}, {"created_at", t.created_at}, {"updated_at", t.updated_at},
          {"metadata", t.metadata},   {"status", t.status},         {"graph_id", t.graph_id},
          {"workflow_run", t.workflow_run}, {"values", t.values},   {"interrupts", t.interrupts},
          {"version", t.version}};
}

thread_record thread_from(const json::object& o) {
  return {.thread_id = text_field(o, "thread_id"), .created_at = text_field(o, "created_at"),
          .updated_at = text_field(o, "updated_at"), .metadata = object(o, "metadata"), .status = text_field(o, "status"),
          .graph_id = text_field(o, "graph_id"), .workflow_run = text_field(o, "workflow_run"), .values = value(o, "values"),
          .interrupts = object(o, "interrupts"), .version = version_of(o)};
}

json::object to_json(const run_record& r) {
  return {{"run_id", r.run_id},       {"thread_id", r.thread_id},   {"assistant_id", r.assistant_id},
          {"graph_id", r.graph_id},   {"status", r.status},         {"created_at", r.created_at},
          {"updated_at", r.updated_at}, {"metadata", r.metadata},   {"kwargs", r.kwargs},
          {"multitask_strategy", r.multitask_strategy}, {"workflow_run", r.workflow_run},
          {"result", r.result},       {"version", r.version}};
}

run_record run_from(const json::object& o) {
  return {.run_id = text_field(o, "run_id"), .thread_id = text_field(o, "thread_id"), .assistant_id = text_field(o, "assistant_id"),
          .graph_id = text_field(o, "graph_id"), .status = text_field(o, "status"), .created_at = text_field(o, "created_at"),
          .updated_at = text_field(o, "updated_at"), .metadata = object(o, "metadata"), .kwargs = object(o, "kwargs"),
          .multitask_strategy = text_field(o, "multitask_strategy"), .workflow_run = text_field(o, "workflow_run"),
          .result = value(o, "result"), .version = version_of(o)};
}

namespace {

// The member of a record kept apart (kept_record::values).
std::string_view values_key(bool is_run) { return is_run ? "result" : "values"; }

constexpr std::string_view interrupts_task_key = "interrupts_task";

// A thread's interrupts that are its values' `__interrupt__` under one task
// (as a run leaves them): kept as that task's id, not a second copy.
void fold_interrupts(json::object& thread) {
  const auto* interrupts = thread.if_contains("interrupts");
  const auto* values = thread.if_contains("values");
  if (!interrupts || !interrupts->is_object() || interrupts->get_object().size() != 1 || !values ||
      !values->is_object())
    return;
  const auto* asked = values->get_object().if_contains("__interrupt__");
  const auto& [task, list] = *interrupts->get_object().begin();
  // As text: value equality ignores member order (and -0 against 0), and
  // the unfolded interrupts must read back exactly as they were.
  if (!asked || json::serialize(*asked) != json::serialize(list)) return;
  json::string task_id(task);  // copied: erase() moves the object's members
  thread.erase("interrupts");
  thread[interrupts_task_key] = std::move(task_id);
}

void unfold_interrupts(json::object& thread, const json::value& values) {
  const auto* task = thread.if_contains(interrupts_task_key);
  if (!task) return;
  json::object interrupts;
  const auto* asked = values.is_object() ? values.get_object().if_contains("__interrupt__") : nullptr;
  if (task->is_string() && asked) interrupts[task->get_string()] = *asked;
  thread.erase(interrupts_task_key);
  thread["interrupts"] = std::move(interrupts);
}

std::string_view id_key(bool is_run) { return is_run ? "run_id" : "thread_id"; }

// What the kept record holds in members of its own is not in its text
// too: the id (the catalog's key), the version, a run's thread and status.
void drop_held_apart(json::object& record, bool is_run) {
  record.erase(id_key(is_run));
  record.erase("version");
  if (!is_run) return;
  record.erase("thread_id");
  record.erase("status");
}

// The record again as to_json() wrote it, but for what drop_held_apart()
// took out (unpack_* sets those). The catalog wrote every kept text itself:
// it is always an object.
json::object full_form(const kept_record& k, bool is_run) {
  auto parsed = json::parse(k.json);
  auto& record = parsed.as_object();
  auto values = k.values ? json::parse(*k.values) : json::value(nullptr);
  if (!is_run) unfold_interrupts(record, values);
  record[values_key(is_run)] = std::move(values);
  return std::move(record);
}

}  // namespace

kept_record kept_form(json::object record, bool is_run) {
  kept_record k{.json = {}, .values = nullptr, .version = version_of(record),
                .thread_id = is_run ? text_field(record, "thread_id") : std::string(), .unconfirmed = false,
                .status = is_run ? text_field(record, "status") : std::string()};
  if (!is_run) fold_interrupts(record);
  const auto key = values_key(is_run);
  if (const auto* values = record.if_contains(key)) {
    if (!values->is_null()) k.values = std::make_shared<const std::string>(json::serialize(*values));
    record.erase(key);
  }
  drop_held_apart(record, is_run);
  k.json = json::serialize(record);
  return k;
}

kept_record kept(const thread_record& t) { return kept_form(to_json(t), false); }
kept_record kept(const run_record& r) { return kept_form(to_json(r), true); }

thread_record unpack_thread(const kept_record& k, const std::string& id) {
  auto t = thread_from(full_form(k, false));
  t.thread_id = id;
  t.version = k.version;
  return t;
}

run_record unpack_run(const kept_record& k, const std::string& id) {
  auto r = run_from(full_form(k, true));
  r.run_id = id;
  r.thread_id = k.thread_id;
  r.status = k.status;
  r.version = k.version;
  return r;
}

}  // namespace switchboard::server
