// Stop reasons: the providers' words for why a model stopped, mapped once.
#include <switchboard/models/chat_model.hpp>

#include <array>
#include <utility>

namespace switchboard::models {

std::string_view to_string(stop_reason reason) noexcept {
  switch (reason) {
    case stop_reason::unknown: return "unknown";
    case stop_reason::complete: return "complete";
    case stop_reason::truncated: return "truncated";
    case stop_reason::refusal: return "refusal";
    case stop_reason::content_filter: return "content_filter";
    case stop_reason::tool_calls: return "tool_calls";
  }
  return "unknown";
}

stop_reason classify_finish_reason(std::string_view finish_reason) noexcept {
  // OpenAI and compatible servers (vLLM, llama.cpp, Ollama) first, then
  // Anthropic. "tool_use" is Anthropic's tool call; its client maps the
  // forced tool of structured output to `complete` itself.
  static constexpr std::array<std::pair<std::string_view, stop_reason>, 12> known{{
      {"stop", stop_reason::complete},
      {"eos", stop_reason::complete},
      {"end_turn", stop_reason::complete},
      {"stop_sequence", stop_reason::complete},
      {"length", stop_reason::truncated},
      {"max_tokens", stop_reason::truncated},
      {"model_context_window_exceeded", stop_reason::truncated},
      {"content_filter", stop_reason::content_filter},
      {"refusal", stop_reason::refusal},
      {"tool_calls", stop_reason::tool_calls},
      {"function_call", stop_reason::tool_calls},
      {"tool_use", stop_reason::tool_calls},
  }};
  for (const auto& [word, reason] : known)
    if (word == finish_reason) return reason;
  return stop_reason::unknown;
}

stop_reason stop_of(const chat_result& result) noexcept {
  return result.stop != stop_reason::unknown ? result.stop : classify_finish_reason(result.finish_reason);
}

}  // namespace switchboard::models
