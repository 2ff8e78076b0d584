// prompt_library: every loaded prompt file, by name and version. Several
// versions of one prompt live side by side; a lookup without a version gives
// the newest, and a run may ask for an older one (agent_context::prompt_version).
//
// Versions are requested as "" (newest), "3", "v3" or "nl_parser.v3".
//
// Thread-safety: loading is for set-up time and not synchronised; once
// loaded, the const member functions may be called concurrently.
#pragma once

#include <switchboard/agents/prompt_file.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {

class prompt_library {
 public:
  // Throws agent_error(prompt_file_invalid) when name and version are
  // already loaded, naming both files.
  void add(prompt_file file);
  // Loads one <name>.v<version>.json file.
  const prompt_file& load_file(const std::filesystem::path& file);
  // Loads every *.json file directly in `dir` (sorted, so errors are
  // reproducible); returns how many. Throws naming the directory when it
  // does not exist, naming the file when one is invalid.
  std::size_t load_directory(const std::filesystem::path& dir);

  // nullptr when absent; version 0 = newest.
  const prompt_file* find(std::string_view name, int version = 0) const;
  // Throws agent_error(unknown_prompt_version) naming the prompt and the
  // versions loaded (or unknown_agent when no version of `name` is loaded).
  const prompt_file& at(std::string_view name, std::string_view version = {}) const;

  std::vector<std::string> names() const;                 // sorted
  std::vector<int> versions(std::string_view name) const; // ascending
  // Every version of `name`, oldest first.
  std::vector<prompt_file> all_versions(std::string_view name) const;
  bool empty() const noexcept { return prompts_.empty(); }

 private:
  std::map<std::string, std::map<int, prompt_file>, std::less<>> prompts_;
};

// Parses a requested version ("", "3", "v3", "nl_parser.v3") for prompt
// `name`; 0 means newest. Throws agent_error(unknown_prompt_version) when
// it is not of that form.
int parse_prompt_version(std::string_view name, std::string_view requested);

}  // namespace switchboard::agents
