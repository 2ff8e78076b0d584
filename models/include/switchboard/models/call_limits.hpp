// call_limits: what the invoker of a run (the command line, an application's
// configuration) says every structured model call may spend — attempts,
// time, the output rung — whatever the code or prompt file making the call
// would choose. The `switchboard` tool fills it from --max-attempts,
// --timeout and --mode and puts it on the run's model_set; llm_agent (and
// the hub's coordinator and synthesis) apply it with apply_call_limits()
// (structured.hpp) over their own settings.
//
// Thread-safety: a plain value.
#pragma once

#include <switchboard/models/chat_model.hpp>

#include <chrono>
#include <optional>

namespace switchboard::protocol { class parser_metrics; }

namespace switchboard::models {

struct call_limits {
  // Requests one call may send in total: the first, transport retries
  // (429, 5xx, timeouts) and re-asks after invalid answers alike.
  std::optional<int> max_attempts;
  // The whole call, retries, back-off and re-asks included.
  std::optional<std::chrono::milliseconds> timeout;
  // Use this rung of the output ladder whatever the model supports.
  std::optional<output_mode> force_mode;
  // Where each call's parse outcome is counted when the call's own options
  // name no counter (so agents from plugins count too); must outlive the run.
  protocol::parser_metrics* metrics = nullptr;

  bool empty() const noexcept { return !max_attempts && !timeout && !force_mode && !metrics; }
};

}  // namespace switchboard::models
