// deliver_whole (chat_model.hpp): a whole answer as the pieces a stream
// would have given.
#include <switchboard/models/chat_model.hpp>

namespace switchboard::models {

void deliver_whole(stream_sink* sink, const chat_result& result) {
  if (sink == nullptr) return;
  if (!result.text.empty()) sink->on_text(result.text);
  for (std::size_t i = 0; i < result.tool_calls.size(); ++i) {
    const auto& call = result.tool_calls[i];
    sink->on_tool_call({i, call.id, call.name, call.arguments});
  }
}

}  // namespace switchboard::models
