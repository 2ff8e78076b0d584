// The `scheduling` plugin's set-up: what examples/scheduling/workflow.json
// names in "plugins", with its configuration there (paths relative to the
// workflow file):
//
//   "data"      the household's seed data directory (default "data")
//   "schemas"   the agents' output schemas (default "schemas")
//   "prompts"   the prompt files of the LLM-backed agents, read only when the
//               host runs with a model (default "prompts")
//   "calendar"  the calendar file (default: <state dir>/scheduling/calendar.db;
//               in memory when the host offers no state directory)
//   "confirm_bookings"  true (default) or false: the booking step's
//               calendar.book / calendar.cancel calls wait for the user's
//               approval, so the run pauses before the calendar changes
//   "booking_hold_ms"  0..5000 (default 0): the booking step waits this long
//               before its transaction; for tests of racing processes
#include <switchboard/agents/plugin.hpp>
#include <switchboard/scheduling/agents.hpp>

#include <boost/json/object.hpp>

#include <stdexcept>

namespace switchboard::scheduling {
namespace {

namespace fs = std::filesystem;

fs::path configured_path(const agents::plugin_host& host, std::string_view key, std::string_view fallback) {
  const auto* value = host.config.if_contains(key);
  if (value && (!value->is_string() || value->get_string().empty()))
    throw std::invalid_argument("config \"" + std::string(key) + "\" must be a path (a non-empty string)");
  const fs::path p{value ? std::string(value->get_string()) : std::string(fallback)};
  return p.is_absolute() || host.base_dir.empty() ? p : (host.base_dir / p).lexically_normal();
}

fs::path calendar_file(const agents::plugin_host& host) {
  if (host.config.contains("calendar")) return configured_path(host, "calendar", "");
  if (host.state_dir.empty()) return {};
  return host.state_dir / "scheduling" / "calendar.db";
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

sample_registration register_scheduling_plugin(agents::plugin_registrar& registrar) {
  const auto& host = registrar.host();
  for (const auto& member : host.config)
    if (member.key() != "data" && member.key() != "schemas" && member.key() != "prompts" &&
        member.key() != "calendar" && member.key() != "booking_hold_ms" && member.key() != "confirm_bookings")
      throw std::invalid_argument("unknown config key \"" + std::string(member.key()) +
                                  "\" (expected data, schemas, prompts, calendar, confirm_bookings, "
                                  "booking_hold_ms)");
  sample_options options;
  options.data_dir = configured_path(host, "data", "data");
  options.schemas_dir = configured_path(host, "schemas", "schemas");
  options.prompts_dir = configured_path(host, "prompts", "prompts");
  options.llm_backed = host.model_configured;
  options.calendar_file = calendar_file(host);
  options.reset_calendar = host.reset_state;
  if (const auto* hold = host.config.if_contains("booking_hold_ms")) {
    if (!hold->is_int64() || hold->get_int64() < 0 || hold->get_int64() > 5000)
      throw std::invalid_argument("config \"booking_hold_ms\" must be an integer from 0 to 5000");
    options.booking_hold = std::chrono::milliseconds{hold->get_int64()};
  }
  if (const auto* confirm = host.config.if_contains("confirm_bookings")) {
    if (!confirm->is_bool()) throw std::invalid_argument("config \"confirm_bookings\" must be true or false");
    options.confirm_bookings = confirm->get_bool();
  }
  auto registered = register_sample_agents(registrar, options);
  if (options.llm_backed)
    registrar.notice("LLM-backed: " + joined(registered.llm_backed_agents) + " (prompts from " +
                     options.prompts_dir.string() + ")");
  else
    registrar.notice(std::string(offline_note));
  if (options.confirm_bookings)
    registrar.notice("bookings wait for your approval (config \"confirm_bookings\": false books without asking)");
  if (options.calendar_file.empty())
    registrar.notice("calendar: in memory (the host offers no state directory): bookings last for this run only");
  else
    registrar.notice("calendar: " + options.calendar_file.string() +
                     (options.reset_calendar ? " (reset to the seed data)" : ""));
  return registered;
}

}  // namespace switchboard::scheduling
