#include <switchboard/orchestrator/workflow_state.hpp>

#include <switchboard/orchestrator/error.hpp>
#include <switchboard/protocol/limits.hpp>

#include "detail/owner.hpp"
#include "detail/state_journal.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value_from.hpp>
#include <boost/json/value_to.hpp>

#include <algorithm>

namespace switchboard::orchestrator {

namespace json = boost::json;

const protocol::envelope* workflow_state::latest(std::string_view agent) const {
  for (const auto& h : outputs) {
    if (h.agent == agent) return h.runs.empty() ? nullptr : &h.runs.back();
  }
  return nullptr;
}

std::vector<std::string> workflow_state::agent_names() const {
  std::vector<std::string> names;
  names.reserve(outputs.size());
  for (const auto& h : outputs) names.push_back(h.agent);
  return names;
}

const std::vector<protocol::envelope>& workflow_state::history(std::string_view agent) const {
  static const std::vector<protocol::envelope> none;
  for (const auto& h : outputs) {
    if (h.agent == agent) return h.runs;
  }
  return none;
}

void workflow_state::add_output(std::string_view agent, protocol::envelope value) {
  for (auto& h : outputs) {
    if (h.agent == agent) {
      h.runs.push_back(std::move(value));
      return;
    }
  }
  outputs.push_back({std::string(agent), {}});
  outputs.back().runs.push_back(std::move(value));
}

std::string approval_request::calls_key() const {
  std::string key;
  for (const auto& c : calls) key += c.agent + "/" + std::to_string(c.round) + "/" + c.id + "\n";
  return key;
}

const protocol::error_record* workflow_state::first_error() const noexcept {
  return errors.empty() ? nullptr : &errors.front();
}

// ---------------------------------------------------------------- JSON

namespace {

// The whole state (to_json) is format 1; a checkpoint head is format 2.
constexpr std::int64_t state_format_version = 1;
constexpr std::int64_t head_format_version = 2;

json::object audit_to_json(const audit_entry& a) {
  json::object out{{"step", a.step},
          {"node", a.node},
          {"agent", a.agent},
          {"prompt_version", a.prompt_version},
          {"confidence", a.confidence},
          {"explanation", a.explanation},
          {"route", a.route},
          {"condition", a.condition},
          {"duration_us", a.duration.count()},
          {"prompt_tokens", a.tokens.prompt_tokens},
          {"completion_tokens", a.tokens.completion_tokens},
          {"attempts", a.attempts},
          {"note", a.note}};
  // Only where there is one: most steps are native agents'.
  if (!a.raw_text.empty()) out["raw_text"] = a.raw_text;
  if (a.raw_text_bytes > 0) out["raw_text_bytes"] = a.raw_text_bytes;
  if (!a.model_attempts.empty()) out["model_attempts"] = a.model_attempts;
  if (!a.tool_calls.empty()) out["tool_calls"] = a.tool_calls;
  return out;
}

// Reads fields of one object, naming the path of anything missing or wrong.
class reader {
 public:
  reader(const json::value& value, std::string path) : path_(std::move(path)) {
    if (!value.is_object()) fail("expected an object");
    object_ = &value.get_object();
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw orchestrator_error(orchestrator_errc::corrupt_checkpoint,
                             "workflow state " + (path_.empty() ? "/" : path_) + ": " + what);
  }

  const json::value& at(std::string_view key) const {
    const auto* v = object_->if_contains(key);
    if (!v) fail("missing field '" + std::string(key) + "'");
    return *v;
  }
  const json::value* optional(std::string_view key) const {
    const auto* v = object_->if_contains(key);
    return v && !v->is_null() ? v : nullptr;
  }
  std::string string(std::string_view key) const {
    const auto& v = at(key);
    if (!v.is_string()) fail("field '" + std::string(key) + "' must be a string");
    return std::string(v.get_string());
  }
  std::int64_t integer(std::string_view key) const {
    const auto& v = at(key);
    if (v.is_int64()) return v.get_int64();
    if (v.is_uint64()) return static_cast<std::int64_t>(v.get_uint64());
    fail("field '" + std::string(key) + "' must be an integer");
  }
  double number(std::string_view key) const {
    const auto& v = at(key);
    if (!v.is_number()) fail("field '" + std::string(key) + "' must be a number");
    return v.to_number<double>();
  }
  const json::array& array(std::string_view key) const {
    const auto& v = at(key);
    if (!v.is_array()) fail("field '" + std::string(key) + "' must be an array");
    return v.get_array();
  }
  std::string child(std::string_view key) const { return path_ + "/" + std::string(key); }

