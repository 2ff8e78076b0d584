// Terminal-safe printing and logging for the `switchboard` tool (see
// terminal_output.hpp).
#include "terminal_output.hpp"

#include <switchboard/agents/escaping_sink.hpp>
#include <switchboard/protocol/terminal_text.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>
#include <ostream>
#include <string>

namespace switchboard::cli {

namespace sp = switchboard::protocol;

std::string shown(std::string_view untrusted) { return sp::escape_for_terminal(untrusted); }

std::string shown_lines(std::string_view untrusted) {
  return sp::escape_for_terminal(untrusted, sp::line_breaks::keep);
}

namespace {

namespace json = boost::json;

template <typename Integer>
void append_integer(std::string& out, Integer n) {
  char buffer[24];
  out.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, n).ptr);
}

// Boost.JSON writes doubles in the shortest exponent form (0.9 as 9E-1):
// exact, but not what a person reading a confidence expects.
void append_double(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "null";
    return;
  }
  if (std::isinf(d)) {
    out += d > 0 ? "1e99999" : "-1e99999";
    return;
  }
  char buffer[400];  // the longest fixed form below 1e21 is far shorter
  const double magnitude = std::fabs(d);
  // Below 1e16 the fixed form has no more digits than the shortest one;
  // above, it would spell out the binary value's noise (2^60 as
  // 1152921504606846976 rather than 1.152921504606847e+18).
  const bool ordinary = magnitude == 0 || (magnitude >= 1e-6 && magnitude < 1e16);
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, d,
                                       ordinary ? std::chars_format::fixed : std::chars_format::scientific);
  const std::string_view text(buffer, ec == std::errc{} ? static_cast<std::size_t>(end - buffer) : 0);
  out += text;
  // A whole double stays a double when read back.
  if (ordinary && text.find('.') == std::string_view::npos) out += ".0";
}

void append_string(std::string& out, json::string_view s) { out += json::serialize(json::string(s)); }

// Recursive: the values printed come from the tool itself or from text
// parsed with protocol::untrusted_parse_options (max_json_depth).
void append_json(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: out += "null"; return;
    case json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
    case json::kind::int64: append_integer(out, v.get_int64()); return;
    case json::kind::uint64: append_integer(out, v.get_uint64()); return;
    case json::kind::double_: append_double(out, v.get_double()); return;
    case json::kind::string: append_string(out, v.get_string()); return;
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v.get_array()) {
        if (!first) out += ',';
        first = false;
        append_json(out, item);
      }
      out += ']';
      return;
    }
    case json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& member : v.get_object()) {
        if (!first) out += ',';
        first = false;
        append_string(out, member.key());
        out += ':';
        append_json(out, member.value());
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

std::string to_json_text(const boost::json::value& value) {
  std::string out;
  append_json(out, value);
  return out;
}

void print_json(std::ostream& out, const boost::json::value& value) {
  out << sp::escape_json_for_terminal(to_json_text(value)) << "\n";
}

std::shared_ptr<spdlog::logger> use_stderr_logger(const std::string& name, spdlog::level::level_enum level) {
  auto sink = agents::make_escaping_sink(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  logger->set_level(level);
  spdlog::set_default_logger(logger);
  return logger;
}

}  // namespace switchboard::cli
