// Terminal-safe printing and logging for the `switchboard` tool (see
// terminal_output.hpp).
#include "terminal_output.hpp"

#include <switchboard/agents/escaping_sink.hpp>
#include <switchboard/protocol/terminal_text.hpp>

#include <boost/json/serialize.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <ostream>

namespace switchboard::cli {

namespace sp = switchboard::protocol;

std::string shown(std::string_view untrusted) { return sp::escape_for_terminal(untrusted); }

std::string shown_lines(std::string_view untrusted) {
  return sp::escape_for_terminal(untrusted, sp::line_breaks::keep);
}

void print_json(std::ostream& out, const boost::json::value& value) {
  out << sp::escape_json_for_terminal(boost::json::serialize(value)) << "\n";
}

std::shared_ptr<spdlog::logger> use_stderr_logger(const std::string& name, spdlog::level::level_enum level) {
  auto sink = agents::make_escaping_sink(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  logger->set_level(level);
  spdlog::set_default_logger(logger);
  return logger;
}

}  // namespace switchboard::cli
