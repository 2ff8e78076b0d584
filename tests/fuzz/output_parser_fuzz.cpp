// Fuzzes what a model and a schema file can send us: any text must end in a
// result (never a crash, hang or sanitizer report), and the result must be
// coherent.
//
// The input is an answer, or a schema and an answer separated by a line
// "@@": "<schema JSON>\n@@\n<answer>". The answer goes through
// parse_json_output and parse_output against a fixed envelope schema; a
// schema part is compiled (patterns, $refs, any keyword: a refusal is fine,
// a crash is not), its strict forms are made, and the answer is validated
// against it on the fast path and on valijson, which must agree.
#include <switchboard/protocol/limits.hpp>
#include <switchboard/protocol/output_parser.hpp>

#include "../../protocol/src/validator/fast_schema.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace sp = switchboard::protocol;
namespace json = boost::json;

namespace {

const sp::compiled_schema& envelope_schema() {
  static const sp::compiled_schema compiled = sp::compiled_schema::compile(
      json::parse(R"({
        "type": "object",
        "properties": {
          "data": {"type": "object", "properties": {
            "start": {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$"},
            "code": {"type": "string", "pattern": "^(a+)+$"},
            "at": {"type": "string", "format": "date-time"},
            "slots": {"type": "array", "items": {"type": "integer", "minimum": 0}}},
            "patternProperties": {"^x-(a|b)*c$": {"type": "string"}},
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

[[noreturn]] void fail(int line) {
  std::fprintf(stderr, "check failed at output_parser_fuzz.cpp:%d\n", line);
  std::abort();
}

// A macro for the line number: clang 14 has no std::source_location.
#define check(condition) ((condition) ? void() : fail(__LINE__))

// Equal, except that a double may come back one or two ulps off: Boost.JSON
// 1.81's parser is not correctly rounded (444444444444444444444444 reads
// as 4.4444444444444444E23, which reads back as 4.444444444444445E23).
bool same_json(const json::value& a, const json::value& b) {
  if (a.is_double() && b.is_double()) {
    const double x = a.get_double(), y = b.get_double();
    return x == y || std::fabs(x - y) <= std::fabs(x) * 1e-15;
  }
  if (a.kind() != b.kind()) return false;
  if (const auto* list = a.if_array()) {
    const auto& other = b.get_array();
    if (list->size() != other.size()) return false;
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (!same_json((*list)[i], other[i])) return false;
    }
    return true;
  }
  if (const auto* object = a.if_object()) {
    const auto& other = b.get_object();
    if (object->size() != other.size()) return false;
    for (const auto& [key, value] : *object) {
      const auto* mine = other.if_contains(key);
      if (!mine || !same_json(value, *mine)) return false;
    }
    return true;
  }
  return a == b;
}

// An accepted value is one a reader can take back: it serializes to JSON
// that parses (within the limits) to the same value.
void check_reparses(const sp::parse_result& result) {
  if (!result.ok()) return;
  boost::system::error_code ec;
  const json::value again = json::parse(json::serialize(result.value), ec, {}, sp::untrusted_parse_options());
  check(!ec);
  check(same_json(again, result.value));
}

void check_coherent(const sp::parse_result& result, std::string_view raw) {
  check(result.raw == raw);
  check(!result.ok() || result.stage != sp::parse_stage::failed);
  check(result.ok() || !result.errors.empty());
  check_reparses(result);
  (void)result.to_json();
}

// A schema from the fuzz input: compiled if it can be, then used.
void exercise_schema(std::string_view schema_text, std::string_view answer, const sp::parse_result& json_only) {
  boost::system::error_code ec;
  const json::value schema = json::parse(schema_text, ec, {}, sp::untrusted_parse_options());
  if (ec) return;
  std::optional<sp::compiled_schema> compiled;
  try {
    compiled = sp::compiled_schema::compile(schema, "fuzz.schema@1");
  } catch (const sp::protocol_error& e) {
    check(e.code() == sp::make_error_code(sp::errc::unparsable_schema));
    return;
  }
  for (const auto provider : {sp::strict_provider::openai, sp::strict_provider::anthropic}) {
    (void)compiled->strict_form(provider);
  }
  const auto full = sp::parse_output(answer, *compiled);
  check_coherent(full, answer);
  for (const json::value* value : {&json_only.value, &schema}) {
    std::vector<sp::validation_error> reference;
    {
      const sp::detail::reference_validation_scope guard;
      reference = compiled->validate(*value);
    }
    check(compiled->validate(*value).empty() == reference.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view separator = "\n@@\n";
  const auto split = input.find(separator);
  const std::string_view answer = split == std::string_view::npos ? input : input.substr(split + separator.size());

  const sp::parse_result json_only = sp::parse_json_output(answer);
  check_coherent(json_only, answer);
  check(json_only.ok() == (json_only.stage != sp::parse_stage::failed));
  check(json_only.stage == sp::parse_stage::repaired || json_only.repairs.empty() || !json_only.ok());

  // With a schema the parser weighs candidates by validity (a repaired valid
  // one beats an invalid complete one), so the stages may differ; whether a
  // value was had at all, and a direct answer, may not.
  const sp::parse_result full = sp::parse_output(answer, envelope_schema());
  check((full.stage == sp::parse_stage::failed) == (json_only.stage == sp::parse_stage::failed));
  check(json_only.stage != sp::parse_stage::direct || full.stage == sp::parse_stage::direct);
  check_coherent(full, answer);

  if (split != std::string_view::npos) exercise_schema(input.substr(0, split), answer, json_only);
  return 0;
}
