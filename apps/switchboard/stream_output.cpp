#include "stream_output.hpp"

#include "terminal_output.hpp"

#include <ostream>
#include <string>

namespace switchboard::cli {

namespace {

namespace orch = switchboard::orchestrator;

class stream_printer final : public orch::observer {
 public:
  explicit stream_printer(std::ostream& out) : out_(out) {}

  bool wants_deltas() const noexcept override { return true; }

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
      case event_kind::text_delta:
        start(e.agent);
        out_ << shown_lines(e.text);
        break;
      case event_kind::tool_call_delta:
        if (e.tool_delta && !e.tool_delta->name.empty()) {
          end_line();
          out_ << "  ~ " << shown(e.agent) << " calls " << shown(e.tool_delta->name) << "\n";
        }
        break;
      case event_kind::stream_restarted:
        end_line();
        out_ << "  ~ " << shown(e.agent) << ": the model call is retried; its answer starts again\n";
        break;
      default:
        end_line();  // the step's own events follow on a line of their own
        return;
    }
    out_.flush();
  }

  void start(std::string_view agent) {
    if (open_ && agent == agent_) return;
    end_line();
    agent_ = std::string(agent);
    out_ << "  ~ " << shown(agent) << ": ";
    open_ = true;
  }

  void end_line() {
    if (!open_) return;
    out_ << "\n";
    out_.flush();
    open_ = false;
  }

  std::ostream& out_;
  std::string agent_;
  bool open_ = false;  // a line of streamed text is open
};

}  // namespace

std::shared_ptr<orch::observer> make_stream_printer(std::ostream& out) { return std::make_shared<stream_printer>(out); }

}  // namespace switchboard::cli
