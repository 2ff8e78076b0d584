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

// The answer with reasoning blocks set aside: <think>, <thinking> and
// <reasoning> spans (an unclosed one runs to the end; a closing tag with no
// opener ends a block that began before the output, as templates that open
// the block in the prompt do). `answer` views `text` when nothing was set
// aside, else `storage`.
struct answer_text {
  std::string_view answer;
  std::string storage;
  bool had_reasoning = false;
};
void set_aside_reasoning(std::string_view text, answer_text& out);

// A piece of the answer that might hold the JSON value.
struct candidate {
  std::string_view text;
  std::size_t offset = 0;  // of text within the answer
  std::string origin;      // "fenced block 1", "JSON in prose at offset 12"
};

struct parsed_candidate {
  boost::json::value value;
  std::size_t offset = 0;
  std::string origin;
};

// Every JSON candidate of an answer that is not JSON as a whole, in text
// order: fenced ```json / ``` blocks and complete objects/arrays in prose
// (string-aware bracket matching; the fragments inside a candidate are not
// candidates of their own). Bounded: at most max_candidates of each kind,
// the last ones kept, so a pathological answer costs linear-ish time.
struct extraction {
  std::vector<parsed_candidate> parsed;  // the candidates that parse
  std::vector<candidate> unparsed;       // those that do not: what repair works on
};
inline constexpr std::size_t max_candidates = 32;
extraction extract_json(std::string_view text);

struct repair_outcome {
  std::string text;                  // the repaired candidate
  std::vector<std::string> repairs;  // readable, in the order applied
  bool cut_off = false;              // the text ended inside a value: it was truncated
};

// Removes trailing commas and, when the text ends inside a value (a truncated
// answer), cuts back to the last complete member or element and closes the
// open strings, arrays and objects. Never adds content: a dangling key, a
// cut-off number or literal is dropped, not completed. `offset` is where
// `text` starts in the raw answer, so repairs name raw offsets.
repair_outcome repair_json(std::string_view text, std::size_t offset);

}  // namespace switchboard::protocol::detail
