// `switchboard run --stream`: an observer that prints each agent's model
// text as it arrives (text_delta events), escaped for the terminal
// (shown_lines), a note when a tool call starts and when a model call is
// retried (the text after the note replaces what came before it). It wants
// deltas (events.hpp "Streaming"), so the hub streams the agents' model
// calls while it is attached.
//
// Thread-safety: the hub calls it on the workflow's strand; the `switchboard`
// tool runs one workflow at a time.
#pragma once

#include <switchboard/orchestrator/events.hpp>

#include <iosfwd>
#include <memory>

namespace switchboard::cli {

// Writes to `out` (standard output, or standard error under --json so that
// standard output stays one JSON document). Add it before the progress
// printer: it ends its line when the step's own events come.
std::shared_ptr<orchestrator::observer> make_stream_printer(std::ostream& out);

}  // namespace switchboard::cli
