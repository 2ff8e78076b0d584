// prompt_library: name -> version -> prompt_file.
#include <switchboard/agents/prompt_library.hpp>

#include <switchboard/agents/agent_registry.hpp>

#include <algorithm>
#include <charconv>

namespace switchboard::agents {

namespace {

std::string list_versions(const std::map<int, prompt_file>& versions) {
  std::string out;
  for (const auto& [v, file] : versions) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

}  // namespace

int parse_prompt_version(std::string_view name, std::string_view requested) {
  std::string_view digits = requested;
  if (digits.empty()) return 0;
  const std::string tagged = std::string(name) + ".v";
  if (digits.starts_with(tagged)) {
    digits.remove_prefix(tagged.size());
  } else if (digits.starts_with("v")) {
    digits.remove_prefix(1);
  }
  int version = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), version);
  if (ec != std::errc{} || ptr != digits.data() + digits.size() || version < 1) {
    throw agent_error(agent_errc::unknown_prompt_version,
                      "prompt '" + std::string(name) + "': version \"" + std::string(requested) +
                          "\" is not of the form 3, v3 or " + std::string(name) + ".v3");
  }
  return version;
}

void prompt_library::add(prompt_file file) {
  auto& versions = prompts_[file.name];
  if (auto it = versions.find(file.version); it != versions.end()) {
    throw agent_error(agent_errc::prompt_file_invalid,
                      file.path.string() + ": prompt " + file.version_tag() +
                          " is already loaded from " + it->second.path.string());
  }
  const int version = file.version;
  versions.emplace(version, std::move(file));
}

const prompt_file& prompt_library::load_file(const std::filesystem::path& file) {
  prompt_file pf = prompt_file::load(file);
  const std::string name = pf.name;
  const int version = pf.version;
  add(std::move(pf));
  return *find(name, version);
}

std::size_t prompt_library::load_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw agent_error(agent_errc::prompt_file_invalid,
                      dir.string() + ": not a directory of prompt files");
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::ranges::sort(files);
  for (const auto& f : files) load_file(f);
  return files.size();
}

const prompt_file* prompt_library::find(std::string_view name, int version) const {
  const auto it = prompts_.find(name);
  if (it == prompts_.end() || it->second.empty()) return nullptr;
  if (version == 0) return &it->second.rbegin()->second;
  const auto v = it->second.find(version);
  return v == it->second.end() ? nullptr : &v->second;
}

const prompt_file& prompt_library::at(std::string_view name, std::string_view version) const {
  const auto it = prompts_.find(name);
  if (it == prompts_.end()) {
    std::string have;
    for (const auto& n : names()) have += (have.empty() ? "" : ", ") + n;
    throw agent_error(agent_errc::unknown_agent, "no prompt named '" + std::string(name) +
                                                     "' is loaded (loaded: " +
                                                     (have.empty() ? "none" : have) + ")");
  }
  const int wanted = parse_prompt_version(name, version);
  if (const auto* pf = find(name, wanted)) return *pf;
  throw agent_error(agent_errc::unknown_prompt_version,
                    "prompt '" + std::string(name) + "' has no version " + std::to_string(wanted) +
                        " (loaded: " + list_versions(it->second) + ")");
}

std::vector<std::string> prompt_library::names() const {
  std::vector<std::string> out;
  for (const auto& [name, versions] : prompts_) out.push_back(name);
  return out;
}

std::vector<int> prompt_library::versions(std::string_view name) const {
  std::vector<int> out;
  if (const auto it = prompts_.find(name); it != prompts_.end()) {
    for (const auto& [v, file] : it->second) out.push_back(v);
  }
  return out;
}

std::vector<prompt_file> prompt_library::all_versions(std::string_view name) const {
  std::vector<prompt_file> out;
  if (const auto it = prompts_.find(name); it != prompts_.end()) {
    for (const auto& [v, file] : it->second) out.push_back(file);
  }
  return out;
}

}  // namespace switchboard::agents
