// JSON Pointer (RFC 6901) helpers on an envelope's `data` object, without
// copying the object into a value first.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace switchboard::orchestrator::detail {

// "" or "/a/b~1c" → true; anything not starting with '/' or with a bad
// escape → false.
bool valid_pointer(std::string_view pointer) noexcept;

// The unescaped reference tokens of a valid pointer.
std::vector<std::string> pointer_tokens(std::string_view pointer);

// The value `pointer` addresses inside `data`, or nullptr. The root ("")
// is not a value of `data` itself; callers treat it separately.
const boost::json::value* resolve(const boost::json::object& data, std::string_view pointer) noexcept;

}  // namespace switchboard::orchestrator::detail
