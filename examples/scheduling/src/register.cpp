// Registers the sample's agents and their output schemas.
#include <switchboard/scheduling/agents.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/agents/prompt_library.hpp>

#include <algorithm>

namespace switchboard::scheduling {
namespace {

// Only the sample's own prompt files: the directory may hold others.
agents::prompt_library load_sample_prompts(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir))
    throw agents::agent_error(agents::agent_errc::prompt_file_invalid,
                              dir.string() + ": not a directory (expected the sample's prompt files "
                                             "nl_parser.v<N>.json, resolution.v<N>.json, query.v<N>.json)");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto parsed = agents::parse_prompt_file_name(entry.path().filename().string());
    const auto names = language_agent_names();
    if (parsed && std::ranges::find(names, parsed->first) != names.end()) files.push_back(entry.path());
  }
  std::ranges::sort(files);
  agents::prompt_library library;
  for (const auto& file : files) library.load_file(file);
  for (const auto& name : language_agent_names())
    if (!library.find(name))
      throw agents::agent_error(agents::agent_errc::prompt_file_invalid,
                                dir.string() + ": no prompt file for " + name + " (expected " + name +
                                    ".v<N>.json)");
  return library;
}

}  // namespace

std::vector<std::string> language_agent_names() { return {"nl_parser", "resolution", "query"}; }

sample_registration register_sample_agents(agents::agent_registry& registry,
                                           const sample_options& options) {
  sample_registration out;
  out.data = std::make_shared<const household>(load_household(options.data_dir));
  auto& schemas = registry.schemas();
  for (const auto* agent : {"nl_parser", "scheduling", "resource_manager", "conflict_detection",
                            "resolution", "query"}) {
    const std::string id = std::string(agent) + ".output@1";
    if (!schemas.find(id)) schemas.load_file(options.schemas_dir / (id + ".json"));
  }
  const std::string origin{builtin_origin};
  auto add_native = [&](std::shared_ptr<agents::agent> a) {
    out.native_agents.emplace_back(a->name());
    registry.add(std::move(a), origin);
  };
  add_native(make_scheduling(out.data));
  add_native(make_resource_manager(out.data));
  add_native(make_conflict_detection(out.data));
  if (options.llm_backed) {
    const auto library = load_sample_prompts(options.prompts_dir);
    for (const auto& name : language_agent_names()) {
      auto agent = agents::llm_agent::from_library(library, name, registry.schemas_ptr());
      const std::string origin_file = "prompt:" + agent->newest().path.string();
      registry.add(std::move(agent), origin_file);
      out.llm_backed_agents.push_back(name);
    }
    return out;
  }
  add_native(make_nl_parser(out.data));
  add_native(make_resolution(out.data));
  add_native(make_query(out.data));
  return out;
}

}  // namespace switchboard::scheduling
