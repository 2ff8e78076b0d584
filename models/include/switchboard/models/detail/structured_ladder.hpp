// complete_structured (structured.hpp) for callers that keep the result in
// their own frame, and the ladder's pieces the agents' tool loop shares.
// Internal: not part of the stable interface.
#pragma once

#include <switchboard/models/structured.hpp>

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace switchboard::models::detail {

// complete_structured, writing the result into `out` (which must outlive the
// operation). The ladder's frame, alive for the whole model call, then keeps
// no slot of its own for a structured_result.
boost::asio::awaitable<void> complete_structured_into(chat_model& model, chat_request request,
                                                      structured_options options, structured_result& out);

// `attempt` (number, mode, max tokens set by the caller) completed with how
// the parser read `answer`: stage, reason, errors, repairs, origin, stop,
// finish reason and usage. The ladder and the tool loop record alike.
attempt_record record_of(const protocol::parse_result& parsed, const chat_result& answer, stop_reason stop,
                         attempt_record attempt);

// What a re-ask tells the model about its invalid answer: why it could not
// be read, or the validator's errors (the first few) against `schema_id`.
std::string reask_message(const protocol::parse_result& parsed, std::string_view schema_id);

// The model's own words for a message, quoted and cut to a readable length.
std::string quoted_words(std::string_view words);

// The max_tokens of the next request after a truncated answer: twice what
// was asked (or used), within max_output_tokens and what the token budget
// leaves. Nothing when that is no more.
std::optional<int> raised_max_tokens(const chat_request& request, const chat_result& answer,
                                     const structured_options& options, const token_usage& used);

}  // namespace switchboard::models::detail
