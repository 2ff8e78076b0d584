// The JSON stages of the structured-output parser, each a pure function over
// text. Internal; output_parser.cpp chains them.
#pragma once

#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::protocol::detail {

// Strict JSON parse (no comments, no trailing commas), nesting limited so a
// hostile answer cannot exhaust the stack of the validator.
std::optional<boost::json::value> parse_strict(std::string_view text, boost::system::error_code& ec);

// Removes a UTF-8 BOM and surrounding white space.
std::string_view trim_output(std::string_view raw) noexcept;

// A piece of the answer that might hold the JSON value.
struct candidate {
  std::string_view text;
  std::size_t offset = 0;  // of text within the raw answer
  std::string origin;      // "fenced block 1", "JSON in prose at offset 12"
};

struct extraction {
  std::optional<boost::json::value> value;  // the first candidate that parsed
  std::string origin;                       // where it came from
  // Candidates that did not parse, in preference order: what repair works on.
  std::vector<candidate> unparsed;
};

// Fenced ```json / ``` blocks first (the first one that parses wins), then
// the first complete JSON object/array in prose (string-aware bracket
// matching), else the candidates that did not parse.
extraction extract_json(std::string_view text);

struct repair_outcome {
  std::string text;                  // the repaired candidate
  std::vector<std::string> repairs;  // readable, in the order applied
};

// Removes trailing commas and, when the text ends inside a value (a truncated
// answer), cuts back to the last complete member or element and closes the
// open strings, arrays and objects. Never adds content: a dangling key, a
// cut-off number or literal is dropped, not completed. `offset` is where
// `text` starts in the raw answer, so repairs name raw offsets.
repair_outcome repair_json(std::string_view text, std::size_t offset);

}  // namespace switchboard::protocol::detail
