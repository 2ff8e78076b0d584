// The structured-output parser: direct → extract → repair → validate.
#include <switchboard/protocol/output_parser.hpp>

#include <switchboard/protocol/limits.hpp>
#include <switchboard/protocol/metrics.hpp>

#include "stages.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cmath>

namespace switchboard::protocol {

namespace json = boost::json;

std::string_view to_string(parse_stage stage) noexcept {
  switch (stage) {
    case parse_stage::direct: return "direct";
    case parse_stage::extracted: return "extracted";
    case parse_stage::repaired: return "repaired";
    case parse_stage::failed: return "failed";
  }
  return "failed";
}

std::string_view parse_result::reason_code() const noexcept {
  return reason ? to_string(*reason) : std::string_view{};
}

json::value parse_result::to_json() const {
  json::object out;
  out["ok"] = ok();
  out["stage"] = to_string(stage);
  json::array repair_list;
  for (const auto& r : repairs) repair_list.emplace_back(r);
  out["repairs"] = std::move(repair_list);
  out["reason"] = reason ? json::value(reason_code()) : json::value(nullptr);
  json::array error_list;
  for (const auto& e : errors) {
    error_list.push_back(json::object{{"path", e.path},
                                      {"message", e.message},
                                      {"kind", to_string(e.kind)}});
  }
  out["errors"] = std::move(error_list);
  out["value"] = value;
  return out;
}

namespace {

using clock = std::chrono::steady_clock;

// Times one stage and reports it to the metrics hook, if any.
class stage_timer {
 public:
  stage_timer(parser_metrics* metrics, std::string_view stage)
      : metrics_(metrics), stage_(stage), start_(metrics ? clock::now() : clock::time_point{}) {}
  ~stage_timer() {
    if (metrics_) metrics_->record_stage_latency(stage_, clock::now() - start_);
  }
  stage_timer(const stage_timer&) = delete;
  stage_timer& operator=(const stage_timer&) = delete;

 private:
  parser_metrics* metrics_;
  std::string_view stage_;
  clock::time_point start_;
};

std::string parse_error_message(std::string_view what, std::string_view origin,
                                const boost::system::error_code& ec) {
  return std::string(what) + " " + std::string(origin) + ": " + ec.message();
}

void fail(parse_result& result, errc reason, std::string message) {
  result.stage = parse_stage::failed;
  result.reason = reason;
  result.errors.push_back({"", std::move(message), reason});
}

bool try_direct(parse_result& result, std::string_view text, parser_metrics* metrics,
                boost::system::error_code& ec) {
  stage_timer timer(metrics, "direct");
  auto value = detail::parse_strict(text, ec);
  if (!value) return false;
  result.value = std::move(*value);
  result.stage = parse_stage::direct;
  return true;
}

// Repairs the candidates in preference order; the first that parses wins.
bool try_repair(parse_result& result, const std::vector<detail::candidate>& candidates,
                std::size_t base_offset, parser_metrics* metrics,
                std::vector<std::string>& failures) {
  stage_timer timer(metrics, "repair");
  for (const auto& c : candidates) {
    auto repaired = detail::repair_json(c.text, base_offset + c.offset);
    boost::system::error_code ec;
    auto value = detail::parse_strict(repaired.text, ec);
    if (value && !repaired.repairs.empty()) {
      result.value = std::move(*value);
      result.stage = parse_stage::repaired;
      result.repairs = std::move(repaired.repairs);
      return true;
    }
    failures.push_back(parse_error_message("could not repair", c.origin, ec));
  }
  return false;
}

parse_result run_json_stages(std::string_view raw, parser_metrics* metrics);

// The stages, then the limits every stored value is held to: a number such
// as 1e999 parses to infinity, which no JSON reader accepts back.
// True when every number in `v` is finite. Recursive: the parser has
// already held the value to max_json_depth.
bool all_numbers_finite(const json::value& v) noexcept {
  switch (v.kind()) {
    case json::kind::double_: return std::isfinite(v.get_double());
    case json::kind::object:
      for (const auto& member : v.get_object()) {
        if (!all_numbers_finite(member.value())) return false;
      }
      return true;
    case json::kind::array:
      for (const auto& item : v.get_array()) {
        if (!all_numbers_finite(item)) return false;
      }
      return true;
    default: return true;
  }
}

parse_result parse_within_limits(std::string_view raw, parser_metrics* metrics) {
  parse_result result = run_json_stages(raw, metrics);
  if (result.stage == parse_stage::failed || all_numbers_finite(result.value)) return result;
  if (auto problem = check_untrusted_value(result.value)) {
    result.value = nullptr;
    fail(result, errc::invalid_json, "the answer cannot be used: " + *problem);
  }
  return result;
}

// direct → extract → repair; records stage latencies, not the outcome.
parse_result run_json_stages(std::string_view raw, parser_metrics* metrics) {
  parse_result result;
  result.raw = std::string(raw);
  const std::string_view text = detail::trim_output(raw);
  if (text.empty()) {
    fail(result, errc::empty_output, "the model returned no text (only white space or nothing)");
    return result;
  }
  // Offsets in repair messages refer to the raw text, BOM and spaces included.
  const std::size_t base_offset = static_cast<std::size_t>(text.data() - raw.data());

  boost::system::error_code direct_error;
  if (try_direct(result, text, metrics, direct_error)) return result;

  detail::extraction extracted;
  {
    stage_timer timer(metrics, "extract");
    extracted = detail::extract_json(text);
  }
  if (extracted.value) {
    result.value = std::move(*extracted.value);
    result.stage = parse_stage::extracted;
    return result;
  }

  std::vector<std::string> failures;
  if (try_repair(result, extracted.unparsed, base_offset, metrics, failures)) return result;

  std::string message = "no JSON value found: the text is not JSON (" + direct_error.message() + ")";
  if (extracted.unparsed.empty()) {
    message += " and contains no JSON object or array";
  }
  fail(result, errc::invalid_json, std::move(message));
  for (auto& f : failures) result.errors.push_back({"", std::move(f), errc::invalid_json});
  return result;
}

// The reason code for a set of validation errors: the most basic problem
// wins (a missing field explains later type errors better than they do).
errc reason_for(const std::vector<validation_error>& errors) {
  for (const errc kind : {errc::schema_missing_field, errc::schema_type_error,
                          errc::schema_violation, errc::invariant_violation}) {
    for (const auto& e : errors) {
      if (e.kind == kind) return kind;
    }
  }
  return errors.front().kind;
}

void record(parser_metrics* metrics, const parse_result& result) {
  if (metrics) metrics->record_outcome(result);
}

}  // namespace

parse_result parse_json_output(std::string_view raw, parser_metrics* metrics) {
  parse_result result = parse_within_limits(raw, metrics);
  record(metrics, result);
  return result;
}

parse_result parse_output(std::string_view raw, const compiled_schema& schema,
                          parser_metrics* metrics) {
  parse_result result = parse_within_limits(raw, metrics);
  if (result.stage != parse_stage::failed) {
    std::vector<validation_error> errors;
    {
      stage_timer timer(metrics, "validate");
      errors = schema.validate(result.value);
    }
    if (!errors.empty()) {
      result.reason = reason_for(errors);
      result.errors = std::move(errors);
    }
  }
  record(metrics, result);
  return result;
}

}  // namespace switchboard::protocol
