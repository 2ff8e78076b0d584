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

}  // namespace switchboard::agents::detail
