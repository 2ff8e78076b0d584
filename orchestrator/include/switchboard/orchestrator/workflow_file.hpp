// The JSON workflow file: the same workflow_definition the C++ builder
// produces, read from a file (format: docs/workflow-file.md).
//
// Errors throw orchestrator_error(invalid_workflow_file) whose message names
// the file, the node and the JSON path, and for malformed JSON the line and
// column: "flows/s.json: node 'parse': /nodes/parse/routes/1/when: unknown
// condition key 'eqals'". The `plugins` field is parsed into
// workflow_definition::plugins; loading them is the caller's job (before
// compile(), so their agents are registered).
//
// Thread-safety: pure functions.
#pragma once

#include <switchboard/orchestrator/workflow.hpp>

#include <boost/json/value.hpp>

#include <filesystem>
#include <string_view>

namespace switchboard::orchestrator {

// `source` names the origin in errors (a file name, "<string>").
workflow_definition parse_workflow(const boost::json::value& json, std::string_view source);
workflow_definition parse_workflow_text(std::string_view text, std::string_view source);
workflow_definition load_workflow_file(const std::filesystem::path& file);

// The file form of a definition; parse_workflow(to_json(d)) == d except for
// a coordinator's C++ router, which has no file form.
boost::json::value to_json(const workflow_definition& definition);

}  // namespace switchboard::orchestrator
