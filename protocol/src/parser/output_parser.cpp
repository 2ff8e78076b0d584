// The structured-output parser: direct → extract → repair → validate.
#include <switchboard/protocol/output_parser.hpp>

#include <switchboard/protocol/limits.hpp>
#include <switchboard/protocol/metrics.hpp>

#include "stages.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <optional>

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
  out["origin"] = origin;
  out["candidates"] = candidates;
  out["reasoning_set_aside"] = reasoning_set_aside;
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

// True when every number in `v` is finite (1e999 parses to infinity, which no
// JSON reader accepts back). Recursive: the parser has already held the
// value to max_json_depth.
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

// One JSON value the answer might be, and what checking it found.
struct option {
  json::value value;
  parse_stage stage = parse_stage::failed;
  std::string origin;
  std::vector<std::string> repairs;
  std::vector<validation_error> errors;  // empty: usable (and valid, with a schema)
  bool unusable = false;                  // the value itself cannot be kept (1e999)
  bool cut_off = false;                   // repaired from a text that ended inside a value
};

// What every candidate is held to: the limits of stored values, then the
// schema when there is one.
class checker {
 public:
  checker(const compiled_schema* schema, parser_metrics* metrics) : schema_(schema), metrics_(metrics) {}

  void check(option& o) const {
    if (!all_numbers_finite(o.value)) {
      if (auto problem = check_untrusted_value(o.value)) {
        o.errors.push_back({"", "the answer cannot be used: " + *problem, errc::invalid_json});
        o.unusable = true;
        return;
      }
    }
    if (schema_ == nullptr) return;
    stage_timer timer(metrics_, "validate");
    o.errors = schema_->validate(o.value);
  }

 private:
  const compiled_schema* schema_;
  parser_metrics* metrics_;
};

// The rank of an option: valid beats invalid, complete beats repaired; with
// no schema, an object beats an array (a "[1]" footnote is not the answer).
// Among equals the last one wins: an answer tends to follow its examples.
int rank(const option& o, bool has_schema) {
  if (o.unusable) return -1;
  int r = o.errors.empty() ? 4 : 0;
  if (o.stage != parse_stage::repaired) r += 2;
  if (!has_schema && o.value.is_object()) r += 1;
  return r;
}

void take(parse_result& result, option best) {
  if (best.unusable) {
    // No JSON value could be had: nothing is kept for diagnostics either.
    result.stage = parse_stage::failed;
    result.reason = errc::invalid_json;
    result.errors = std::move(best.errors);
    return;
  }
  result.value = std::move(best.value);
  result.stage = best.stage;
  result.origin = std::move(best.origin);
  result.repairs = std::move(best.repairs);
  if (best.errors.empty()) return;
  if (best.cut_off) {
    // What the validator misses (a required field) was most likely cut
    // off with the rest: say so, rather than blame the model's schema use.
    result.reason = errc::truncated;
    result.errors.push_back({"", "the answer ends inside a JSON value (it looks cut off) and what remains is "
                                 "not a valid answer: a cut-off answer is never completed or accepted",
                             errc::truncated});
    std::ranges::move(best.errors, std::back_inserter(result.errors));
    return;
  }
  result.reason = reason_for(best.errors);
  result.errors = std::move(best.errors);
}

// Picks the best option; false when there is none.
bool choose(parse_result& result, std::vector<option>& options, bool has_schema) {
  if (options.empty()) return false;
  std::size_t best = 0;
  for (std::size_t i = 1; i < options.size(); ++i) {
    if (rank(options[i], has_schema) >= rank(options[best], has_schema)) best = i;
  }
  result.candidates = options.size();
  take(result, std::move(options[best]));
  return true;
}

bool has_valid(const std::vector<option>& options) {
  return std::ranges::any_of(options, [](const option& o) { return o.errors.empty(); });
}

// Repairs the candidates that did not parse; each one that parses after a
// repair becomes an option.
void add_repaired(std::vector<option>& options, const std::vector<detail::candidate>& candidates,
                  std::size_t base_offset, const checker& check, parser_metrics* metrics,
                  std::vector<std::string>& failures) {
  for (const auto& c : candidates) {
    detail::repair_outcome repaired;
    boost::system::error_code ec;
    std::optional<json::value> value;
    {
      stage_timer timer(metrics, "repair");
      repaired = detail::repair_json(c.text, base_offset + c.offset);
      value = detail::parse_strict(repaired.text, ec);
    }
    if (!value || repaired.repairs.empty()) {
      failures.push_back(parse_error_message("could not repair", c.origin, ec));
      continue;
    }
    option o{std::move(*value), parse_stage::repaired, c.origin, std::move(repaired.repairs), {}};
    o.cut_off = repaired.cut_off;
    check.check(o);
    options.push_back(std::move(o));
  }
}

