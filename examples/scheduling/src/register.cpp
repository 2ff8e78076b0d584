// Registers the sample's agents and their output schemas.
#include <switchboard/scheduling/agents.hpp>

#include <switchboard/agents/agent_registry.hpp>

namespace switchboard::scheduling {

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
    throw agents::agent_error(agents::agent_errc::prompt_file_invalid,
                              "the LLM-backed sample agents are not available in this build");
  }
  add_native(make_nl_parser(out.data));
  add_native(make_resolution(out.data));
  add_native(make_query(out.data));
  return out;
}

}  // namespace switchboard::scheduling
