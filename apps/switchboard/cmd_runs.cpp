// switchboard runs — the workflow runs a store holds, and what to do with
// them.
//
//   switchboard runs [--status STATUS] [--store SPEC] [--json]
//   switchboard runs show ID [--store SPEC]
//   switchboard runs cancel ID [--store SPEC]
//   switchboard runs prune --older-than DURATION [--store SPEC]
//
// STATUS: running, awaiting_clarification, awaiting_approval, interrupted, completed, failed,
// cancelled ("interrupted" includes runs whose owner died). DURATION: a
// number with s, m, h or d ("7d"). Exit codes: 0 done, 1 refused or failed
// (unknown id, a run another process owns), 2 usage.
#include "command.hpp"
#include "state_store.hpp"
#include "terminal_output.hpp"

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/protocol/schema_registry.hpp>
#include <switchboard/orchestrator/workflow_state.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <iomanip>
#include <iostream>

namespace {

namespace json = boost::json;
namespace cli = switchboard::cli;
namespace orch = switchboard::orchestrator;
using cli::shown;
using cli::usage_error;

constexpr std::string_view usage =
    "usage: switchboard runs [--status STATUS] [--store SPEC] [--json]\n"
    "       switchboard runs show ID [--store SPEC]\n"
    "       switchboard runs cancel ID [--store SPEC]\n"
    "       switchboard runs prune --older-than DURATION [--store SPEC]\n"
    "STATUS: running, awaiting_clarification, awaiting_approval, interrupted, completed, failed, cancelled\n"
    "DURATION: a number followed by s, m, h or d, e.g. 7d\n";

struct options {
  std::string action;       // "", "show", "cancel", "prune"
  std::string id;
  std::string status;
  std::string store_spec;
  std::optional<std::chrono::seconds> older_than;
  bool json = false;
};

std::chrono::seconds parse_duration(const std::string& text) {
  long long count = 0;
  const auto* end = text.data() + text.size();
  const auto [unit, ec] = std::from_chars(text.data(), end, count);
  if (ec != std::errc{} || count < 0 || unit + 1 != end) {
    throw usage_error("--older-than expects a number followed by s, m, h or d, got '" + text + "'");
  }
  switch (*unit) {
    case 's': return std::chrono::seconds(count);
    case 'm': return std::chrono::minutes(count);
    case 'h': return std::chrono::hours(count);
    case 'd': return std::chrono::hours(24 * count);
    default: throw usage_error("--older-than expects a unit s, m, h or d, got '" + text + "'");
  }
}

options parse(std::span<const std::string> args) {
  options o;
  auto value = [&](std::size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw usage_error("option " + args[i] + " needs a value");
    return args[++i];
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--status") o.status = value(i);
    else if (a == "--store") o.store_spec = value(i);
    else if (a == "--older-than") o.older_than = parse_duration(value(i));
    else if (a == "--json") o.json = true;
    else if (a.starts_with("-")) throw usage_error("unknown option '" + a + "'");
    else if (o.action.empty() && (a == "show" || a == "cancel" || a == "prune")) o.action = a;
    else if ((o.action == "show" || o.action == "cancel") && o.id.empty()) o.id = a;
    else throw usage_error("unexpected argument '" + a + "'");
  }
  if (!o.status.empty() && !orch::parse_workflow_status(o.status)) {
    throw usage_error("unknown status '" + o.status + "'");
  }
  if ((o.action == "show" || o.action == "cancel") && o.id.empty()) throw usage_error("missing the workflow id");
  if (o.action == "prune" && !o.older_than) throw usage_error("prune needs --older-than DURATION");
  return o;
}

std::string local_time(orch::system_time t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm parts{};
  localtime_r(&seconds, &parts);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S", &parts);
  return buffer;
}

// The store's list, with the running runs whose owner process died on
// this host shown as interrupted (the store only knows leases).
std::vector<orch::run_summary> runs_with_status(const options& o, orch::checkpoint_store& store) {
  using orch::workflow_status;
  const auto wanted = orch::parse_workflow_status(o.status);
  orch::list_request request;
  if (wanted != workflow_status::running && wanted != workflow_status::interrupted) request.status = wanted;
  auto runs = cli::wait_for(orch::list_all(store, request));
  std::reverse(runs.begin(), runs.end());  // least recently saved first
  std::vector<orch::run_summary> shown;
  for (auto& r : runs) {
    if (r.status == workflow_status::running && orch::is_dead_local_owner(r.owner)) r.status = workflow_status::interrupted;
    if (!wanted || r.status == *wanted) shown.push_back(std::move(r));
  }
  return shown;
}

int list_runs(const options& o, orch::checkpoint_store& store) {
  const auto runs = runs_with_status(o, store);
  if (o.json) {
    json::array out;
    for (const auto& r : runs) {
      out.push_back(json::object{{"id", r.workflow_id}, {"workflow", r.workflow_name}, {"status", orch::to_string(r.status)},
                                 {"step", r.step}, {"owner", r.owner}, {"updated_at", local_time(r.updated_at)}});
    }
    cli::print_json(std::cout, out);
    return cli::exit_ok;
  }
  if (runs.empty()) {
    std::cout << "No runs" << (o.status.empty() ? "" : " with status " + o.status) << ".\n";
    return cli::exit_ok;
  }
  // Columns as wide as their longest value (a server's run ids are UUIDs, 36 characters).
  std::size_t id_width = 26, name_width = 20;
  for (const auto& r : runs) {
    id_width = std::max(id_width, shown(r.workflow_id).size() + 2);
    name_width = std::max(name_width, shown(r.workflow_name).size() + 2);
  }
  const auto id_w = static_cast<int>(id_width), name_w = static_cast<int>(name_width);
  std::cout << std::left << std::setw(id_w) << "ID" << std::setw(name_w) << "WORKFLOW" << std::setw(24) << "STATUS"
            << std::setw(6) << "STEP" << std::setw(21) << "UPDATED" << "OWNER\n";
  for (const auto& r : runs) {
    // Every column but the times comes from the store: untrusted.
    std::cout << std::left << std::setw(id_w) << shown(r.workflow_id) << std::setw(name_w) << shown(r.workflow_name)
              << std::setw(24) << shown(orch::to_string(r.status)) << std::setw(6) << r.step << std::setw(21)
              << local_time(r.updated_at) << (r.status == orch::workflow_status::running ? shown(r.owner) : "") << "\n";
  }
  return cli::exit_ok;
}

int show_run(const options& o, orch::checkpoint_store& store) {
  const auto cp = cli::wait_for(store.load(o.id));
  if (!cp) throw std::runtime_error("no workflow with id '" + o.id + "' in the store");
  cli::print_json(std::cout, orch::workflow_state::from_checkpoint(*cp).to_json());
  return cli::exit_ok;
}

int cancel_run(const options& o, const std::shared_ptr<orch::checkpoint_store>& store) {
  // A hub with no agents: cancelling runs nothing, it only claims and saves.
  switchboard::agents::agent_registry registry(std::make_shared<switchboard::protocol::schema_registry>());
  boost::asio::io_context io;
  orch::hub_options hub_options;
  hub_options.store = store;
  orch::hub hub{io.get_executor(), registry, hub_options};
  const auto state = cli::wait_for(hub.cancel_stored_run(o.id));
  std::cout << "Cancelled workflow " << shown(state.id) << " at step " << state.step << ".\n";
  return cli::exit_ok;
}

int prune_runs(const options& o, orch::checkpoint_store& store) {
  const auto removed = cli::wait_for(store.prune(std::chrono::system_clock::now() - *o.older_than));
  std::cout << "Removed " << removed << " finished run(s).\n";
  return cli::exit_ok;
}

int run_runs(std::span<const std::string> args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << usage;
      return cli::exit_ok;
    }
  }
  try {
    const options o = parse(args);
    auto store = cli::open_state_store(o.store_spec);
    if (o.action == "show") return show_run(o, *store);
    if (o.action == "cancel") return cancel_run(o, store);
    if (o.action == "prune") return prune_runs(o, *store);
    return list_runs(o, *store);
  } catch (const usage_error& e) {
    std::cerr << "switchboard runs: " << shown(e.what()) << "\n" << usage;
    return cli::exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "switchboard runs: " << shown(e.what()) << "\n";
    return cli::exit_failure;
  }
}

const cli::command_registration registration{
    "runs", "list, show, cancel or prune the workflow runs a store holds", &run_runs};

}  // namespace
