#include <switchboard/telemetry/metrics.hpp>

#include <switchboard/telemetry/span_data.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace switchboard::telemetry {
namespace detail {

struct series {
  explicit series(std::size_t buckets) : bucket_counts(buckets) {}
  std::atomic<double> value{0};  // counters
  std::vector<std::atomic<std::uint64_t>> bucket_counts;
  std::atomic<std::uint64_t> count{0};
  std::atomic<double> sum{0};
};

class instrument_state {
 public:
  instrument_state(instrument_description description, instrument_kind kind, std::vector<double> bounds,
                   std::size_t max_sets)
      : description_(std::move(description)), kind_(kind), bounds_(std::move(bounds)), max_sets_(max_sets) {}

  const instrument_description& description() const noexcept { return description_; }
  instrument_kind kind() const noexcept { return kind_; }
  const std::vector<double>& bounds() const noexcept { return bounds_; }
  std::uint64_t overflowed() const noexcept { return overflowed_.load(std::memory_order_relaxed); }

  // The series of `attributes` (sorted here when they are not), made on
  // first use; the overflow series once the instrument is full. Null only
  // when memory ran out.
  series* find(const metric_attributes& attributes) noexcept {
    try {
      if (std::is_sorted(attributes.begin(), attributes.end())) return find_sorted(attributes);
      metric_attributes sorted = attributes;
      std::sort(sorted.begin(), sorted.end());
      return find_sorted(sorted);
    } catch (...) {
      return nullptr;
    }
  }

  void add(series& cell, double value) const noexcept {
    if (!std::isfinite(value)) return;
    if (kind_ == instrument_kind::counter && value < 0) return;
    cell.value.fetch_add(value, std::memory_order_relaxed);
  }

  void record(series& cell, double value) const noexcept {
    if (!std::isfinite(value)) return;
    // Buckets are (previous bound, bound]: the first bound not below value.
    const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
    cell.bucket_counts[static_cast<std::size_t>(bucket)].fetch_add(1, std::memory_order_relaxed);
    cell.sum.fetch_add(value, std::memory_order_relaxed);
    cell.count.fetch_add(1, std::memory_order_relaxed);
  }

  metric_data collect() const {
    metric_data out;
    out.description = description_;
    out.kind = kind_;
    out.bounds = bounds_;
    out.time_unix_nano = now_unix_nano();
    std::scoped_lock lock(mutex_);
    out.start_unix_nano = start_unix_nano_;
    out.points.reserve(series_.size());
    for (const auto& [attributes, cell] : series_) {
      metric_point point;
      point.attributes = attributes;
      if (kind_ == instrument_kind::histogram) {
        // count is read first and buckets after, so that under concurrent
        // records the buckets never sum to less than count claims.
        point.count = cell->count.load(std::memory_order_relaxed);
        point.sum = cell->sum.load(std::memory_order_relaxed);
        std::uint64_t in_buckets = 0;
        for (const auto& n : cell->bucket_counts) {
          point.bucket_counts.push_back(n.load(std::memory_order_relaxed));
          in_buckets += point.bucket_counts.back();
        }
        point.count = std::max(point.count, in_buckets);
        if (point.count != in_buckets) point.bucket_counts.back() += point.count - in_buckets;
      } else {
        point.value = cell->value.load(std::memory_order_relaxed);
      }
      out.points.push_back(std::move(point));
    }
    return out;
  }

  bool empty() const {
    std::scoped_lock lock(mutex_);
    return series_.empty();
  }

 private:
  series* find_sorted(const metric_attributes& attributes) {
    std::scoped_lock lock(mutex_);
    if (auto found = series_.find(attributes); found != series_.end()) return found->second.get();
    if (series_.empty()) start_unix_nano_ = now_unix_nano();
    if (series_.size() >= max_sets_) {
      overflowed_.fetch_add(1, std::memory_order_relaxed);
      static const metric_attributes overflow{{std::string(overflow_attribute), "true"}};
      if (auto found = series_.find(overflow); found != series_.end()) return found->second.get();
      return series_.emplace(overflow, make_series()).first->second.get();
    }
    return series_.emplace(attributes, make_series()).first->second.get();
  }

  std::unique_ptr<series> make_series() const {
    return std::make_unique<series>(kind_ == instrument_kind::histogram ? bounds_.size() + 1 : 0);
  }

  const instrument_description description_;
  const instrument_kind kind_;
  const std::vector<double> bounds_;
  const std::size_t max_sets_;
  mutable std::mutex mutex_;
  // std::map: series never move once made (bound handles point at them),
  // and collection reads them in a stable order.
  std::map<metric_attributes, std::unique_ptr<series>> series_;
  std::uint64_t start_unix_nano_ = 0;
  std::atomic<std::uint64_t> overflowed_{0};
};

}  // namespace detail

void bound_instrument::add(double value) const noexcept {
  if (cell_ != nullptr) owner_->add(*cell_, value);
}

void bound_instrument::record(double value) const noexcept {
  if (cell_ != nullptr) owner_->record(*cell_, value);
}

void instrument::add(double value, const metric_attributes& attributes) const noexcept {
  if (state_->kind() == instrument_kind::histogram) return;
  if (detail::series* cell = state_->find(attributes)) state_->add(*cell, value);
}

