// Named moments at which the crash tests kill a process
// (tests/langgraph_sdk/faults/crash_points.test.mjs): a process started
// with SWITCHBOARD_FAULT_KILL_AT=<name> logs that it reached the point and
// sends itself SIGKILL there, as a power cut or the OOM killer would —
// nothing flushed, unwound or handed back. Without the variable (always,
// outside those tests) reaching a point compares one string read once.
// Never for production use. Its sibling for one process and one run,
// SWITCHBOARD_FAULT_KILL_AFTER_WRITES=N (host/fault_injection.hpp), kills
// after the Nth committed write of the checkpoint store instead.
//
// The points, in the order a run meets them:
//   serve.claimed            a server claimed a thread from the run queue
//   tool.effect_made         a tool call returned, its result not yet recorded
//   tool.result_recorded     a tool call's result recorded in the store
//   serve.pause_saved        a run paused and saved, its end not yet in the catalog
//   serve.answer_journaled   an answer's run journaled, not yet offered to the queue
//   serve.completion_saved   a run completed and saved, its end not yet in the catalog
#pragma once

#include <string_view>

namespace switchboard::orchestrator {

void crash_point(std::string_view name) noexcept;

}  // namespace switchboard::orchestrator
