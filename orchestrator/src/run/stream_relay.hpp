// Streaming to observers (events.hpp, "Streaming"): the stream_sink the hub
// puts on an agent's context when an observer wants deltas. It turns the
// model's pieces into text_delta / tool_call_delta / stream_restarted
// events and hands them to the observers on the run's strand: at once when
// the agent runs there, else posted there in order. Internal.
//
// Thread-safety: its callbacks come from the agent's coroutine (the run's
// strand, or a strand of the blocking pool); the observers are called on
// the run's strand only. Lifetime: owned by the agent's context (shared),
// with its own copies of everything an event needs, so a call the run gave
// up may still deliver safely.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/orchestrator/events.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace switchboard::orchestrator::detail {

// Who is streaming, for the events.
struct stream_origin {
  std::string workflow_id;
  std::string workflow_name;
  std::int64_t step = 0;
  std::string node;
  std::string agent;
};

// A relay for the observers that want deltas, or nullptr when none does.
std::shared_ptr<models::stream_sink> make_stream_relay(const std::vector<std::shared_ptr<observer>>& observers,
                                                       boost::asio::any_io_executor strand, stream_origin origin);

}  // namespace switchboard::orchestrator::detail
