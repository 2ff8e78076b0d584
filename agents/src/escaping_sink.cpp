// The escaping spdlog sink decorator (see escaping_sink.hpp).
#include <switchboard/agents/escaping_sink.hpp>

#include <switchboard/protocol/terminal_text.hpp>

#include <spdlog/logger.h>

#include <stdexcept>
#include <string_view>

namespace switchboard::agents {

namespace {

std::string_view view_of(spdlog::string_view_t text) { return {text.data(), text.size()}; }

}  // namespace

escaping_sink::escaping_sink(std::shared_ptr<spdlog::sinks::sink> inner) : inner_(std::move(inner)) {
  if (!inner_) throw std::invalid_argument("escaping_sink: the wrapped sink is null");
}

void escaping_sink::log(const spdlog::details::log_msg& message) {
  if (!inner_->should_log(message.level)) return;
  const std::string_view payload = view_of(message.payload);
  if (protocol::is_terminal_safe(payload)) {
    inner_->log(message);
    return;
  }
  const std::string escaped = protocol::escape_for_terminal(payload);
  spdlog::details::log_msg copy = message;
  copy.payload = spdlog::string_view_t(escaped.data(), escaped.size());
  inner_->log(copy);
}

void escaping_sink::flush() { inner_->flush(); }

void escaping_sink::set_pattern(const std::string& pattern) { inner_->set_pattern(pattern); }

void escaping_sink::set_formatter(std::unique_ptr<spdlog::formatter> formatter) {
  inner_->set_formatter(std::move(formatter));
}

std::shared_ptr<spdlog::sinks::sink> make_escaping_sink(std::shared_ptr<spdlog::sinks::sink> inner) {
  if (std::dynamic_pointer_cast<escaping_sink>(inner)) return inner;
  return std::make_shared<escaping_sink>(std::move(inner));
}

void escape_log_messages(spdlog::logger& logger) {
  for (auto& sink : logger.sinks()) sink = make_escaping_sink(std::move(sink));
}

}  // namespace switchboard::agents
