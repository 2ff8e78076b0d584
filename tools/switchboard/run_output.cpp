// Human output of `switchboard run` / `resume` (see run_output.hpp).
#include "run_output.hpp"

#include "terminal_output.hpp"

#include <switchboard/agents/agent_context.hpp>

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace switchboard::cli {
namespace {

namespace orch = switchboard::orchestrator;

class progress_printer final : public orch::observer {
 public:
  explicit progress_printer(std::ostream& out) : out_(out) {}

  void on_event(const orch::event& e) noexcept override {
    try {
      print(e);
    } catch (...) {
      // Printing must never break the run.
    }
  }

 private:
  void print(const orch::event& e) {
    using orch::event_kind;
    switch (e.kind) {
      case event_kind::step_completed:
        out_ << "[" << e.step << "] " << shown(e.agent) << "  (confidence " << format(e.envelope->confidence)
             << ")\n    " << shown(e.envelope->explanation) << "\n";
        break;
      case event_kind::step_failed:
        out_ << "[" << e.step << "] " << shown(e.agent) << "  FAILED: "
             << (e.error ? shown(e.error->message) : std::string("unknown error")) << "\n";
        break;
      case event_kind::routed:
        out_ << "    -> " << shown(e.target) << "  (" << shown(e.condition) << ")\n";
        break;
      case event_kind::resumed:
        out_ << "    (resumed)\n";
        break;
      default:
        break;
    }
    out_.flush();
  }

  static std::string format(double v) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.2f", v);
    return buffer;
  }

  std::ostream& out_;
};

}  // namespace

std::shared_ptr<orch::observer> make_progress_printer(std::ostream& out) {
  return std::make_shared<progress_printer>(out);
}

std::string shown_outcome(const orch::workflow_state& state) {
  if (!state.result) return {};
  // The final step's explanation is the outcome a user reads. It may span
  // lines ("Confirmed: ...\n  how: ..."), but it is an agent's or a model's
  // text: every line is escaped on its own, and lines after the first are
  // indented, so no line of it can pass for a log record or a prompt.
  const std::string& text = state.result->explanation;
  std::string out;
  std::size_t start = 0;
  for (bool first = true; start <= text.size(); first = false) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string line = shown(std::string_view(text).substr(start, end - start));
    if (!first) out += line.starts_with("  ") ? "\n" : "\n  ";
    out += line;
    start = end + 1;
  }
  return out;
}

}  // namespace switchboard::cli
