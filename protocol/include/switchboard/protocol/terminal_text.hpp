// Text from outside the process — model answers, agent explanations,
// clarification questions, user input, stored runs, error messages that
// quote any of them — made safe to show on a terminal or in a log line.
//
// A terminal acts on control characters: ESC [2J clears the screen, ESC ] 0;
// title BEL retitles the window, CR rewrites the current line, a newline
// starts what looks like a fresh log record. Bidirectional overrides reorder
// what the reader sees. The functions below replace every such character by
// a visible escape and never pass invalid UTF-8 through:
//
//   LF, CR, TAB                       \n  \r  \t
//   other C0 controls, DEL            \x1b  \x07  \x7f  (two lowercase hex digits)
//   C1 controls U+0080..U+009F        \u009b
//   bidi embeddings and overrides     \u202a .. \u202e
//   bidi isolates                     \u2066 .. \u2069
//   line and paragraph separators     \u2028  \u2029
//   a byte that is not valid UTF-8    \xff  (each byte of a broken sequence)
//
// Everything else, including valid multi-byte UTF-8 (accents, CJK, emoji)
// and the backslash itself, passes unchanged. The result is for reading,
// not for decoding back: a literal "\x1b" typed by the model looks the same
// as an escaped ESC, and neither can act on the terminal.
//
// Thread-safety: stateless free functions, safe to call from any thread.
#pragma once

#include <string>
#include <string_view>

namespace switchboard::protocol {

// What happens to line breaks and tabs.
enum class line_breaks {
  escape,  // one line: LF, CR and TAB are escaped too (log messages, table cells, single-line fields)
  keep,    // multi-line text: LF and TAB pass; CR is still escaped (it would overwrite a line)
};

// `text` with every character a terminal would act on shown as an escape.
std::string escape_for_terminal(std::string_view text, line_breaks breaks = line_breaks::escape);

// The same, appended to `out` (no temporary when the caller builds a line).
void append_escaped_for_terminal(std::string& out, std::string_view text,
                                 line_breaks breaks = line_breaks::escape);

// True when escape_for_terminal(text, breaks) == text: a cheap check that
// lets a hot path (a log sink) skip the copy for clean text.
bool is_terminal_safe(std::string_view text, line_breaks breaks = line_breaks::escape) noexcept;

// Serialized JSON (as boost::json::serialize writes it) made safe for a
// terminal without changing the value it denotes: DEL, C1 controls, bidi
// controls and line separators become \uXXXX escapes, which a JSON parser
// reads back as the same characters; a raw C0 control other than TAB and LF
// (JSON whitespace, never inside a serialized string) becomes \u00XX. A byte
// that is not valid UTF-8 cannot be written in JSON at all and becomes
// \ufffd (the replacement character): the only case where the parsed value
// differs. Precondition: `serialized_json` is JSON text (the escapes are
// only valid inside strings, and valid JSON has these characters nowhere
// else).
std::string escape_json_for_terminal(std::string_view serialized_json);

}  // namespace switchboard::protocol
