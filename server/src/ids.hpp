// The identifiers the API hands out: UUIDs, as the LangGraph client
// requires of every id.
#pragma once

#include <string>
#include <string_view>

namespace switchboard::server {

// A random (version 4) UUID.
std::string random_uuid();
// A time-ordered (version 7) UUID: ids created later sort later.
std::string time_ordered_uuid();
// The name-based (version 5, SHA-1) UUID of `name` in `namespace_uuid`.
std::string name_uuid(std::string_view namespace_uuid, std::string_view name);
// The id of a graph's system assistant, derived as the reference servers
// derive it, so a graph id works wherever an assistant id does.
std::string system_assistant_id(std::string_view graph_id);
// True for the canonical 8-4-4-4-12 hex form.
bool is_uuid(std::string_view text);

}  // namespace switchboard::server
