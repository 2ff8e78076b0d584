// Events as data: the JSON form of an event (events.hpp), the form
// `switchboard serve` streams and a store keeps, and an event read back
// from it.
//
// One JSON object per event: `kind` (to_string(event_kind)), the run's
// `workflow_id`, `workflow_name`, `step` and `node`, then the fields that
// kind carries. docs/events.md describes each form and
// docs/events.schema.json is its JSON Schema (draft-07).
//
// Text from outside the process (model output, tool arguments and results,
// clarification questions, error messages) is carried as JSON string
// values, never spliced into the document; invalid UTF-8 in it is replaced
// by U+FFFD, so every document parses and keeps its shape whatever the text
// says. A string in the document is still untrusted: escape it before it
// reaches a terminal (protocol/terminal_text.hpp).
//
// Thread-safety: to_json, event_from_json and event_kind_from_string are
// pure functions. owned_event is a value type: distinct objects may be used
// from distinct threads, one object from one thread at a time.
#pragma once

#include <switchboard/orchestrator/events.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <memory>
#include <optional>
#include <string_view>

namespace switchboard::orchestrator {

// The JSON form of `e`. Owns its data: it stays valid after on_event()
// returns.
boost::json::object to_json(const event& e);

// The kind to_string(kind) names; nullopt for any other text.
std::optional<event_kind> event_kind_from_string(std::string_view name) noexcept;

// An event that owns everything it refers to: a copy an observer keeps past
// on_event(), or an event read back from its JSON form. get() stays valid
// for the object's life; copies own their own data. A moved-from
// owned_event may only be assigned to or destroyed.
class owned_event {
 public:
  explicit owned_event(const event& e);
  owned_event(const owned_event& other);
  owned_event(owned_event&& other) noexcept;
  owned_event& operator=(const owned_event& other);
  owned_event& operator=(owned_event&& other) noexcept;
  ~owned_event();

  const event& get() const noexcept { return event_; }

 private:
  struct storage;
  std::unique_ptr<storage> storage_;  // on the heap: moving keeps event_'s views valid
  event event_;
};

// The event `json` is the form of (to_json's inverse). Fails with
// protocol::errc::schema_violation when `json` is not an event document:
// an unknown kind, a member of the wrong type or a negative count, a member
// its kind requires missing. Members the form does not define are ignored.
boost::system::result<owned_event> event_from_json(const boost::json::value& json);

}  // namespace switchboard::orchestrator
