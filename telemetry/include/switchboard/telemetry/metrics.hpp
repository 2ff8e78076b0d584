// A small OpenTelemetry metrics SDK: a meter makes instruments — counters,
// up-down counters and histograms with explicit bucket boundaries — and
// collects what they recorded as cumulative points, for the OTLP exporter
// (otlp_metric_exporter.hpp) and for Prometheus text (prometheus.hpp) alike.
//
// Attributes are string pairs; each distinct set is one series. An
// instrument keeps at most `max_attribute_sets` of them: a later new set is
// recorded under the single set {otel.metric.overflow="true"} (as the
// OpenTelemetry SDK specification's cardinality limit does) and counted in
// overflowed(), so that untrusted values can never grow memory without a
// limit.
//
// Record path: add()/record() take the instrument's mutex for one lookup in
// a small map; bind() looks the series up once and returns a handle that
// records with atomics only, for hot paths with fixed attributes.
//
// Temporality: cumulative — every point counts from the instrument's first
// use (start_unix_nano) to collection.
//
// Thread-safety: every member of every type here may be called from any
// thread at once. Instruments live as long as their meter (handles and
// references must not outlive it).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchboard::telemetry {

// Sorted by key, one value per key (the meter sorts what it is given).
using metric_attributes = std::vector<std::pair<std::string, std::string>>;

enum class instrument_kind { counter, up_down_counter, histogram };

struct instrument_description {
  std::string name;         // "gen_ai.client.token.usage"
  std::string unit;         // UCUM: "s", "{token}", "1"
  std::string description;  // one sentence
};

// One series at collection time.
struct metric_point {
  metric_attributes attributes;
  double value = 0;                          // counters
  std::vector<std::uint64_t> bucket_counts;  // histograms: bounds.size() + 1
  std::uint64_t count = 0;                   // histograms
  double sum = 0;                            // histograms
};

struct metric_data {
  instrument_description description;
  instrument_kind kind = instrument_kind::counter;
  std::vector<double> bounds;  // histograms: upper bounds, inclusive, ascending
  std::uint64_t start_unix_nano = 0;
  std::uint64_t time_unix_nano = 0;
  std::vector<metric_point> points;
};

namespace detail {
struct series;  // one attribute set's atomics
class instrument_state;
}  // namespace detail

// A series with its attributes fixed: records without a lock.
class instrument;

class bound_instrument {
 public:
  bound_instrument() = default;
  void add(double value) const noexcept;     // counters (negative values ignored) and up-down counters
  void record(double value) const noexcept;  // histograms

 private:
  friend class instrument;
  bound_instrument(detail::series* cell, const detail::instrument_state* owner) : cell_(cell), owner_(owner) {}
  detail::series* cell_ = nullptr;
  const detail::instrument_state* owner_ = nullptr;
};

class instrument {
 public:
  explicit instrument(detail::instrument_state& state) : state_(&state) {}
  // Counter: a negative or non-finite value is ignored (a counter only
  // grows). Up-down counter: any finite value.
  void add(double value, const metric_attributes& attributes = {}) const noexcept;
  // Histogram: a non-finite value is ignored.
  void record(double value, const metric_attributes& attributes = {}) const noexcept;
  bound_instrument bind(const metric_attributes& attributes) const noexcept;
  // New attribute sets recorded under the overflow set.
  std::uint64_t overflowed() const noexcept;
  const instrument_description& description() const noexcept;

 private:
  detail::instrument_state* state_;
};

// An observable counter's callback: adds the cumulative values it reads
// from elsewhere (counts some other part keeps) as (attributes, value).
using observation = std::pair<metric_attributes, double>;
using observable_callback = std::function<void(std::vector<observation>& out)>;

class meter;

// Keeps an observable counter's callback registered; unregisters it on
// destruction (which waits for a collection running it to end).
class observable_registration {
 public:
  observable_registration() = default;
  observable_registration(observable_registration&& other) noexcept;
  observable_registration& operator=(observable_registration&& other) noexcept;
  ~observable_registration();

 private:
  friend class meter;
  observable_registration(meter* owner, std::uint64_t id) : owner_(owner), id_(id) {}
  meter* owner_ = nullptr;
  std::uint64_t id_ = 0;
};

class meter {
 public:
  explicit meter(std::size_t max_attribute_sets = 2000);
  ~meter();
  meter(const meter&) = delete;
  meter& operator=(const meter&) = delete;

  // Asking again for a name returns the same instrument; asking for it as
  // another kind, unit or boundaries throws std::invalid_argument naming
  // it, as do an empty name and boundaries that are not ascending.
  instrument counter(instrument_description description);
  instrument up_down_counter(instrument_description description);
  instrument histogram(instrument_description description, std::vector<double> bounds);

  // A counter whose cumulative values `callback` reads at each collection
  // (asynchronous, in OpenTelemetry's terms). Several callbacks may feed
  // one name (same unit): their points are summed by attribute set. The
  // callback runs under the meter's lock: it must not use the meter. The
  // registration must not outlive the meter.
  observable_registration observable_counter(instrument_description description, observable_callback callback);

  // Every instrument with at least one series, in creation order, then the
  // observable counters.
  std::vector<metric_data> collect() const;

 private:
  friend class observable_registration;
  struct observable;
  void unregister(std::uint64_t id) noexcept;
  std::vector<metric_data> collect_observables() const;
  instrument make(instrument_description description, instrument_kind kind, std::vector<double> bounds);
  const std::size_t max_attribute_sets_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<detail::instrument_state>> instruments_;
  std::vector<observable> observables_;
  std::uint64_t next_observable_ = 1;
  const std::uint64_t created_unix_nano_;
};

// The attribute set that takes what a full instrument is given.
inline constexpr std::string_view overflow_attribute = "otel.metric.overflow";

}  // namespace switchboard::telemetry
