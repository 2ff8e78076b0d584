// Reads an OpenAI chat-completions stream (`stream: true` with
// stream_options.include_usage): `data:` events of chat.completion.chunk
// objects whose choices[0].delta carries the next piece of content, refusal,
// reasoning or tool_calls (by index: id, function.name on a call's first
// piece, function.arguments in pieces), finish_reason on the last choice
// chunk, then a chunk with usage and no choices, then `data: [DONE]`.
// An {"error": {...}} event fails the request with the provider's message.
// Internal.
#pragma once

#include "model_stream.hpp"

#include <span>

namespace switchboard::models::detail {

class openai_stream final : public stream_reader {
 public:
  openai_stream(stream_sink* sink, std::span<const net::http_header> secrets);

  // The answer, as read_openai_completion would read the same answer sent
  // whole (text, refusal, reasoning, tool calls checked, finish_reason,
  // stop, model, usage; raw_body: the stream). After end() said it is whole.
  chat_result result();

 private:
  struct partial_call {
    std::string id, name, arguments;
  };

  void reset() override;
  bool complete() const noexcept override { return done_; }
  std::string_view end_marker() const noexcept override { return "data: [DONE]"; }
  void on_event(const net::sse_event& event) override;
  void read_delta(const boost::json::object& delta, std::string_view data);
  void read_tool_call(const boost::json::value& piece, std::string_view data);

  std::span<const net::http_header> secrets_;
  std::string text_, refusal_, reasoning_, finish_reason_, model_;
  std::int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  std::vector<partial_call> calls_;
  bool done_ = false;
};

}  // namespace switchboard::models::detail
