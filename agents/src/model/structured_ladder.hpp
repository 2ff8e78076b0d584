// complete_structured (structured.hpp) for callers that keep the result in
// their own frame. Internal.
#pragma once

#include <switchboard/agents/model/structured.hpp>

#include <boost/asio/awaitable.hpp>

namespace switchboard::agents::detail {

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

}  // namespace switchboard::agents::detail
