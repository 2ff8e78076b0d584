// Fuzzes the structured-output parser: any text must end in a result (never
// a crash, hang or sanitizer report), and the result must be coherent.
#include <switchboard/protocol/output_parser.hpp>

#include <boost/json/parse.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace sp = switchboard::protocol;

namespace {

const sp::compiled_schema& schema() {
  static const sp::compiled_schema compiled = sp::compiled_schema::compile(
      boost::json::parse(R"({
        "type": "object",
        "properties": {
          "data": {"type": "object", "properties": {
            "start": {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$"},
            "slots": {"type": "array", "items": {"type": "integer", "minimum": 0}}},
            "required": ["start"]},
          "explanation": {"type": "string"},
          "confidence": {"type": "number", "minimum": 0, "maximum": 1},
          "reasoning": {"type": "string"}
        },
        "required": ["data", "explanation", "confidence", "reasoning"],
        "additionalProperties": false
      })"),
      "fuzz.envelope@1");
  return compiled;
}

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(data), size);

  const sp::parse_result json_only = sp::parse_json_output(raw);
  check(json_only.raw == raw);
  check(json_only.ok() == (json_only.stage != sp::parse_stage::failed));
  check(json_only.ok() || !json_only.errors.empty());
  check(json_only.stage == sp::parse_stage::repaired || json_only.repairs.empty() ||
        !json_only.ok());

  const sp::parse_result full = sp::parse_output(raw, schema());
  check(full.stage == json_only.stage);
  check(full.ok() || !full.errors.empty());
  (void)full.to_json();
  return 0;
}
