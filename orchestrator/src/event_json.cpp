#include <switchboard/orchestrator/event_json.hpp>

#include <switchboard/protocol/envelope.hpp>
#include <switchboard/protocol/error.hpp>
#include <switchboard/protocol/utf8.hpp>

#include <boost/json/value_from.hpp>
#include <boost/json/value_to.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace switchboard::orchestrator {

namespace json = boost::json;

namespace {

// ---------------------------------------------------------------- to JSON

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = protocol::utf8_sequence_size(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// A string value for text from outside: always a JSON string, and one every
// parser accepts (invalid UTF-8 becomes U+FFFD).
json::string text_value(std::string_view text) {
  if (is_valid_utf8(text)) return json::string(text);
  std::string repaired(text);
  protocol::replace_invalid_utf8(repaired);
  return json::string(repaired);
}

// The same for every string and key inside a value an agent or a tool built.
void repair_text(json::value& v) {
  if (auto* s = v.if_string()) {
    if (!is_valid_utf8(*s)) v = text_value(*s);
  } else if (auto* a = v.if_array()) {
    for (auto& item : *a) repair_text(item);
  } else if (auto* o = v.if_object()) {
    bool keys_valid = true;
    for (auto& member : *o) {
      repair_text(member.value());
      keys_valid = keys_valid && is_valid_utf8(member.key());
    }
    if (keys_valid) return;
    json::object rebuilt;
    for (auto& member : *o) rebuilt[text_value(member.key())] = std::move(member.value());
    v = std::move(rebuilt);
  }
}

template <class T>
json::value repaired_value(const T& from) {
  json::value v = json::value_from(from);
  repair_text(v);
  return v;
}

bool ends_a_step(event_kind kind) { return kind == event_kind::step_completed || kind == event_kind::step_failed; }
bool asks_the_user(event_kind kind) { return kind == event_kind::paused || kind == event_kind::approval_requested; }
// Kinds about one agent's work (for a synthesis node or a parallel group,
// the node's name stands for the agent).
bool names_an_agent(event_kind kind) {
  return ends_a_step(kind) || kind == event_kind::tool_called || kind == event_kind::text_delta ||
         kind == event_kind::tool_call_delta;
}

// The index as int64, the integer kind a parsed document has: the schema
// validator, like valijson, takes a uint64 value for neither integer nor
// number.
json::object delta_to_json(const models::stream_sink::tool_call_delta& d) {
  return json::object{{"index", static_cast<std::int64_t>(d.index)},
                      {"id", text_value(d.id)},
                      {"name", text_value(d.name)},
                      {"arguments", text_value(d.arguments)}};
}

// ---------------------------------------------------------------- from JSON

// Reads the members of one event document; `ok` turns false at the first
// member of the wrong type or a required one missing. The views it returns
// point into the document.
class reader {
 public:
  explicit reader(const json::object& o) : o_(o) {}

  bool ok() const noexcept { return ok_; }

  std::string_view text(std::string_view key, bool required) {
    const auto* v = find(key, required);
    const auto* s = v ? v->if_string() : nullptr;
    check(!v || s);
    return s ? std::string_view(*s) : std::string_view{};
  }

  // Every integer of the form counts something: never negative.
  template <class Integer>
  Integer integer(std::string_view key, bool required) {
    const auto* v = find(key, required);
    if (!v) return {};
    boost::system::error_code ec;
    const auto n = v->is_number() ? v->to_number<Integer>(ec) : Integer{};
    check(v->is_number() && !ec);
    if constexpr (std::is_signed_v<Integer>) check(n >= 0);
    return n;
  }

  template <class T>
  std::optional<T> converted(std::string_view key, bool required) {
    const auto* v = find(key, required);
    if (!v) return std::nullopt;
    auto r = json::try_value_to<T>(*v);
    check(r.has_value());
    return r ? std::optional<T>(std::move(*r)) : std::nullopt;
  }

  const json::object* object(std::string_view key, bool required) {
    const auto* v = find(key, required);
    check(!v || v->is_object());
    return v ? v->if_object() : nullptr;
  }

 private:
  void check(bool fine) { ok_ = ok_ && fine; }
  // A missing member is fine unless the kind requires it.
  const json::value* find(std::string_view key, bool required) {
    const auto* v = o_.if_contains(key);
    check(v || !required);
    return v;
  }

  const json::object& o_;
  bool ok_ = true;
};

std::optional<models::stream_sink::tool_call_delta> delta_from_json(const json::object* o) {
  if (!o) return std::nullopt;
  reader r(*o);
  models::stream_sink::tool_call_delta d;
  d.index = r.integer<std::size_t>("index", true);
  d.id = r.text("id", false);
  d.name = r.text("name", false);
  d.arguments = r.text("arguments", false);
  if (!r.ok()) return std::nullopt;
  return d;
}

}  // namespace

std::optional<event_kind> event_kind_from_string(std::string_view name) noexcept {
  // The kinds are numbered from 0 without gaps; to_string() names each and
  // answers "?" past the last, so a kind added later is found here too.
  for (int i = 0;; ++i) {
    const auto kind = static_cast<event_kind>(i);
    const std::string_view known = to_string(kind);
    if (known == "?") return std::nullopt;
    if (known == name) return kind;
  }
}

json::object to_json(const event& e) {
  json::object out;
  out["kind"] = to_string(e.kind);
  out["workflow_id"] = text_value(e.workflow_id);
  out["workflow_name"] = text_value(e.workflow_name);
  out["step"] = e.step;
  out["node"] = text_value(e.node);
  if (names_an_agent(e.kind) || !e.agent.empty()) out["agent"] = text_value(e.agent);
  if (!e.prompt_version.empty()) out["prompt_version"] = text_value(e.prompt_version);
  if (e.envelope) out["envelope"] = repaired_value(*e.envelope);
  if (e.error) out["error"] = repaired_value(*e.error);
  const bool routed = e.kind == event_kind::routed;
  if (routed || !e.target.empty()) out["target"] = text_value(e.target);
  if (routed || !e.condition.empty()) out["condition"] = text_value(e.condition);
  if (asks_the_user(e.kind) || !e.question.empty()) out["question"] = text_value(e.question);
  if (e.tool_call) out["tool_call"] = repaired_value(*e.tool_call);
  if (e.kind == event_kind::text_delta || !e.text.empty()) out["text"] = text_value(e.text);
  if (e.tool_delta) out["tool_call_delta"] = delta_to_json(*e.tool_delta);
  if (ends_a_step(e.kind)) {
    out["duration_us"] = e.duration.count();
    out["prompt_tokens"] = e.tokens.prompt_tokens;
    out["completion_tokens"] = e.tokens.completion_tokens;
    out["attempts"] = e.attempts;
  }
  return out;
}

boost::system::result<owned_event> event_from_json(const json::value& document) {
  const auto failed = protocol::make_error_code(protocol::errc::schema_violation);
  const auto* o = document.if_object();
  const auto* kind_name = o ? o->if_contains("kind") : nullptr;
  const auto kind = kind_name && kind_name->is_string() ? event_kind_from_string(kind_name->get_string())
                                                        : std::nullopt;
  if (!kind) return failed;
  const event_kind k = *kind;
  reader r(*o);
  event e{};
  e.kind = k;
  e.workflow_id = r.text("workflow_id", true);
  e.workflow_name = r.text("workflow_name", true);
  e.step = r.integer<std::int64_t>("step", true);
  e.node = r.text("node", true);
  e.agent = r.text("agent", names_an_agent(k));
  e.prompt_version = r.text("prompt_version", false);
  const auto envelope = r.converted<protocol::envelope>("envelope", k == event_kind::step_completed);
  const bool carries_error = k == event_kind::step_failed || k == event_kind::workflow_failed;
  const auto error = r.converted<protocol::error_record>("error", carries_error);
  e.envelope = envelope ? &*envelope : nullptr;
  e.error = error ? &*error : nullptr;
  e.target = r.text("target", k == event_kind::routed);
  e.condition = r.text("condition", k == event_kind::routed);
  e.question = r.text("question", asks_the_user(k));
  e.tool_call = r.object("tool_call", k == event_kind::tool_called);
  e.text = r.text("text", k == event_kind::text_delta);
  const auto delta = delta_from_json(r.object("tool_call_delta", k == event_kind::tool_call_delta));
  if (o->contains("tool_call_delta") && !delta) return failed;
  e.tool_delta = delta ? &*delta : nullptr;
  const bool step = ends_a_step(k);
  e.duration = std::chrono::microseconds(r.integer<std::int64_t>("duration_us", step));
  e.tokens.prompt_tokens = r.integer<std::int64_t>("prompt_tokens", step);
  e.tokens.completion_tokens = r.integer<std::int64_t>("completion_tokens", step);
  e.attempts = r.integer<int>("attempts", step);
  if (!r.ok()) return failed;
  return owned_event(e);
}

// ---------------------------------------------------------------- owned_event

struct owned_event::storage {
  std::string workflow_id, workflow_name, node, agent, target, condition, question, text, prompt_version;
  std::optional<protocol::envelope> envelope;
  std::optional<protocol::error_record> error;
  std::optional<json::object> tool_call;
  std::string delta_id, delta_name, delta_arguments;
  std::optional<models::stream_sink::tool_call_delta> tool_delta;  // views into the delta_ strings
};

owned_event::owned_event(const event& e) : storage_(std::make_unique<storage>()), event_(e) {
  auto& s = *storage_;
  s.workflow_id = e.workflow_id;
  s.workflow_name = e.workflow_name;
  s.node = e.node;
  s.agent = e.agent;
  s.target = e.target;
  s.condition = e.condition;
  s.question = e.question;
  s.text = e.text;
  s.prompt_version = e.prompt_version;
  if (e.envelope) s.envelope = *e.envelope;
  if (e.error) s.error = *e.error;
  if (e.tool_call) s.tool_call = *e.tool_call;
  if (e.tool_delta) {
    s.delta_id = e.tool_delta->id;
    s.delta_name = e.tool_delta->name;
    s.delta_arguments = e.tool_delta->arguments;
    s.tool_delta = models::stream_sink::tool_call_delta{e.tool_delta->index, s.delta_id, s.delta_name,
                                                        s.delta_arguments};
  }
  // The scalars were copied with `e`; every view now points into storage.
  event_.workflow_id = s.workflow_id;
  event_.workflow_name = s.workflow_name;
  event_.node = s.node;
  event_.agent = s.agent;
  event_.target = s.target;
  event_.condition = s.condition;
  event_.question = s.question;
  event_.text = s.text;
  event_.prompt_version = s.prompt_version;
  event_.envelope = s.envelope ? &*s.envelope : nullptr;
  event_.error = s.error ? &*s.error : nullptr;
  event_.tool_call = s.tool_call ? &*s.tool_call : nullptr;
  event_.tool_delta = s.tool_delta ? &*s.tool_delta : nullptr;
}

owned_event::owned_event(const owned_event& other) : owned_event(other.get()) {}
owned_event::owned_event(owned_event&& other) noexcept = default;
owned_event& owned_event::operator=(const owned_event& other) {
  if (this != &other) *this = owned_event(other);
  return *this;
}
owned_event& owned_event::operator=(owned_event&& other) noexcept = default;
owned_event::~owned_event() = default;

}  // namespace switchboard::orchestrator
