// The family-scheduling sample's six agents and the function that registers
// them (with their output schemas) into an agent registry:
//
//   nl_parser          request text → intent, title, day/time, participants, resources
//   scheduling         candidate slots scored over the calendars, recommended slot
//   resource_manager   requested resources checked for the recommended slot
//   conflict_detection overlaps and violated constraints, with severities
//   resolution         scored strategies that resolve the conflicts, a final plan
//   query              availability questions answered with free slots
//
// scheduling, resource_manager and conflict_detection are always native C++.
// nl_parser, resolution and query are rule-based C++ offline, or LLM-backed
// agents built from the prompt files in prompts/ (same names, same output
// schemas) when `llm_backed` is set; those then use the run's "default"
// model (agent_context::models).
//
// The native agents compute synchronously inside run() (microseconds, no
// I/O), so they complete without suspending and have nothing to cancel.
// Thread-safety: the agents keep no per-run state; run() may be called
// concurrently. They share the household data read at registration time.
#pragma once

#include <switchboard/scheduling/household.hpp>

#include <boost/json/object.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {
class agent;
class agent_outputs;
class agent_registry;
}  // namespace switchboard::agents

namespace switchboard::scheduling {

// The origin shown by `switchboard agents` for the sample's agents.
inline constexpr std::string_view builtin_origin = "builtin:scheduling";

// The note printed by `switchboard run` when no model is configured.
inline constexpr std::string_view offline_note =
    "offline: rule-based nl_parser, resolution and query; set OPENAI_BASE_URL/OPENAI_API_KEY "
    "or --model for the LLM-backed agents";

struct sample_options {
  std::filesystem::path data_dir;     // household.json, resources.json, rules.json
  std::filesystem::path schemas_dir;  // <agent>.output@1.json
  bool llm_backed = false;            // nl_parser, resolution, query from prompt files
  std::filesystem::path prompts_dir;  // where those prompt files are (llm_backed only)
};

struct sample_registration {
  std::shared_ptr<const household> data;
  std::vector<std::string> native_agents;      // registered as native C++
  std::vector<std::string> llm_backed_agents;  // registered from prompt files
};

// Loads the data and the schemas, registers the six agents with origin
// builtin_origin (the LLM-backed ones with "prompt:<file>"). Throws
// data_error (data files), protocol::protocol_error (schemas) or
// agents::agent_error (duplicate agent, prompt files).
sample_registration register_sample_agents(agents::agent_registry& registry,
                                           const sample_options& options);

// The native agents one by one (tests, embedding).
std::shared_ptr<agents::agent> make_nl_parser(std::shared_ptr<const household> data);
std::shared_ptr<agents::agent> make_scheduling(std::shared_ptr<const household> data);
std::shared_ptr<agents::agent> make_resource_manager(std::shared_ptr<const household> data);
std::shared_ptr<agents::agent> make_conflict_detection(std::shared_ptr<const household> data);
std::shared_ptr<agents::agent> make_resolution(std::shared_ptr<const household> data);
std::shared_ptr<agents::agent> make_query(std::shared_ptr<const household> data);

// A readable summary of a finished run of the sample workflow, from the
// agents' outputs: the answer to a question, or the confirmed or resolved
// plan with its notes. Empty when the outputs hold none of these.
std::string describe_outcome(const agents::agent_outputs& outputs);

// The household's members (with calendars), resources (with bookings) and
// rules as JSON, as the data files hold them: what the prompts of the
// LLM-backed agents read as {{input/context/...}}. Throws data_error.
boost::json::object sample_context(const std::filesystem::path& data_dir);

// The names of the three agents that are LLM-backed when a model is set.
std::vector<std::string> language_agent_names();

}  // namespace switchboard::scheduling
