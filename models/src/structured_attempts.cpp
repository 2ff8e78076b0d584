// The structured-output ladder's records of its attempts and what it says
// back to a model about them: an attempt's record (and its JSON, kept in a
// step's audit entry), the re-ask message, the model's words quoted in an
// error, and the max_tokens of a retry after a cut-off answer. The agents'
// tool loop shares them (models/detail/structured_ladder.hpp); the ladder
// itself is in structured.cpp.
#include <switchboard/models/detail/structured_ladder.hpp>
#include <switchboard/models/structured.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace switchboard::models {

namespace json = boost::json;

json::object attempt_record::to_json() const {
  constexpr std::size_t max_errors_recorded = 20;
  // Members emplaced into a table sized once: an audit entry gets one record
  // per model answer, and the initializer-list form builds every value twice.
  json::object out(12);
  out.emplace("number", number);
  out.emplace("mode", to_string(mode));
  out.emplace("strict", strict);
  out.emplace("stage", protocol::to_string(stage));
  out.emplace("reason", reason);  // "" when this attempt validated
  auto& error_list = out.emplace("errors", json::array()).first->value().get_array();
  if (!errors.empty()) error_list.reserve(std::min(errors.size(), max_errors_recorded + 1));
  for (std::size_t i = 0; i < errors.size() && i < max_errors_recorded; ++i) error_list.emplace_back(errors[i].to_string());
  if (errors.size() > max_errors_recorded)
    error_list.emplace_back("... and " + std::to_string(errors.size() - max_errors_recorded) + " more");
  auto& repair_list = out.emplace("repairs", json::array()).first->value().get_array();
  for (const auto& r : repairs) repair_list.emplace_back(r);
  out.emplace("origin", origin);
  out.emplace("stop", to_string(stop));
  out.emplace("finish_reason", finish_reason);
  if (max_tokens) {
    out.emplace("max_tokens", *max_tokens);
  } else {
    out.emplace("max_tokens", nullptr);
  }
  auto& tokens = out.emplace("usage", json::object(2)).first->value().get_object();
  tokens.emplace("prompt_tokens", usage.prompt_tokens);
  tokens.emplace("completion_tokens", usage.completion_tokens);
  return out;
}

namespace detail {

namespace {

constexpr std::size_t max_errors_in_reask = 10;
constexpr std::size_t max_words_quoted = 500;

}  // namespace

attempt_record record_of(const protocol::parse_result& parsed, const chat_result& answer, stop_reason stop,
                         attempt_record attempt) {
  attempt.stage = parsed.stage;
  attempt.reason = std::string(parsed.reason_code());
  attempt.errors = parsed.errors;
  attempt.repairs = parsed.repairs;
  attempt.origin = parsed.origin;
  attempt.stop = stop;
  attempt.finish_reason = answer.finish_reason;
  attempt.usage = answer.usage;
  return attempt;
}

std::string reask_message(const protocol::parse_result& parsed, std::string_view schema_id) {
  const bool json_failed = parsed.stage == protocol::parse_stage::failed;
  std::string text = json_failed
      ? "Your previous answer could not be read as JSON (" + std::string(parsed.reason_code()) + ")"
      : "Your previous answer is not valid against the JSON Schema \"" + std::string(schema_id) + "\" (" +
            std::string(parsed.reason_code()) + ")";
  text += parsed.errors.empty() ? "." : ":";
  const std::size_t shown = std::min(parsed.errors.size(), max_errors_in_reask);
  for (std::size_t i = 0; i < shown; ++i) text += "\n- " + parsed.errors[i].to_string();
  if (parsed.errors.size() > shown)
    text += "\n- ... and " + std::to_string(parsed.errors.size() - shown) + " more";
  text += "\nReply with the corrected, complete JSON value only: no prose, no Markdown code fences.";
  return text;
}

// The model's own words for a message, cut to a readable length.
std::string quoted_words(std::string_view words) {
  if (words.empty()) return "(no words given)";
  std::string out(words.substr(0, max_words_quoted));
  if (words.size() > max_words_quoted) out += "...";
  return "\"" + out + "\"";
}

// The max_tokens of the next request after a truncated answer: twice what
// was asked (or used), within max_output_tokens and what the token budget
// leaves once the prompt is paid again. Nothing when that is no more.
std::optional<int> raised_max_tokens(const chat_request& request, const chat_result& answer,
                                     const structured_options& options, const token_usage& used) {
  const std::int64_t asked = request.max_tokens.value_or(0);
  const std::int64_t current = std::max<std::int64_t>(asked, answer.usage.completion_tokens);
  std::int64_t next = std::min<std::int64_t>(current > 0 ? current * 2 : 1024, options.max_output_tokens);
  if (options.token_budget > 0) {
    next = std::min(next, options.token_budget - used.total() - answer.usage.prompt_tokens);
  }
  if (next <= current) return std::nullopt;
  return static_cast<int>(next);
}

}  // namespace detail

}  // namespace switchboard::models
