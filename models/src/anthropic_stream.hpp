// Reads an Anthropic messages stream (`stream: true`): message_start (model,
// input tokens), per content block content_block_start / _delta / _stop
// (text_delta, input_json_delta of a tool_use block, thinking_delta),
// message_delta (stop_reason, output tokens), message_stop; ping is
// ignored, an error event fails the attempt (overloaded_error and api_error
// as transient: retried). Also what reading an Anthropic answer needs to know
// of its request, shared with the whole-answer reader. Internal.
#pragma once

#include "model_stream.hpp"

#include <span>

namespace switchboard::models::detail {

// A non-object output schema is wrapped as {"value": schema} in the forced tool.
inline constexpr std::string_view anthropic_wrapped_key = "value";

struct anthropic_reading {
  std::string forced_tool;    // the structured-output tool's name; empty: none forced
  bool wrapped = false;       // its input is {"value": answer}
  bool offers_tools = false;  // the request offered tools of its own
};

// The forced tool's tool_use block is the structured answer; every other
// tool_use block is a tool call. Without tools of the request's own, the
// first tool_use is the answer whatever its name. `found`: the answer was
// already found.
inline bool is_forced_answer(const anthropic_reading& how, std::string_view name, bool found) {
  return !how.forced_tool.empty() && !found && (!how.offers_tools || name == how.forced_tool);
}

class anthropic_stream final : public stream_reader {
 public:
  anthropic_stream(stream_sink* sink, anthropic_reading how, std::span<const net::http_header> secrets);

  // The answer as the whole-answer reader reads the same answer; raw_body:
  // the stream. After end() said it is whole.
  chat_result result();

 private:
  enum class block_kind { text, tool, answer, thinking, other };
  struct block {
    std::int64_t index = 0;
    block_kind kind = block_kind::other;
    std::size_t call = 0;     // tool: its place among the calls
    std::string input;        // tool, answer: the input's JSON text so far
    std::string start_input;  // tool, answer: the input given at the start (used when no delta came)
    bool stopped = false;
  };

  void reset() override;
  bool complete() const noexcept override { return done_; }
  std::string_view end_marker() const noexcept override { return "message_stop event"; }
  void on_event(const net::sse_event& event) override;
  void start_block(const boost::json::object& event, std::string_view data);
  void block_delta(const boost::json::object& event, std::string_view data);
  void stop_block(const boost::json::object& event, std::string_view data);
  void message_delta(const boost::json::object& event);
  block& find_block(const boost::json::object& event, std::string_view data);
  boost::json::value parse_input(const block& b, std::string_view data) const;

  anthropic_reading how_;
  std::span<const net::http_header> secrets_;
  std::vector<block> blocks_;
  std::vector<tool_call> calls_;
  std::string text_, answer_, reasoning_, finish_reason_, model_;
  std::int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  std::size_t tool_uses_ = 0;
  bool found_answer_ = false;
  bool done_ = false;
};

}  // namespace switchboard::models::detail