void instrument::record(double value, const metric_attributes& attributes) const noexcept {
  if (state_->kind() != instrument_kind::histogram) return;
  if (detail::series* cell = state_->find(attributes)) state_->record(*cell, value);
}

bound_instrument instrument::bind(const metric_attributes& attributes) const noexcept {
  return bound_instrument(state_->find(attributes), state_);
}

std::uint64_t instrument::overflowed() const noexcept { return state_->overflowed(); }
const instrument_description& instrument::description() const noexcept { return state_->description(); }

struct meter::observable {
  std::uint64_t id;
  instrument_description description;
  observable_callback callback;
};

meter::meter(std::size_t max_attribute_sets)
    : max_attribute_sets_(std::max<std::size_t>(1, max_attribute_sets)), created_unix_nano_(now_unix_nano()) {}
meter::~meter() = default;

observable_registration::observable_registration(observable_registration&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), id_(other.id_) {}

observable_registration& observable_registration::operator=(observable_registration&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr) owner_->unregister(id_);
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

observable_registration::~observable_registration() {
  if (owner_ != nullptr) owner_->unregister(id_);
}

observable_registration meter::observable_counter(instrument_description description, observable_callback callback) {
  if (description.name.empty() || !callback) throw std::invalid_argument("an observable counter needs a name and a callback");
  std::scoped_lock lock(mutex_);
  for (const auto& existing : instruments_)
    if (existing->description().name == description.name)
      throw std::invalid_argument("instrument " + description.name + " is already registered as another kind");
  for (const observable& existing : observables_)
    if (existing.description.name == description.name && existing.description.unit != description.unit)
      throw std::invalid_argument("observable counter " + description.name + " is already registered with another unit");
  const std::uint64_t id = next_observable_++;
  observables_.push_back(observable{id, std::move(description), std::move(callback)});
  return observable_registration(this, id);
}

void meter::unregister(std::uint64_t id) noexcept {
  std::scoped_lock lock(mutex_);
  std::erase_if(observables_, [id](const observable& entry) { return entry.id == id; });
}

// Called with mutex_ held.
std::vector<metric_data> meter::collect_observables() const {
  std::vector<metric_data> out;
  std::map<std::string, std::map<metric_attributes, double>> sums;
  for (const observable& entry : observables_) {
    std::vector<observation> seen;
    try {
      entry.callback(seen);
    } catch (...) {
      continue;  // a callback that fails adds nothing this time
    }
    auto& series = sums[entry.description.name];
    if (series.empty() && std::none_of(out.begin(), out.end(), [&](const metric_data& m) {
          return m.description.name == entry.description.name;
        })) {
      metric_data data;
      data.description = entry.description;
      data.kind = instrument_kind::counter;
      data.start_unix_nano = created_unix_nano_;
      out.push_back(std::move(data));
    }
    for (auto& [attributes, value] : seen) {
      if (!std::isfinite(value) || value < 0) continue;
      std::sort(attributes.begin(), attributes.end());
      if (series.size() >= max_attribute_sets_ && !series.contains(attributes))
        series[{{std::string(overflow_attribute), "true"}}] += value;
      else
        series[attributes] += value;
    }
  }
  const std::uint64_t now = now_unix_nano();
  for (metric_data& data : out) {
    data.time_unix_nano = now;
    for (auto& [attributes, value] : sums[data.description.name])
      data.points.push_back(metric_point{attributes, value, {}, 0, 0});
  }
  std::erase_if(out, [](const metric_data& data) { return data.points.empty(); });
  return out;
}

instrument meter::counter(instrument_description description) {
  return make(std::move(description), instrument_kind::counter, {});
}

instrument meter::up_down_counter(instrument_description description) {
  return make(std::move(description), instrument_kind::up_down_counter, {});
}

instrument meter::histogram(instrument_description description, std::vector<double> bounds) {
  for (std::size_t i = 0; i < bounds.size(); ++i)
    if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
      throw std::invalid_argument("histogram " + description.name +
                                  ": bucket boundaries must be finite and strictly ascending");
  return make(std::move(description), instrument_kind::histogram, std::move(bounds));
}

instrument meter::make(instrument_description description, instrument_kind kind, std::vector<double> bounds) {
  if (description.name.empty()) throw std::invalid_argument("an instrument needs a name");
  std::scoped_lock lock(mutex_);
  for (const observable& existing : observables_)
    if (existing.description.name == description.name)
      throw std::invalid_argument("instrument " + description.name + " is already registered as an observable counter");
  for (const auto& existing : instruments_) {
    if (existing->description().name != description.name) continue;
    if (existing->kind() != kind || existing->description().unit != description.unit || existing->bounds() != bounds)
      throw std::invalid_argument("instrument " + description.name +
                                  " is already registered as another kind, unit or bucket boundaries");
    return instrument(*existing);
  }
  instruments_.push_back(
      std::make_unique<detail::instrument_state>(std::move(description), kind, std::move(bounds), max_attribute_sets_));
  return instrument(*instruments_.back());
}

std::vector<metric_data> meter::collect() const {
  std::vector<metric_data> out;
  std::scoped_lock lock(mutex_);
  for (const auto& state : instruments_)
    if (!state->empty()) out.push_back(state->collect());
  for (metric_data& data : collect_observables()) out.push_back(std::move(data));
  return out;
}

}  // namespace switchboard::telemetry
