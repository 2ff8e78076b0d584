// Human output of `switchboard run` / `resume` (see run_output.hpp).
#include "run_output.hpp"

#include "terminal_output.hpp"

#include <switchboard/agents/agent_context.hpp>
#include <switchboard/scheduling/agents.hpp>

#include <cstdio>
#include <ostream>

namespace switchboard::cli {
namespace {

namespace json = boost::json;
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

// `value` with every string in it shown on one line (keys stay: they are
// looked up, not printed).
void show_strings(json::value& value) {
  if (auto* s = value.if_string()) {
    *s = shown(*s);
  } else if (auto* a = value.if_array()) {
    for (auto& item : *a) show_strings(item);
  } else if (auto* o = value.if_object()) {
    for (auto& member : *o) show_strings(member.value());
  }
}

// The agents' latest outputs with their data's strings escaped.
agents::output_map with_shown_strings(const agents::agent_outputs& outputs) {
  agents::output_map out;
  for (const auto& name : outputs.agent_names()) {
    const protocol::envelope* latest = outputs.latest(name);
    if (!latest) continue;
    protocol::envelope copy = *latest;
    json::value data = std::move(copy.data);
    show_strings(data);
    copy.data = std::move(data.as_object());
    out.set(name, std::move(copy));
  }
  return out;
}

}  // namespace

std::shared_ptr<orch::observer> make_progress_printer(std::ostream& out) {
  return std::make_shared<progress_printer>(out);
}

std::string shown_outcome(const orch::workflow_state& state) {
  const std::string outcome = scheduling::describe_outcome(with_shown_strings(state));
  if (outcome.empty() && state.result) return shown(state.result->explanation);
  // Escaped once more as a whole: the sample's own text is trusted, but
  // nothing reaches the terminal unchecked.
  return shown_lines(outcome);
}

}  // namespace switchboard::cli
