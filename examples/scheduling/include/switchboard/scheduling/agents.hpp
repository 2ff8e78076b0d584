// The family-scheduling sample's seven agents and the functions that
// register them (with their output schemas) into an agent registry or a
// plugin's registrar:
//
//   nl_parser          request text → intent (create, cancel, modify = move,
//                      query), title, day/time, participants, resources; the
//                      events of a compound request; a clarification question
//   scheduling         candidate slots scored over the calendars, recommended slot
//   resource_manager   requested resources checked for the recommended slot
//                      (capacity, bookings, a free driver for a vehicle)
//   conflict_detection overlaps and violated constraints, with severities
//   resolution         scored strategies that resolve the conflicts, a final plan
//   booking            writes the event into the household's calendar (or
//                      cancels or moves one), re-checked in one transaction
//   query              questions answered from the calendars
//
// Every agent reads the household's calendar (calendar.hpp: a SQLite file
// or in memory) when it runs, so what one run booked, the next one sees.
// nl_parser, resolution and query read it through the calendar tools
// (tools.hpp), LLM-backed or not; booking changes it only through
// calendar.book / calendar.cancel, which by default wait for the user's
// approval (sample_options::confirm_bookings).
// scheduling, resource_manager, conflict_detection and booking are always
// native C++. nl_parser, resolution and query are rule-based C++ offline,
// or LLM-backed agents built from the prompt files in prompts/ (same names,
// same output schemas) when `llm_backed` is set; those then use the run's
// "default" model (agent_context::models).
//
// The native agents read (and booking writes) the calendar synchronously;
// they declare blocks_thread(), so a hub runs them on its blocking pool.
// Thread-safety: the agents keep no per-run state; run() may be called
// concurrently (the calendar serialises writers).
#pragma once

#include <switchboard/scheduling/calendar.hpp>
#include <switchboard/scheduling/household.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {
class agent;
class agent_registry;
class plugin_registrar;
class tool_registry;
}  // namespace switchboard::agents

namespace switchboard::scheduling {

// The origin shown by `switchboard agents` for the sample's agents.
inline constexpr std::string_view builtin_origin = "builtin:scheduling";

// The note printed by `switchboard run` when no model is configured.
inline constexpr std::string_view offline_note =
    "offline: rule-based nl_parser, resolution and query; set OPENAI_BASE_URL/OPENAI_API_KEY "
    "or --model for the LLM-backed agents";

struct sample_options {
  std::filesystem::path data_dir;     // household.json, resources.json, rules.json (the seed)
  std::filesystem::path schemas_dir;  // <agent>.output@1.json
  bool llm_backed = false;            // nl_parser, resolution, query from prompt files
  std::filesystem::path prompts_dir;  // where those prompt files are (llm_backed only)
  // The calendar file; empty: a calendar in memory, seeded from data_dir,
  // that lives as long as the agents.
  std::filesystem::path calendar_file;
  bool reset_calendar = false;        // restore the seed data into the file
  // booking waits this long before its transaction (tests of racing processes).
  std::chrono::milliseconds booking_hold{0};
  // calendar.book and calendar.cancel need the user's approval: a run
  // pauses (awaiting_approval) before the calendar changes.
  bool confirm_bookings = true;
};

struct sample_registration {
  std::shared_ptr<const household> data;        // the seed
  std::shared_ptr<scheduling::calendar> calendar;  // what the agents read and book into
  // The calendar tools (tools.hpp) the agents call; also registered as the
  // host's tools (plugin) so that `switchboard tools` lists them.
  std::shared_ptr<agents::tool_registry> tools;
  std::vector<std::string> native_agents;       // registered as native C++
  std::vector<std::string> llm_backed_agents;   // registered from prompt files
};

// Loads the data, opens (or creates) the calendar and the schemas, and
// registers the seven agents with origin builtin_origin (the LLM-backed ones
// with "prompt:<file>"). Throws data_error (data files, the calendar),
// protocol::protocol_error (schemas) or agents::agent_error (duplicate
// agent, prompt files).
sample_registration register_sample_agents(agents::agent_registry& registry,
                                           const sample_options& options);
// The same into a plugin's registrar: the schemas go into the host's
// registry (registrar.host().schemas).
sample_registration register_sample_agents(agents::plugin_registrar& registrar,
                                           const sample_options& options);

// The `scheduling` plugin's registration (src/plugin.cpp calls it; tests
// call it in-process): reads the plugin's config (data, schemas, prompts,
// calendar) relative to host().base_dir, puts the calendar in
// host().state_dir/scheduling/calendar.db unless "calendar" names a file
// (in memory when neither is there), resets it under host().reset_state,
// and tells the host how it is set up (notice()).
sample_registration register_scheduling_plugin(agents::plugin_registrar& registrar);

// The agents one by one (tests, embedding). `tools`: the calendar tools
// (make_calendar_tool_registry): the rule-based nl_parser, resolution and
// query then read the calendar through calendar.household, as their
// LLM-backed versions do; null: they read it directly. booking changes the
// calendar only through calendar.book and calendar.cancel, so it needs them.
std::shared_ptr<agents::agent> make_nl_parser(std::shared_ptr<calendar> cal,
                                              std::shared_ptr<const agents::tool_registry> tools = nullptr);
std::shared_ptr<agents::agent> make_scheduling(std::shared_ptr<calendar> cal);
std::shared_ptr<agents::agent> make_resource_manager(std::shared_ptr<calendar> cal);
std::shared_ptr<agents::agent> make_conflict_detection(std::shared_ptr<calendar> cal);
std::shared_ptr<agents::agent> make_resolution(std::shared_ptr<calendar> cal,
                                               std::shared_ptr<const agents::tool_registry> tools = nullptr);
std::shared_ptr<agents::agent> make_booking(std::shared_ptr<calendar> cal,
                                            std::shared_ptr<const agents::tool_registry> tools);
std::shared_ptr<agents::agent> make_query(std::shared_ptr<calendar> cal,
                                          std::shared_ptr<const agents::tool_registry> tools = nullptr);

// The household as JSON in the data files' form: its name ("household"),
// "now", members (with calendars), resources (with bookings) and "rules"
// {hard, soft}; without `with_calendars`, members and resources only. What
// the calendar.household tool answers (tools.hpp), what prompt versions
// older than v3 read as {{input/context/...}}, and what
// household_from_json() reads back.
boost::json::object sample_context(const household& h, bool with_calendars = true);

// The names of the three agents that are LLM-backed when a model is set.
std::vector<std::string> language_agent_names();

// The output schemas the sample registers: "<agent>.output@1".
std::vector<std::string> sample_schema_ids();

}  // namespace switchboard::scheduling
