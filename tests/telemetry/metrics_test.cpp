// The metrics SDK: bucket placement on the boundaries, counters that only
// grow, the cardinality cap and its overflow series, one instrument per
// name, and totals that add up when many threads record at once.
#include <switchboard/telemetry/metrics.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace switchboard::telemetry {
namespace {

const metric_data& only(const std::vector<metric_data>& collected, std::string_view name) {
  for (const metric_data& metric : collected)
    if (metric.description.name == name) return metric;
  throw std::runtime_error("no metric " + std::string(name));
}

TEST(Metrics, AValueOnABoundaryFallsInThatBoundarysBucket) {
  meter m;
  const instrument h = m.histogram({"latency", "s", ""}, {1, 2, 4});
  for (double v : {0.5, 1.0, 1.5, 2.0, 4.0, 4.5, -3.0}) h.record(v);
  const metric_data data = only(m.collect(), "latency");
  ASSERT_EQ(data.points.size(), 1u);
  // (-inf,1] (1,2] (2,4] (4,+inf)
  EXPECT_THAT(data.points[0].bucket_counts, ::testing::ElementsAre(3u, 2u, 1u, 1u));
  EXPECT_EQ(data.points[0].count, 7u);
  EXPECT_DOUBLE_EQ(data.points[0].sum, 0.5 + 1 + 1.5 + 2 + 4 + 4.5 - 3);
}

TEST(Metrics, NonFiniteValuesAreIgnored) {
  meter m;
  const instrument h = m.histogram({"h", "1", ""}, {1});
  h.record(std::numeric_limits<double>::quiet_NaN());
  h.record(std::numeric_limits<double>::infinity());
  h.record(0.5);
  EXPECT_EQ(only(m.collect(), "h").points[0].count, 1u);
}

TEST(Metrics, ACounterIgnoresNegativeValuesAndAnUpDownCounterTakesThem) {
  meter m;
  const instrument c = m.counter({"c", "1", ""});
  const instrument g = m.up_down_counter({"g", "1", ""});
  c.add(3);
  c.add(-2);
  g.add(3);
  g.add(-2);
  const auto collected = m.collect();
  EXPECT_DOUBLE_EQ(only(collected, "c").points[0].value, 3);
  EXPECT_DOUBLE_EQ(only(collected, "g").points[0].value, 1);
}

TEST(Metrics, AttributeOrderDoesNotMakeANewSeries) {
  meter m;
  const instrument c = m.counter({"c", "1", ""});
  c.add(1, {{"a", "1"}, {"b", "2"}});
  c.add(1, {{"b", "2"}, {"a", "1"}});
  c.add(1, {{"a", "2"}, {"b", "2"}});
  const metric_data data = only(m.collect(), "c");
  ASSERT_EQ(data.points.size(), 2u);
  EXPECT_DOUBLE_EQ(data.points[0].value, 2);
  EXPECT_THAT(data.points[0].attributes, ::testing::ElementsAre(std::pair<std::string, std::string>{"a", "1"},
                                                                std::pair<std::string, std::string>{"b", "2"}));
}

TEST(Metrics, NewAttributeSetsPastTheCapGoToTheOverflowSeriesAndAreCounted) {
  meter m(3);
  const instrument c = m.counter({"c", "1", ""});
  for (int i = 0; i < 10; ++i) c.add(1, {{"user", std::to_string(i)}});
  c.add(5, {{"user", "0"}});  // an existing set still records under its own
  const metric_data data = only(m.collect(), "c");
  ASSERT_EQ(data.points.size(), 4u);  // three sets and the overflow
  double overflow = 0, first = 0;
  for (const metric_point& point : data.points) {
    if (point.attributes == metric_attributes{{std::string(overflow_attribute), "true"}}) overflow = point.value;
    if (point.attributes == metric_attributes{{"user", "0"}}) first = point.value;
  }
  EXPECT_DOUBLE_EQ(overflow, 7);
  EXPECT_DOUBLE_EQ(first, 6);
  EXPECT_EQ(c.overflowed(), 7u);
}

TEST(Metrics, TheSameNameGivesTheSameInstrumentAndAnotherKindIsRefused) {
  meter m;
  m.counter({"c", "1", ""}).add(1);
  m.counter({"c", "1", ""}).add(1);
  EXPECT_DOUBLE_EQ(only(m.collect(), "c").points[0].value, 2);
  EXPECT_THROW(m.histogram({"c", "1", ""}, {1}), std::invalid_argument);
  EXPECT_THROW(m.counter({"c", "s", ""}), std::invalid_argument);
  EXPECT_THROW(m.histogram({"h", "s", ""}, {2, 1}), std::invalid_argument);
  EXPECT_THROW(m.counter({"", "1", ""}), std::invalid_argument);
}

TEST(Metrics, InstrumentsWithoutRecordsAreNotCollected) {
  meter m;
  m.counter({"unused", "1", ""});
  EXPECT_TRUE(m.collect().empty());
}

TEST(Metrics, CumulativePointsKeepTheirStartTime) {
  meter m;
  const instrument c = m.counter({"c", "1", ""});
  c.add(1);
  const metric_data first = only(m.collect(), "c");
  c.add(1);
  const metric_data second = only(m.collect(), "c");
  EXPECT_EQ(first.start_unix_nano, second.start_unix_nano);
  EXPECT_GE(second.time_unix_nano, first.time_unix_nano);
  EXPECT_DOUBLE_EQ(second.points[0].value, 2);
}

TEST(Metrics, ConcurrentRecordsAllCount) {
  meter m;
  const instrument c = m.counter({"c", "1", ""});
  const instrument h = m.histogram({"h", "1", ""}, {10, 100});
  const bound_instrument bound = c.bind({{"path", "bound"}});
  constexpr int threads = 4, each = 20000;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < each; ++i) {
        c.add(1, {{"thread", std::to_string(t % 2)}});
        bound.add(1);
        h.record(i % 200);
        if (i % 1000 == 0) m.collect();  // collection while recording
      }
    });
  for (auto& worker : workers) worker.join();
  const auto collected = m.collect();
  double total = 0;
  for (const metric_point& point : only(collected, "c").points) total += point.value;
  EXPECT_DOUBLE_EQ(total, 2.0 * threads * each);
  const metric_point& histogram = only(collected, "h").points[0];
  EXPECT_EQ(histogram.count, static_cast<std::uint64_t>(threads * each));
  EXPECT_THAT(histogram.bucket_counts,
              ::testing::ElementsAre(threads * each * 11 / 200, threads * each * 90 / 200, threads * each * 99 / 200));
}

}  // namespace
}  // namespace switchboard::telemetry

namespace switchboard::telemetry {
namespace {

TEST(Metrics, ObservableCountersSumTheirCallbacksAndStopWhenUnregistered) {
  meter m;
  double first = 3, second = 4;
  auto a = m.observable_counter({"parses", "{parse}", ""}, [&](std::vector<observation>& out) {
    out.push_back({{{"stage", "direct"}}, first});
  });
  {
    auto b = m.observable_counter({"parses", "{parse}", ""}, [&](std::vector<observation>& out) {
      out.push_back({{{"stage", "direct"}}, second});
      out.push_back({{{"stage", "repaired"}}, 1});
    });
    const metric_data data = only(m.collect(), "parses");
    EXPECT_EQ(data.kind, instrument_kind::counter);
    ASSERT_EQ(data.points.size(), 2u);
    EXPECT_DOUBLE_EQ(data.points[0].value, 7);
  }
  const metric_data after = only(m.collect(), "parses");
  ASSERT_EQ(after.points.size(), 1u);
  EXPECT_DOUBLE_EQ(after.points[0].value, 3);
  EXPECT_THROW(m.counter({"parses", "{parse}", ""}), std::invalid_argument);
}

}  // namespace
}  // namespace switchboard::telemetry
