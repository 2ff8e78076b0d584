// Metrics shared by every module: a source collects samples, an exporter
// callback receives them (push), or a caller reads them (pull).
//
// parser_metrics counts structured-output outcomes (direct, extracted,
// repaired, failed by reason) and the latency of each stage.
//
// Thread-safety: parser_metrics::record and collect may be called from any
// thread concurrently (atomics, no locks on the hot path).
#pragma once

#include <switchboard/protocol/output_parser.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace switchboard::protocol {

struct metric_sample {
  enum class kind { counter, gauge };
  std::string name;                           // "switchboard_parse_total"
  std::map<std::string, std::string> labels; // {"outcome": "repaired"}
  double value = 0;
  kind type = kind::counter;
};

// Receives a batch of samples; Prometheus, StatsD, a log line — the user's
// choice. Called on the thread that pushes.
using metrics_exporter = std::function<void(std::span<const metric_sample>)>;

class metrics_source {
 public:
  virtual ~metrics_source() = default;
  virtual std::vector<metric_sample> collect() const = 0;
  void push(const metrics_exporter& exporter) const {
    auto samples = collect();
    exporter(samples);
  }
};

class parser_metrics final : public metrics_source {
 public:
  // Counts the outcome of one parse (ok by stage, or failed by reason).
  void record_outcome(const parse_result& result) noexcept;
  // Adds the time one stage took ("direct", "extract", "repair", "validate").
  void record_stage_latency(std::string_view stage, std::chrono::nanoseconds elapsed) noexcept;

  struct counts {
    std::uint64_t direct = 0, extracted = 0, repaired = 0, failed = 0;
    std::map<std::string, std::uint64_t> failed_by_reason;
  };
  counts outcomes() const;

  // switchboard_parse_total{outcome}, switchboard_parse_failed_total{reason},
  // switchboard_parse_stage_seconds_sum{stage}, switchboard_parse_stage_count{stage}
  std::vector<metric_sample> collect() const override;

 private:
  static constexpr std::size_t reason_slots = 16;
  static constexpr std::size_t stage_slots = 4;  // direct, extract, repair, validate
  std::atomic<std::uint64_t> ok_by_stage_[3]{};
  std::atomic<std::uint64_t> failed_by_reason_[reason_slots]{};
  std::atomic<std::uint64_t> stage_nanos_[stage_slots]{};
  std::atomic<std::uint64_t> stage_count_[stage_slots]{};
};

}  // namespace switchboard::protocol
