// The structured-output parser: turns the raw text a model returned into a
// value valid against a schema, or a failure with a reason code. Never
// guesses content; never regex-scrapes prose.
//
// Stages, in order:
//   direct    – the whole text (less a UTF-8 BOM and white space) is JSON
//   extracted – a fenced ```json block, or the first complete JSON value in
//               surrounding prose (string-aware bracket matching)
//   repaired  – trailing commas removed, unclosed brackets/braces/strings of
//               a truncated answer closed at the end
// then validation against the schema and its invariants.
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

struct parse_result {
  // How the JSON was obtained; `failed` when no JSON value could be had.
  parse_stage stage = parse_stage::failed;
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
  // Result as JSON: {ok, stage, repairs, reason, errors, value}.
  boost::json::value to_json() const;
};

// Runs every stage and validates against `schema`.
parse_result parse_output(std::string_view raw, const compiled_schema& schema,
                          parser_metrics* metrics = nullptr);

// Runs the JSON stages only (direct → extract → repair), no schema.
parse_result parse_json_output(std::string_view raw, parser_metrics* metrics = nullptr);

}  // namespace switchboard::protocol