std::string truncated_message(const boost::system::error_code& direct_error) {
  return "the model stopped at its token limit and its answer is not complete JSON (" +
         direct_error.message() + "): a cut-off answer is never completed or accepted";
}

// The answer once it is not JSON as a whole: reasoning set aside, every
// candidate checked, repair when no candidate is valid.
void parse_embedded(parse_result& result, std::string_view text, std::size_t base_offset,
                    const boost::system::error_code& direct_error, const checker& check,
                    bool has_schema, parser_metrics* metrics) {
  detail::answer_text answer;
  detail::set_aside_reasoning(text, answer);
  const std::string_view body = detail::trim_output(answer.answer);
  result.reasoning_set_aside = answer.had_reasoning;
  if (answer.had_reasoning) {
    // Offsets of repairs then refer to the answer without its reasoning.
    base_offset = 0;
    if (body.empty()) {
      fail(result, errc::reasoning_only,
           "the output holds only reasoning (a <think> block) and no answer after it");
      return;
    }
  }

  std::vector<option> options;
  boost::system::error_code ec;
  if (answer.had_reasoning) {
    if (auto value = detail::parse_strict(body, ec)) {
      options.push_back({std::move(*value), parse_stage::extracted, "the answer after the reasoning", {}, {}});
    }
  }
  detail::extraction extracted;
  if (options.empty()) {
    stage_timer timer(metrics, "extract");
    extracted = detail::extract_json(body);
  }
  for (auto& c : extracted.parsed) {
    options.push_back({std::move(c.value), parse_stage::extracted, std::move(c.origin), {}, {}});
  }
  for (auto& o : options) check.check(o);

  std::vector<std::string> failures;
  if (!has_valid(options)) add_repaired(options, extracted.unparsed, base_offset, check, metrics, failures);
  if (choose(result, options, has_schema)) return;

  std::string message = "no JSON value found: the text is not JSON (" + direct_error.message() + ")";
  if (extracted.unparsed.empty()) message += " and contains no JSON object or array";
  fail(result, errc::invalid_json, std::move(message));
  for (auto& f : failures) result.errors.push_back({"", std::move(f), errc::invalid_json});
}

// direct → (reasoning set aside) → extract → repair → validate.
parse_result parse_answer(std::string_view raw, const compiled_schema* schema, parser_metrics* metrics,
                          output_end end) {
  parse_result result;
  result.raw = std::string(raw);
  const std::string_view text = detail::trim_output(raw);
  const bool truncated = end == output_end::truncated;
  if (text.empty()) {
    fail(result, truncated ? errc::truncated : errc::empty_output,
         truncated ? "the model stopped at its token limit before it wrote an answer"
                   : "the model returned no text (only white space or nothing)");
    return result;
  }
  // Offsets in repair messages refer to the raw text, BOM and spaces included.
  const std::size_t base_offset = static_cast<std::size_t>(text.data() - raw.data());
  const checker check(schema, metrics);

  boost::system::error_code direct_error;
  std::optional<json::value> direct;
  {
    stage_timer timer(metrics, "direct");
    direct = detail::parse_strict(text, direct_error);
  }
  // After a length stop only a value that closes itself is whole: what was
  // cut was white space. A bare number or anything embedded may be cut.
  if (direct && (!truncated || direct->is_object() || direct->is_array())) {
    option o{std::move(*direct), parse_stage::direct, "the whole answer", {}, {}};
    check.check(o);
    result.candidates = 1;
    take(result, std::move(o));
    return result;
  }
  if (truncated) {
    fail(result, errc::truncated, truncated_message(direct_error));
    return result;
  }
  parse_embedded(result, text, base_offset, direct_error, check, schema != nullptr, metrics);
  return result;
}

void record(parser_metrics* metrics, const parse_result& result) {
  if (metrics) metrics->record_outcome(result);
}

}  // namespace

parse_result parse_json_output(std::string_view raw, parser_metrics* metrics, output_end end) {
  parse_result result = parse_answer(raw, nullptr, metrics, end);
  record(metrics, result);
  return result;
}

parse_result parse_output(std::string_view raw, const compiled_schema& schema, parser_metrics* metrics,
                          output_end end) {
  parse_result result = parse_answer(raw, &schema, metrics, end);
  record(metrics, result);
  return result;
}

}  // namespace switchboard::protocol
