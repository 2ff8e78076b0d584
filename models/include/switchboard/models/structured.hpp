// complete_structured: ask a chat model for a value valid against a JSON
// Schema, climbing the output-mode ladder and re-asking with the validator's
// errors until a value validates, the attempts run out or the token budget
// is spent.
//
// Completion: returns a structured_result whose value has been validated —
// never something unvalidated — or throws structured_output_error (a
// model_error with code structured_output_failed or token_budget_exhausted)
// naming the schema, the last reason code and the attempt count, and
// carrying every attempt. Transport errors of the model propagate as
// model_error. When options.timeout passes between attempts, the call ends
// with structured_output_error(timeout). The request's own `budget` is
// replaced by the call's. Cancellation: as chat_model::complete.
//
// How the model stopped decides what happens next (stop_of(chat_result)):
//   truncated       the answer is never accepted as complete (reason
//                   `truncated`); the request is sent again with max_tokens
//                   doubled, within the token budget and max_output_tokens,
//                   or the call fails with that reason
//   refusal         fails at once, no re-ask: reason `refusal`, the model's words
//   content_filter  fails at once, no re-ask: reason `content_filter`
//   tool_calls      with no text: reason `unexpected_tool_call`, re-asked
//
// Not the entry point of a tool loop: a request that offers tools may be
// answered with tool calls, and this ladder treats those as no answer. The
// tool loop calls chat_model::complete() directly while the model calls
// tools, and complete_structured only for the final answer.
//   reasoning only  (no text beside reasoning): reason `reasoning_only`, re-asked
#pragma once

#include <switchboard/models/call_limits.hpp>
#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/model_error.hpp>
#include <switchboard/protocol/output_parser.hpp>
#include <switchboard/protocol/validation.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::protocol { class parser_metrics; }

namespace switchboard::models {

struct structured_options {
  protocol::compiled_schema schema;      // what the value must satisfy
  std::string schema_name;               // sent to the provider; defaults to schema.id()
  // Requests the call may send in total, counted once (call_budget in
  // chat_model.hpp): the first, the HTTP client's retries of 429/5xx/
  // timeouts and the re-asks after invalid answers all count; a provider
  // rejecting a response format gives its attempt back (the ladder steps
  // down without it counting).
  int max_attempts = 3;
  // The whole call: no attempt starts and no retry waits past it, and each
  // attempt ends by it. nullopt: each attempt has the client's request_timeout.
  std::optional<std::chrono::milliseconds> timeout;
  std::int64_t token_budget = 0;         // total tokens over all attempts; 0 = unlimited
  std::optional<output_mode> force_mode; // use this rung whatever the model supports
  protocol::parser_metrics* metrics = nullptr;
  // The most max_tokens a re-ask after a truncated answer may ask for.
  int max_output_tokens = 32768;
};

struct attempt_record {
  // 1-based: which of the call's attempts (call_budget::attempts) brought
  // this answer, so an attempt the HTTP client retried shows as a gap.
  int number = 0;
  output_mode mode = output_mode::prompt_schema;
  bool strict = false;                   // json_schema sent with strict: true
  protocol::parse_stage stage = protocol::parse_stage::failed;
  std::string reason;                    // reason code, "" when this attempt validated
  std::vector<protocol::validation_error> errors;
  std::vector<std::string> repairs;      // what the parser repaired, readable
  std::string origin;                    // where in the answer the value was found
  stop_reason stop = stop_reason::unknown;
  std::string finish_reason;             // as the provider said it
  std::optional<int> max_tokens;         // what this attempt asked for, if anything
  token_usage usage;

  // {number, mode, strict, stage, reason, errors, repairs, origin, stop,
  //  finish_reason, max_tokens, usage}; at most 20 errors, then a count.
  boost::json::object to_json() const;
};

struct structured_result {
  boost::json::value value;              // validated against options.schema
  std::vector<attempt_record> attempts;
  token_usage usage;                     // summed over attempts
  output_mode mode = output_mode::prompt_schema;
  chat_result last;                      // the answer that validated
};

class structured_output_error : public model_error {
 public:
  structured_output_error(model_errc code, const std::string& message,
                          std::string schema, std::string last_reason,
                          std::vector<attempt_record> attempts, token_usage usage,
                          std::string last_text = {})
      : model_error(code, message),
        schema_(std::move(schema)),
        last_reason_(std::move(last_reason)),
        attempts_(std::move(attempts)),
        usage_(usage),
        last_text_(std::move(last_text)) {}

  const std::string& schema() const noexcept { return schema_; }
  const std::string& last_reason() const noexcept { return last_reason_; }
  const std::vector<attempt_record>& attempts() const noexcept { return attempts_; }
  const token_usage& usage() const noexcept { return usage_; }
  // The model's text of the last answer (what was refused), for the record.
  const std::string& last_text() const noexcept { return last_text_; }

 private:
  std::string schema_;
  std::string last_reason_;
  std::vector<attempt_record> attempts_;
  token_usage usage_;
  std::string last_text_;
};

// `limits` over `options`: each limit that is set replaces the option.
void apply_call_limits(const call_limits& limits, structured_options& options);

boost::asio::awaitable<structured_result> complete_structured(chat_model& model,
                                                              chat_request request,
                                                              structured_options options);

}  // namespace switchboard::models
