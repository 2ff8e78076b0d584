// How the `switchboard` tool shows text it did not write: model answers,
// agent explanations, clarification questions, user input, stored runs,
// error messages that quote them. Nothing from outside reaches standard
// output, standard error or a log line raw (see
// <switchboard/protocol/terminal_text.hpp> for the escapes); --json output
// stays exact JSON, only written in a terminal-safe form.
#pragma once

#include <boost/json/value.hpp>
#include <spdlog/common.h>

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

namespace spdlog { class logger; }

namespace switchboard::cli {

// One line of untrusted text for human output (line breaks escaped too).
std::string shown(std::string_view untrusted);

// Untrusted text that may span lines (an outcome, an answer): line breaks
// and tabs stay, every other control is escaped.
std::string shown_lines(std::string_view untrusted);

// `value` as compact JSON text with numbers written as people write them:
// integers as integers; doubles in the shortest form that parses back to
// the same double, without an exponent from 1e-6 up to 1e16 (0.9, 0.95,
// 1234.5) and always marked as doubles: a whole double keeps ".0" (1.0,
// 100.0), so the text parses back to a double, never to an integer. Outside
// that range the shortest exponent form (1e-07, 1e+300). NaN is written as
// null and the infinities as 1e99999 / -1e99999, as Boost.JSON does (JSON
// has neither). Strings are escaped exactly as boost::json::serialize does.
std::string to_json_text(const boost::json::value& value);

// to_json_text(value), made terminal-safe without changing what it parses
// to, and a newline.
void print_json(std::ostream& out, const boost::json::value& value);

// A logger writing to standard error (colored at a terminal) whose records
// are each one escaped line; it also becomes spdlog's default logger, so the
// library's own messages (retries, the output ladder) are covered too.
std::shared_ptr<spdlog::logger> use_stderr_logger(const std::string& name, spdlog::level::level_enum level);

}  // namespace switchboard::cli
