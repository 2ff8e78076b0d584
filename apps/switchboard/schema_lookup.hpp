// How `validate` and `ask` find the schema named by --schema FILE_OR_NAME:
// a schema file, or a name / name@version looked up in schema directories
// (--schemas DIR..., else $SWITCHBOARD_SCHEMA_PATH, else ./schemas).
#pragma once

#include <switchboard/protocol/schema_registry.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace switchboard::cli {

// Problems with the schema are usage errors (exit 2): nothing was checked.
protocol::compiled_schema resolve_schema(const std::string& file_or_name,
                                         const std::vector<std::filesystem::path>& schema_dirs,
                                         protocol::schema_registry& registry);

}  // namespace switchboard::cli
