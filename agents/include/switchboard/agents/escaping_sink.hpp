// A spdlog sink decorator that keeps untrusted text from acting on a
// terminal or forging log records. The hub and the model layer log model
// explanations, clarification questions, provider messages and error texts;
// wrapped sinks show the message part of every record through
// protocol::escape_for_terminal (one line: a newline becomes \n, ESC
// becomes \x1b, ...), whoever wrote the record and whatever its pattern. The
// sink's own end-of-line is untouched, so each record stays exactly one line.
//
//   auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
//   auto logger = std::make_shared<spdlog::logger>("app", make_escaping_sink(sink));
//   // or, for a logger that already exists (spdlog's default one too):
//   escape_log_messages(*spdlog::default_logger());
//
// The logger name, level and source location come from code and are not
// escaped. Patterns and formatters set later (logger.set_pattern()) reach the
// wrapped sink, so escaping survives them.
//
// Thread-safety: an escaping_sink is as thread-safe as the sink it wraps (it
// keeps no state of its own). escape_log_messages() edits the logger's sink
// list: call it before other threads log through that logger.
#pragma once

#include <spdlog/sinks/sink.h>

#include <memory>
#include <string>

namespace spdlog { class logger; }

namespace switchboard::agents {

class escaping_sink final : public spdlog::sinks::sink {
 public:
  // `inner` must not be null.
  explicit escaping_sink(std::shared_ptr<spdlog::sinks::sink> inner);

  // Hands `inner` a copy of `message` whose payload is escaped (no copy when
  // it is clean already). Records below the inner sink's level are dropped.
  void log(const spdlog::details::log_msg& message) override;
  void flush() override;
  void set_pattern(const std::string& pattern) override;
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override;

  const std::shared_ptr<spdlog::sinks::sink>& inner() const noexcept { return inner_; }

 private:
  std::shared_ptr<spdlog::sinks::sink> inner_;
};

// `inner` behind an escaping_sink (`inner` itself when it is one already).
std::shared_ptr<spdlog::sinks::sink> make_escaping_sink(std::shared_ptr<spdlog::sinks::sink> inner);

// Puts every sink of `logger` behind an escaping_sink; calling it twice
// wraps nothing twice.
void escape_log_messages(spdlog::logger& logger);

}  // namespace switchboard::agents
