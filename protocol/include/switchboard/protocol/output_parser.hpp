// The structured-output parser: turns the raw text a model returned into a
// value valid against a schema, or a failure with a reason code. Never
// guesses content; never regex-scrapes prose. The rules, in order
// (docs/structured-outputs.md, "How the answer is found"):
//
//   direct    – the whole text (less a UTF-8 BOM and white space) is JSON
//   reasoning – <think>, <thinking> and <reasoning> blocks are set aside:
//               kept in `raw`, never parsed as the answer
//   extracted – every JSON candidate of the rest: fenced ```json blocks and
//               complete objects/arrays in prose (string-aware bracket
//               matching). Each is validated; a valid one wins, and among
//               equals the last one (an answer tends to follow its examples)
//   repaired  – only when no candidate is valid: trailing commas removed,
//               and an answer that ends inside a value cut back to its last
//               complete member and closed. Never adds content: a cut-off
//               string, number or key is dropped, not completed
// then the chosen value's validation errors, if it has any.
//
// A model that stopped at its token limit (output_end::truncated) is never
// accepted as complete: only an object or array that is whole JSON by itself
// (what was cut was white space) passes; anything else fails `truncated`.
//
// Thread-safety: parse_output is a pure function; the optional metrics
// object is thread-safe.
#pragma once

#include <switchboard/protocol/error.hpp>
#include <switchboard/protocol/validation.hpp>

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::protocol {

class parser_metrics;

enum class parse_stage { direct, extracted, repaired, failed };
std::string_view to_string(parse_stage stage) noexcept;  // "direct", ...

// How the model's output ended, from its stop reason.
enum class output_end { complete, truncated };

struct parse_result {
  // How the JSON was obtained; `failed` when no JSON value could be had.
  parse_stage stage = parse_stage::failed;
  // Where the value came from: "the whole answer", "fenced block 2",
  // "JSON in prose at offset 130", ...; empty when none was found.
  std::string origin;
  std::size_t candidates = 0;        // JSON values considered
  bool reasoning_set_aside = false;  // the output held a reasoning block
  // Every repair applied, readable ("removed trailing comma at offset 41").
  std::vector<std::string> repairs;
  // Empty on success; otherwise the reason code.
  std::optional<errc> reason;
  // The validator's (or the JSON parser's) messages.
  std::vector<validation_error> errors;
  // The parsed value (also set when validation failed, for diagnostics).
  boost::json::value value;
  // The raw text, kept next to the value.
  std::string raw;

  bool ok() const noexcept { return !reason.has_value(); }
  std::string_view reason_code() const noexcept;  // "" when ok
  // Result as JSON: {ok, stage, repairs, origin, candidates,
  // reasoning_set_aside, reason, errors, value}.
  boost::json::value to_json() const;
};

// Runs every stage and validates against `schema`.
parse_result parse_output(std::string_view raw, const compiled_schema& schema,
                          parser_metrics* metrics = nullptr, output_end end = output_end::complete);

// The same stages with no schema: every value is usable, an object beats an
// array, the last one wins.
parse_result parse_json_output(std::string_view raw, parser_metrics* metrics = nullptr,
                               output_end end = output_end::complete);

}  // namespace switchboard::protocol
