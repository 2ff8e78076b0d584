// How a workflow_state is stored: a small head that every save replaces
// (status, step, next node, clarification, result, the definition's
// identity) and a journal of records that saves append (the input once,
// then each step's new outputs, audit entries, errors and answers). A save
// then costs what the step added, not the size of the whole run.
#pragma once

#include <switchboard/orchestrator/checkpoint_store.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace switchboard::orchestrator::detail {

// What a definition looked like when a run started: compared on resume.
struct definition_identity {
  std::string fingerprint;          // compiled_workflow's fingerprint
  std::vector<std::string> nodes;   // node names, in definition order
};

// How much of a state has been written: the next record holds the rest.
struct journal_marks {
  bool input = false;
  std::vector<std::size_t> runs;    // per entry of workflow_state::outputs
  std::size_t audit = 0;
  std::size_t errors = 0;
  std::size_t answers = 0;
  std::size_t tool_records = 0;     // of the step in flight
};

// The head of `state` (compact JSON).
std::string state_head(const workflow_state& state, const definition_identity& definition);

// One record with everything `state` holds beyond `marks`, which then
// cover all of it; nullopt when nothing was added.
std::optional<std::string> next_journal_record(const workflow_state& state, journal_marks& marks);

// The save of `state` by `owner` holding `fence` (the one place a save
// request is built): its head, its status and step, and one journal record
// with what `marks` do not cover yet, after which they cover all of it.
// Without marks (nullptr) the request carries no record.
save_request make_save_request(const workflow_state& state, const definition_identity& definition,
                               journal_marks* marks, std::string owner, std::int64_t fence);

// Marks covering all of `state` (a state just read back from its journal).
journal_marks marks_of(const workflow_state& state);

struct stored_run {
  workflow_state state;
  definition_identity definition;   // empty for runs stored before identities were kept
};

// Rebuilds a run from its checkpoint (head + journal). Throws
// orchestrator_error(corrupt_checkpoint) naming the workflow and what is
// wrong: text that is not JSON, too deep, a missing or mistyped field.
stored_run read_stored_run(const checkpoint& cp);

}  // namespace switchboard::orchestrator::detail