 private:
  std::string path_;
  const json::object* object_ = nullptr;
};

protocol::envelope read_envelope(const json::value& v, const std::string& path) {
  auto result = json::try_value_to<protocol::envelope>(v);
  if (!result) {
    throw orchestrator_error(orchestrator_errc::corrupt_checkpoint,
                             "workflow state " + path + ": not an envelope (" + result.error().message() + ")");
  }
  return std::move(*result);
}

audit_entry read_audit(const json::value& v, const std::string& path) {
  reader r(v, path);
  audit_entry a;
  a.step = r.integer("step");
  a.node = r.string("node");
  a.agent = r.string("agent");
  a.prompt_version = r.string("prompt_version");
  a.confidence = r.number("confidence");
  a.explanation = r.string("explanation");
  a.route = r.string("route");
  a.condition = r.string("condition");
  a.duration = std::chrono::microseconds(r.integer("duration_us"));
  a.tokens.prompt_tokens = r.integer("prompt_tokens");
  a.tokens.completion_tokens = r.integer("completion_tokens");
  a.attempts = static_cast<int>(r.integer("attempts"));
  a.note = r.string("note");
  if (r.optional("raw_text")) {
    // Held to the same bound as when it was written: a stored run is untrusted.
    const auto stored_bytes = r.optional("raw_text_bytes") ? r.integer("raw_text_bytes") : 0;
    a.keep_raw_text(r.string("raw_text"));
    a.raw_text_bytes = std::max(a.raw_text_bytes, stored_bytes);
  }
  // Kept as read: already held to the checkpoint depth and size limits.
  if (r.optional("model_attempts")) a.model_attempts = r.array("model_attempts");
  if (r.optional("tool_calls")) a.tool_calls = r.array("tool_calls");
  return a;
}

json::value clarification_to_json(const std::optional<clarification_request>& c) {
  if (!c) return nullptr;
  return json::object{{"question", c->question}, {"node", c->node}, {"agent", c->agent}, {"round", c->round}};
}

std::optional<clarification_request> read_clarification(const reader& r) {
  const auto* c = r.optional("clarification");
  if (!c) return std::nullopt;
  reader cr(*c, r.child("clarification"));
  return clarification_request{cr.string("question"), cr.string("node"), cr.string("agent"),
                               static_cast<int>(cr.integer("round"))};
}

json::value approval_to_json(const std::optional<approval_request>& a) {
  if (!a) return nullptr;
  json::array calls;
  for (const auto& c : a->calls) {
    calls.push_back(json::object{{"agent", c.agent},
                                 {"round", c.round},
                                 {"id", c.id},
                                 {"tool", c.tool},
                                 {"arguments", c.arguments},
                                 {"description", c.description}});
  }
  return json::object{{"node", a->node}, {"calls", std::move(calls)}};
}

std::optional<approval_request> read_approval(const reader& r) {
  const auto* a = r.optional("approval");
  if (!a) return std::nullopt;
  reader ar(*a, r.child("approval"));
  approval_request out{ar.string("node"), {}};
  const auto& calls = ar.array("calls");
  if (calls.empty()) ar.fail("field 'calls' is empty");
  for (std::size_t i = 0; i < calls.size(); ++i) {
    reader c(calls[i], ar.child("calls") + "/" + std::to_string(i));
    const auto round = c.integer("round");
    if (round < 1 || round > 1'000'000) c.fail("field 'round' is out of range");
    out.calls.push_back(agents::pending_tool_call{c.string("agent"), static_cast<int>(round), c.string("id"),
                                                  c.string("tool"), c.at("arguments"), c.string("description")});
  }
  return out;
}

// The tool records of the step in flight: a state's step counts completed
// steps, so the step in flight is the next one. A finished run has none (a
// step paused uncounted, then failed, leaves its records in the journal).
void keep_step_in_flight(workflow_state& s) {
  if (is_finished(s.status)) {
    s.tool_records.clear();
    return;
  }
  std::erase_if(s.tool_records, [&](const json::object& record) {
    const auto* step = record.if_contains("step");
    return !step || !step->is_int64() || step->get_int64() != s.step + 1;
  });
}

std::vector<json::object> read_tool_records(const reader& r, std::string_view key) {
  std::vector<json::object> out;
  for (const auto& item : r.array(key)) {
    if (!item.is_object()) r.fail("field '" + std::string(key) + "' must hold objects");
    out.push_back(item.get_object());
  }
  return out;
}

workflow_status read_status(const reader& r) {
  auto status = parse_workflow_status(r.string("status"));
  if (!status) r.fail("unknown status '" + r.string("status") + "'");
  return *status;
}

protocol::error_record read_error(const json::value& v, const std::string& path) {
  auto e = json::try_value_to<protocol::error_record>(v);
  if (!e) {
    throw orchestrator_error(orchestrator_errc::corrupt_checkpoint,
                             "workflow state " + path + ": not an error record");
  }
  return std::move(*e);
}

std::vector<std::string> read_strings(const reader& r, std::string_view key) {
  std::vector<std::string> out;
  for (const auto& item : r.array(key)) {
    if (!item.is_string()) r.fail("field '" + std::string(key) + "' must hold strings");
    out.emplace_back(item.get_string());
  }
  return out;
}

}  // namespace

json::value workflow_state::to_json() const {
  json::object out;
  out["format"] = state_format_version;
  out["id"] = id;
  out["workflow"] = workflow_name;
  out["status"] = to_string(status);
  out["step"] = step;
  if (starts > 0) out["starts"] = starts;  // absent in states saved before it was counted
  out["next_node"] = next_node;
  out["input"] = input;
  json::array outs;
  for (const auto& h : outputs) {
    json::array runs;
    for (const auto& e : h.runs) runs.push_back(json::value_from(e));
    outs.push_back(json::object{{"agent", h.agent}, {"runs", std::move(runs)}});
  }
  out["outputs"] = std::move(outs);
  json::array audit_json;
  for (const auto& a : audit) audit_json.push_back(audit_to_json(a));
  out["audit"] = std::move(audit_json);
  json::array errors_json;
  for (const auto& e : errors) errors_json.push_back(json::value_from(e));
  out["errors"] = std::move(errors_json);
  out["clarification"] = clarification_to_json(clarification);
  json::array answers;
  for (const auto& a : clarification_answers) answers.push_back(json::string(a));
  out["clarification_answers"] = std::move(answers);
  out["approval"] = approval_to_json(approval);
  if (!tool_records.empty()) out["tool_records"] = json::array(tool_records.begin(), tool_records.end());
  out["result"] = result ? json::value_from(*result) : json::value(nullptr);
  return out;
}

workflow_state workflow_state::from_json(const json::value& value) {
  reader r(value, "");
  if (r.integer("format") != state_format_version) {
    r.fail("unsupported format " + std::to_string(r.integer("format")) + " (expected " +
           std::to_string(state_format_version) + ")");
  }
  workflow_state s;
  s.id = r.string("id");
  s.workflow_name = r.string("workflow");
  s.status = read_status(r);
  s.step = r.integer("step");
  if (r.optional("starts")) s.starts = r.integer("starts");
  s.next_node = r.string("next_node");
  s.input = r.at("input");
  const auto& outs = r.array("outputs");
  for (std::size_t i = 0; i < outs.size(); ++i) {
    reader o(outs[i], "/outputs/" + std::to_string(i));
    agent_history h{o.string("agent"), {}};
    const auto& runs = o.array("runs");
    for (std::size_t k = 0; k < runs.size(); ++k) {
      h.runs.push_back(read_envelope(runs[k], o.child("runs") + "/" + std::to_string(k)));
    }
    s.outputs.push_back(std::move(h));
  }
  const auto& audit_json = r.array("audit");
  for (std::size_t i = 0; i < audit_json.size(); ++i) {
    s.audit.push_back(read_audit(audit_json[i], "/audit/" + std::to_string(i)));
  }
  const auto& errors_json = r.array("errors");
  for (std::size_t i = 0; i < errors_json.size(); ++i) {
    s.errors.push_back(read_error(errors_json[i], "/errors/" + std::to_string(i)));
  }
  s.clarification = read_clarification(r);
  s.clarification_answers = read_strings(r, "clarification_answers");
  s.approval = read_approval(r);
  if (r.optional("tool_records")) s.tool_records = read_tool_records(r, "tool_records");
  if (const auto* res = r.optional("result")) s.result = read_envelope(*res, "/result");
  return s;
}

workflow_state workflow_state::from_checkpoint(const checkpoint& cp) {
  auto state = detail::read_stored_run(cp).state;
  state.status = cp.status;
  if (state.status == workflow_status::running && detail::owner_is_dead_on_this_host(cp.owner)) {
    state.status = workflow_status::interrupted;
  }
  return state;
}

// ---------------------------------------------------------------- head + journal

namespace detail {

// Written out directly rather than built as a json::object and serialized:
// the head is written at every step and building the object cost several
// times what the text does. Same text as serializing the object would give
// (same keys, same order, no spaces).
std::string state_head(const workflow_state& state, const definition_identity& definition) {
  const auto quoted = [](std::string_view text) { return json::serialize(json::string_view(text)); };
  const auto or_null = [](const json::value& v) { return v.is_null() ? std::string("null") : json::serialize(v); };
  std::string head;
  head.reserve(256 + definition.fingerprint.size() + 24 * definition.nodes.size());
  head += "{\"format\":" + std::to_string(head_format_version);
  head += ",\"id\":" + quoted(state.id);
  head += ",\"workflow\":" + quoted(state.workflow_name);
  head += ",\"status\":" + quoted(to_string(state.status));
  head += ",\"step\":" + std::to_string(state.step);
  head += ",\"next_node\":" + quoted(state.next_node);
  head += ",\"starts\":" + std::to_string(state.starts);
  head += ",\"clarification\":" + or_null(clarification_to_json(state.clarification));
  head += ",\"approval\":" + or_null(approval_to_json(state.approval));
  head += ",\"result\":" + (state.result ? json::serialize(json::value_from(*state.result)) : std::string("null"));
  head += ",\"definition\":{\"fingerprint\":" + quoted(definition.fingerprint) + ",\"nodes\":[";
  for (std::size_t i = 0; i < definition.nodes.size(); ++i) {
    if (i > 0) head += ',';
    head += quoted(definition.nodes[i]);
  }
  head += "]}}";
  return head;
}

save_request make_save_request(const workflow_state& state, const definition_identity& definition,
                               journal_marks* marks, std::string owner, std::int64_t fence) {
  save_request request;
  request.workflow_id = state.id;
  request.workflow_name = state.workflow_name;
  request.status = state.status;
  request.step = state.step;
  request.state_json = state_head(state, definition);
  if (marks != nullptr) {
    if (auto record = next_journal_record(state, *marks)) request.journal.push_back(std::move(*record));
  }
  request.owner = std::move(owner);
  request.fence = fence;
  return request;
}

namespace {

// Writes a journal record's text one member at a time: `{"KEY":[A,B],...}`.
class record_writer {
 public:
  explicit record_writer(std::string text = "{") : text_(std::move(text)) {}
  // Starts array member `key` at its first element, then separates the next.
  void element_of(const char* key) {
    if (key != open_key_) {
      close_array();
      if (text_.size() > 1) text_ += ',';
      text_ += '"';
      text_ += key;
      text_ += "\":[";
      open_key_ = key;
    } else {
      text_ += ',';
    }
  }
  std::string& text() { return text_; }
  bool empty() const { return text_.size() == 1; }
  std::string finish() {
    close_array();
    text_ += '}';
    return std::move(text_);
  }

