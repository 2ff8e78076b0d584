// Helpers for the streaming tests: a sink that records what it was given,
// and checks on it.
#pragma once

#include <switchboard/models/chat_model.hpp>
#include <switchboard/protocol/utf8.hpp>

#include <string>
#include <vector>

namespace switchboard::models::test {

// Records every delta; `text` and `calls` hold what the deltas add up to
// since the last restart.
struct recording_sink final : stream_sink {
  std::vector<std::string> text_deltas;
  std::string text;
  std::vector<tool_call> calls;
  int restarts = 0;
  bool all_whole_utf8 = true;  // every delta was whole, well-formed UTF-8

  void on_text(std::string_view delta) override {
    check(delta);
    text_deltas.emplace_back(delta);
    text.append(delta);
  }
  void on_tool_call(const tool_call_delta& delta) override {
    check(delta.arguments);
    if (calls.size() <= delta.index) calls.resize(delta.index + 1);
    auto& call = calls[delta.index];
    if (!delta.id.empty()) call.id = std::string(delta.id);
    if (!delta.name.empty()) call.name = std::string(delta.name);
    call.arguments.append(delta.arguments);
  }
  void on_restart() override {
    ++restarts;
    text.clear();
    calls.clear();
  }

 private:
  void check(std::string_view piece) {
    std::string copy(piece);
    protocol::replace_invalid_utf8(copy);
    if (copy != piece) all_whole_utf8 = false;
  }
};

// The parts of a result that streaming must not change.
inline void expect_same_answer(const chat_result& streamed, const chat_result& whole) {
  EXPECT_EQ(streamed.text, whole.text);
  EXPECT_EQ(streamed.finish_reason, whole.finish_reason);
  EXPECT_EQ(streamed.stop, whole.stop);
  EXPECT_EQ(streamed.refusal, whole.refusal);
  EXPECT_EQ(streamed.reasoning, whole.reasoning);
  EXPECT_EQ(streamed.model, whole.model);
  EXPECT_EQ(streamed.usage.prompt_tokens, whole.usage.prompt_tokens);
  EXPECT_EQ(streamed.usage.completion_tokens, whole.usage.completion_tokens);
  EXPECT_EQ(streamed.tool_calls, whole.tool_calls);
}

}  // namespace switchboard::models::test
