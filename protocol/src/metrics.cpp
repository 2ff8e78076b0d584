// parser_metrics: lock-free counters for the structured-output parser.
#include <switchboard/protocol/metrics.hpp>

#include <array>

namespace switchboard::protocol {

namespace {

constexpr std::array<std::string_view, 4> stage_names{"direct", "extract", "repair", "validate"};
constexpr std::array<std::string_view, 3> ok_outcomes{"direct", "extracted", "repaired"};

std::size_t stage_slot(std::string_view stage) noexcept {
  for (std::size_t i = 0; i < stage_names.size(); ++i) {
    if (stage_names[i] == stage) return i;
  }
  return stage_names.size();
}

constexpr auto relaxed = std::memory_order_relaxed;

}  // namespace

void parser_metrics::record_outcome(const parse_result& result) noexcept {
  if (result.reason) {
    const auto slot = static_cast<std::size_t>(*result.reason);
    if (slot < reason_slots) failed_by_reason_[slot].fetch_add(1, relaxed);
    return;
  }
  switch (result.stage) {
    case parse_stage::direct: ok_by_stage_[0].fetch_add(1, relaxed); break;
    case parse_stage::extracted: ok_by_stage_[1].fetch_add(1, relaxed); break;
    case parse_stage::repaired: ok_by_stage_[2].fetch_add(1, relaxed); break;
    case parse_stage::failed: break;  // a failure always carries a reason
  }
}

void parser_metrics::record_stage_latency(std::string_view stage,
                                          std::chrono::nanoseconds elapsed) noexcept {
  const std::size_t slot = stage_slot(stage);
  if (slot >= stage_slots) return;  // not a parser stage: ignored, never UB
  stage_nanos_[slot].fetch_add(static_cast<std::uint64_t>(elapsed.count() < 0 ? 0 : elapsed.count()),
                               relaxed);
  stage_count_[slot].fetch_add(1, relaxed);
}

parser_metrics::counts parser_metrics::outcomes() const {
  counts c;
  c.direct = ok_by_stage_[0].load(relaxed);
  c.extracted = ok_by_stage_[1].load(relaxed);
  c.repaired = ok_by_stage_[2].load(relaxed);
  for (std::size_t slot = 1; slot < reason_slots; ++slot) {
    const auto n = failed_by_reason_[slot].load(relaxed);
    if (n == 0) continue;
    c.failed += n;
    c.failed_by_reason[std::string(to_string(static_cast<errc>(slot)))] = n;
  }
  return c;
}

std::vector<metric_sample> parser_metrics::collect() const {
  std::vector<metric_sample> samples;
  const counts c = outcomes();
  const std::uint64_t ok_counts[] = {c.direct, c.extracted, c.repaired};
  for (std::size_t i = 0; i < ok_outcomes.size(); ++i) {
    samples.push_back({"switchboard_parse_total", {{"outcome", std::string(ok_outcomes[i])}},
                       static_cast<double>(ok_counts[i]), metric_sample::kind::counter});
  }
  samples.push_back({"switchboard_parse_total", {{"outcome", "failed"}},
                     static_cast<double>(c.failed), metric_sample::kind::counter});
  for (const auto& [reason, n] : c.failed_by_reason) {
    samples.push_back({"switchboard_parse_failed_total", {{"reason", reason}},
                       static_cast<double>(n), metric_sample::kind::counter});
  }
  for (std::size_t i = 0; i < stage_slots; ++i) {
    const std::map<std::string, std::string> labels{{"stage", std::string(stage_names[i])}};
    samples.push_back({"switchboard_parse_stage_seconds_sum", labels,
                       static_cast<double>(stage_nanos_[i].load(relaxed)) / 1e9,
                       metric_sample::kind::counter});
    samples.push_back({"switchboard_parse_stage_count", labels,
                       static_cast<double>(stage_count_[i].load(relaxed)),
                       metric_sample::kind::counter});
  }
  return samples;
}

}  // namespace switchboard::protocol