 private:
  void close_array() {
    if (open_key_ != nullptr) text_ += ']';
    open_key_ = nullptr;
  }
  std::string text_;
  const char* open_key_ = nullptr;
};

}  // namespace

// Written out directly rather than built as a json::object and serialized
// (a record is written at every step): the same text, member by member,
// each element serialized on its own. The first record carries the input,
// serialized in place (it may be megabytes).
std::optional<std::string> next_journal_record(const workflow_state& state, journal_marks& marks) {
  const bool first = !marks.input;
  record_writer record(first ? "{\"input\":" + json::serialize(state.input) : std::string("{"));
  marks.input = true;
  marks.runs.resize(state.outputs.size(), 0);
  for (std::size_t i = 0; i < state.outputs.size(); ++i) {
    const auto& h = state.outputs[i];
    for (; marks.runs[i] < h.runs.size(); ++marks.runs[i]) {
      record.element_of("outputs");
      record.text() += "{\"agent\":" + json::serialize(json::string_view(h.agent)) +
                       ",\"envelope\":" + json::serialize(json::value_from(h.runs[marks.runs[i]])) + "}";
    }
  }
  for (; marks.audit < state.audit.size(); ++marks.audit) {
    record.element_of("audit");
    record.text() += json::serialize(audit_to_json(state.audit[marks.audit]));
  }
  for (; marks.errors < state.errors.size(); ++marks.errors) {
    record.element_of("errors");
    record.text() += json::serialize(json::value_from(state.errors[marks.errors]));
  }
  for (; marks.answers < state.clarification_answers.size(); ++marks.answers) {
    record.element_of("answers");
    record.text() += json::serialize(json::string_view(state.clarification_answers[marks.answers]));
  }
  if (marks.tool_records > state.tool_records.size()) marks.tool_records = 0;  // a new step's records
  for (; marks.tool_records < state.tool_records.size(); ++marks.tool_records) {
    record.element_of("tool_records");
    record.text() += json::serialize(state.tool_records[marks.tool_records]);
  }
  if (!first && record.empty()) return std::nullopt;
  return record.finish();
}

journal_marks marks_of(const workflow_state& state) {
  journal_marks marks;
  marks.input = true;
  for (const auto& h : state.outputs) marks.runs.push_back(h.runs.size());
  marks.audit = state.audit.size();
  marks.errors = state.errors.size();
  marks.answers = state.clarification_answers.size();
  marks.tool_records = state.tool_records.size();
  return marks;
}

namespace {

json::value parse_stored(const std::string& text, const std::string& what) {
  boost::system::error_code ec;
  auto value = json::parse(text, ec, {}, protocol::checkpoint_parse_options());
  if (ec) {
    throw orchestrator_error(orchestrator_errc::corrupt_checkpoint,
                             what + " is not JSON within the limits (" + ec.message() + ")");
  }
  return value;
}

void apply_record(workflow_state& s, const json::value& value, const std::string& path) {
  reader r(value, path);
  if (const auto* input = r.optional("input")) s.input = *input;
  if (r.optional("outputs")) {
    const auto& outputs = r.array("outputs");
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      reader o(outputs[i], r.child("outputs") + "/" + std::to_string(i));
      s.add_output(o.string("agent"), read_envelope(o.at("envelope"), o.child("envelope")));
    }
  }
  if (r.optional("audit")) {
    const auto& audit = r.array("audit");
    for (std::size_t i = 0; i < audit.size(); ++i) {
      s.audit.push_back(read_audit(audit[i], r.child("audit") + "/" + std::to_string(i)));
    }
  }
  if (r.optional("errors")) {
    const auto& errors = r.array("errors");
    for (std::size_t i = 0; i < errors.size(); ++i) {
      s.errors.push_back(read_error(errors[i], r.child("errors") + "/" + std::to_string(i)));
    }
  }
  if (r.optional("answers")) {
    for (auto& answer : read_strings(r, "answers")) s.clarification_answers.push_back(std::move(answer));
  }
  if (r.optional("tool_records")) {
    for (auto& record : read_tool_records(r, "tool_records")) s.tool_records.push_back(std::move(record));
  }
}

stored_run read_head_and_journal(const checkpoint& cp, const json::value& head_json) {
  reader head(head_json, "(head)");
  stored_run run;
  auto& s = run.state;
  s.id = head.string("id");
  s.workflow_name = head.string("workflow");
  s.status = read_status(head);
  s.step = head.integer("step");
  if (head.optional("starts")) s.starts = head.integer("starts");  // absent in heads saved before it was counted
  s.next_node = head.string("next_node");
  s.clarification = read_clarification(head);
  s.approval = read_approval(head);
  if (const auto* result = head.optional("result")) s.result = read_envelope(*result, "(head)/result");
  reader definition(head.at("definition"), "(head)/definition");
  run.definition.fingerprint = definition.string("fingerprint");
  run.definition.nodes = read_strings(definition, "nodes");
  for (std::size_t i = 0; i < cp.journal.size(); ++i) {
    const std::string path = "(journal record " + std::to_string(i + 1) + ")";
    apply_record(s, parse_stored(cp.journal[i], path), path);
  }
  keep_step_in_flight(s);
  return run;
}

}  // namespace

stored_run read_stored_run(const checkpoint& cp) {
  try {
    const auto head = parse_stored(cp.state_json, "the head");
    const auto* format = head.is_object() ? head.get_object().if_contains("format") : nullptr;
    if (format && format->is_int64() && format->get_int64() == state_format_version && cp.journal.empty()) {
      return {workflow_state::from_json(head), {}};  // stored whole, before journals
    }
    if (!format || !format->is_int64() || format->get_int64() != head_format_version) {
      throw orchestrator_error(orchestrator_errc::corrupt_checkpoint,
                               "workflow state (head): unsupported format (expected " +
                                   std::to_string(head_format_version) + ")");
    }
    return read_head_and_journal(cp, head);
  } catch (const orchestrator_error& e) {
    throw orchestrator_error(orchestrator_errc::corrupt_checkpoint,
                             "checkpoint of workflow '" + cp.workflow_id + "': " + e.what());
  }
}

}  // namespace detail

}  // namespace switchboard::orchestrator
