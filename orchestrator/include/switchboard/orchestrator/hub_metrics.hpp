// Metrics of a hub, as a protocol::metrics_source (same exporter mechanism as
// the parser metrics) built from the hub's events:
//
//   switchboard_agent_calls_total{agent, outcome=ok|failed}
//   switchboard_agent_seconds_sum{agent}, switchboard_agent_seconds_count{agent}
//   switchboard_route_total{node, target}
//   switchboard_workflows_total{status=started|completed|failed|cancelled|paused|interrupted}
//   switchboard_failures_total{type}
//   switchboard_clarification_rate  (gauge: paused / started)
//
// Thread-safety: on_event and collect may be called concurrently from any
// thread (a mutex per update; cheap next to an agent call).
#pragma once

#include <switchboard/orchestrator/events.hpp>
#include <switchboard/protocol/metrics.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace switchboard::orchestrator {

class hub_metrics final : public observer, public protocol::metrics_source {
 public:
  struct agent_stats {
    std::uint64_t ok = 0, failed = 0;
    std::chrono::microseconds total_latency{0};
  };

  void on_event(const event& e) noexcept override;
  std::vector<protocol::metric_sample> collect() const override;

  agent_stats agent(std::string_view name) const;
  std::uint64_t route_count(std::string_view node, std::string_view target) const;
  std::uint64_t failures(std::string_view type) const;
  double clarification_rate() const;  // paused / started, 0 when none started

 private:
  mutable std::mutex mutex_;
  std::map<std::string, agent_stats, std::less<>> agents_;
  std::map<std::pair<std::string, std::string>, std::uint64_t, std::less<>> routes_;
  std::map<std::string, std::uint64_t, std::less<>> failures_;
  std::uint64_t started_ = 0, completed_ = 0, failed_ = 0, cancelled_ = 0, paused_ = 0, interrupted_ = 0;
};

}  // namespace switchboard::orchestrator
