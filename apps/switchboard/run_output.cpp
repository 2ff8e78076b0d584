// Human output of `switchboard run` / `resume` (see run_output.hpp).
#include "run_output.hpp"

#include "terminal_output.hpp"

#include <switchboard/agents/agent_context.hpp>

#include <boost/json/object.hpp>

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
      case event_kind::tool_called:
        if (e.tool_call) print_tool_call(e.step, e.agent, *e.tool_call);
        break;
      default:
        break;
    }
    out_.flush();
  }

  // "[1] booker called book {"slot":...}: ok" (arguments cut at 200 bytes).
  void print_tool_call(std::int64_t step, std::string_view agent, const boost::json::object& call) {
    auto text = [&](std::string_view key) {
      const auto* v = call.if_contains(key);
      return v && v->is_string() ? std::string(v->get_string()) : std::string{};
    };
    std::string arguments = text("arguments");
    if (arguments.size() > 200) arguments = arguments.substr(0, 200) + "...";
    out_ << "[" << step << "] " << shown(agent) << " called " << shown(text("tool")) << " " << shown(arguments)
         << ": ";
    const auto* error = call.if_contains("error");
    if (error && error->is_object()) {
      const auto& err = error->get_object();
      const auto* code = err.if_contains("code");
      const auto* message = err.if_contains("message");
      out_ << "error " << (code && code->is_string() ? shown(code->get_string()) : std::string("?"));
      if (message && message->is_string()) out_ << " (" << shown(message->get_string()) << ")";
    } else {
      out_ << "ok";
    }
    const auto* replayed = call.if_contains("replayed");
    if (replayed && replayed->is_bool() && replayed->get_bool()) out_ << " (recorded earlier, not made again)";
    out_ << "\n";
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
