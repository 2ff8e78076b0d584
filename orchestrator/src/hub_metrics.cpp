#include <switchboard/orchestrator/hub_metrics.hpp>

namespace switchboard::orchestrator {

std::string_view to_string(event_kind kind) noexcept {
  switch (kind) {
    case event_kind::workflow_started: return "workflow_started";
    case event_kind::step_started: return "step_started";
    case event_kind::step_completed: return "step_completed";
    case event_kind::step_failed: return "step_failed";
    case event_kind::routed: return "routed";
    case event_kind::paused: return "paused";
    case event_kind::resumed: return "resumed";
    case event_kind::workflow_completed: return "workflow_completed";
    case event_kind::workflow_failed: return "workflow_failed";
    case event_kind::workflow_cancelled: return "workflow_cancelled";
    case event_kind::workflow_interrupted: return "workflow_interrupted";
    case event_kind::approval_requested: return "approval_requested";
    case event_kind::tool_called: return "tool_called";
    case event_kind::text_delta: return "text_delta";
    case event_kind::tool_call_delta: return "tool_call_delta";
    case event_kind::stream_restarted: return "stream_restarted";
  }
  return "?";
}

namespace {

template <class Map>
auto& slot(Map& map, std::string_view key) {
  auto it = map.find(key);
  if (it == map.end()) it = map.emplace(std::string(key), typename Map::mapped_type{}).first;
  return it->second;
}

}  // namespace

void hub_metrics::on_event(const event& e) noexcept {
  try {
    std::lock_guard lock(mutex_);
    switch (e.kind) {
      case event_kind::workflow_started: ++started_; break;
      case event_kind::step_completed: {
        auto& s = slot(agents_, e.agent);
        ++s.ok;
        s.total_latency += e.duration;
        break;
      }
      case event_kind::step_failed: {
        auto& s = slot(agents_, e.agent);
        ++s.failed;
        s.total_latency += e.duration;
        if (e.error) ++slot(failures_, e.error->type);
        break;
      }
      case event_kind::routed: {
        auto key = std::make_pair(std::string(e.node), std::string(e.target));
        ++routes_[key];
        break;
      }
      case event_kind::paused: ++paused_; break;
      case event_kind::workflow_completed: ++completed_; break;
      case event_kind::workflow_failed:
        ++failed_;
        if (e.error) ++slot(failures_, "workflow:" + e.error->type);
        break;
      case event_kind::workflow_cancelled: ++cancelled_; break;
      case event_kind::workflow_interrupted: ++interrupted_; break;
      case event_kind::step_started:
      case event_kind::tool_called:
      case event_kind::text_delta:
      case event_kind::tool_call_delta:
      case event_kind::stream_restarted:
      case event_kind::approval_requested:  // not a clarification: kept out of clarification_rate
      case event_kind::resumed: break;
    }
  } catch (...) {
    // Metrics must never take a workflow down; a lost sample under memory
    // exhaustion is acceptable.
  }
}

std::vector<protocol::metric_sample> hub_metrics::collect() const {
  using protocol::metric_sample;
  std::vector<metric_sample> out;
  std::lock_guard lock(mutex_);
  for (const auto& [agent, s] : agents_) {
    out.push_back({"switchboard_agent_calls_total", {{"agent", agent}, {"outcome", "ok"}}, double(s.ok)});
    out.push_back({"switchboard_agent_calls_total", {{"agent", agent}, {"outcome", "failed"}}, double(s.failed)});
    out.push_back({"switchboard_agent_seconds_sum", {{"agent", agent}}, s.total_latency.count() / 1e6});
    out.push_back({"switchboard_agent_seconds_count", {{"agent", agent}}, double(s.ok + s.failed)});
  }
  for (const auto& [key, count] : routes_) {
    out.push_back({"switchboard_route_total", {{"node", key.first}, {"target", key.second}}, double(count)});
  }
  for (const auto& [status, count] : {std::pair{"started", started_}, std::pair{"completed", completed_},
                                      std::pair{"failed", failed_}, std::pair{"cancelled", cancelled_},
                                      std::pair{"interrupted", interrupted_},
                                      std::pair{"paused", paused_}}) {
    out.push_back({"switchboard_workflows_total", {{"status", status}}, double(count)});
  }
  for (const auto& [type, count] : failures_) {
    out.push_back({"switchboard_failures_total", {{"type", type}}, double(count)});
  }
  out.push_back({"switchboard_clarification_rate", {},
                 started_ ? double(paused_) / double(started_) : 0.0, metric_sample::kind::gauge});
  return out;
}

hub_metrics::agent_stats hub_metrics::agent(std::string_view name) const {
  std::lock_guard lock(mutex_);
  auto it = agents_.find(name);
  return it == agents_.end() ? agent_stats{} : it->second;
}

std::uint64_t hub_metrics::route_count(std::string_view node, std::string_view target) const {
  std::lock_guard lock(mutex_);
  auto it = routes_.find(std::make_pair(std::string(node), std::string(target)));
  return it == routes_.end() ? 0 : it->second;
}

std::uint64_t hub_metrics::failures(std::string_view type) const {
  std::lock_guard lock(mutex_);
  auto it = failures_.find(type);
  return it == failures_.end() ? 0 : it->second;
}

double hub_metrics::clarification_rate() const {
  std::lock_guard lock(mutex_);
  return started_ ? double(paused_) / double(started_) : 0.0;
}

}  // namespace switchboard::orchestrator
