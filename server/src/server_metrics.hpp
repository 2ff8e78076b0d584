// What GET /metrics shows, in the Prometheus text format (0.0.4): runs by
// workflow and outcome, steps and their latency (a histogram), tool calls
// by outcome, model tokens, pauses waiting for a person, HTTP requests by
// route and status, open streams; and the samples of the hubs', parsers'
// and models' own metrics sources.
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include <switchboard/orchestrator/events.hpp>
#include <switchboard/protocol/metrics.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::server {

// A path's route for a label: ids replaced by "{id}", so the label's values
// stay few whatever clients send.
std::string route_label(std::string_view path);

class server_metrics final : public orchestrator::observer {
 public:
  void on_event(const orchestrator::event& e) noexcept override;

  void count_request(std::string_view method, std::string_view route, int status);
  void stream_opened() noexcept { ++open_streams_; }
  void stream_closed() noexcept { --open_streams_; }

  // The whole page; `waiting` are the pauses waiting now by kind
  // ("clarification", "approval"); the samples of `sources` are added
  // with a label naming the workflow each belongs to.
  using labelled_source = std::pair<std::string, const protocol::metrics_source*>;
  std::string render(const std::map<std::string, std::int64_t>& waiting,
                     const std::vector<labelled_source>& sources) const;

  static constexpr std::array<double, 11> step_buckets{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60};

 private:
  struct histogram {
    std::array<std::uint64_t, step_buckets.size()> buckets{};
    std::uint64_t count = 0;
    double sum = 0;
  };

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> runs_;        // (workflow, outcome)
  std::map<std::pair<std::string, std::string>, histogram> steps_;           // (workflow, node)
  std::map<std::pair<std::string, std::string>, std::uint64_t> step_failures_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> tool_calls_;  // (tool, outcome)
  std::map<std::pair<std::string, std::string>, std::uint64_t> tokens_;      // (workflow, kind)
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;  // (method, route, status)
  std::atomic<std::int64_t> open_streams_{0};
};

}  // namespace switchboard::server
