#include <switchboard/telemetry/sampler.hpp>

#include <gtest/gtest.h>

namespace switchboard::telemetry {
namespace {

trace_id with_low_bytes(std::uint64_t low) {
  trace_id id;
  id.bytes[0] = 0xab;
  for (int i = 15; i >= 8; --i, low >>= 8) id.bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(low);
  return id;
}

span_context parent_with(bool sampled) {
  span_context parent;
  parent.trace_id = random_trace_id();
  parent.span_id = random_span_id();
  parent.trace_flags = sampled ? sampled_flag : 0;
  return parent;
}

TEST(Sampler, AlwaysOnAndAlwaysOff) {
  const trace_id id = random_trace_id();
  EXPECT_TRUE((sampler{sampler_kind::always_on, 1.0, false}.should_sample(id, nullptr)));
  EXPECT_FALSE((sampler{sampler_kind::always_off, 1.0, false}.should_sample(id, nullptr)));
}

TEST(Sampler, RatioComparesTheTraceIdsLowBytes) {
  const sampler half{sampler_kind::trace_id_ratio, 0.5, false};
  EXPECT_TRUE(half.should_sample(with_low_bytes(0), nullptr));
  EXPECT_TRUE(half.should_sample(with_low_bytes(0x7fffffffffffffffULL), nullptr));   // >> 1 is just under 2^62
  EXPECT_FALSE(half.should_sample(with_low_bytes(0x8000000000000000ULL), nullptr));  // >> 1 is 2^62
  EXPECT_FALSE(half.should_sample(with_low_bytes(0xffffffffffffffffULL), nullptr));
  EXPECT_FALSE((sampler{sampler_kind::trace_id_ratio, 0.0, false}.should_sample(with_low_bytes(0), nullptr)));
  EXPECT_TRUE(
      (sampler{sampler_kind::trace_id_ratio, 1.0, false}.should_sample(with_low_bytes(~0ULL), nullptr)));
}

TEST(Sampler, RatioSamplesAboutThatShareOfRandomTraces) {
  const sampler quarter{sampler_kind::trace_id_ratio, 0.25, false};
  int sampled = 0;
  for (int i = 0; i < 20000; ++i) sampled += quarter.should_sample(random_trace_id(), nullptr) ? 1 : 0;
  EXPECT_GT(sampled, 4000);  // 5000 expected; these bounds are many standard deviations wide
  EXPECT_LT(sampled, 6000);
}

TEST(Sampler, ParentBasedFollowsTheParentAndUsesTheRootForNewTraces) {
  const sampler follows_off{sampler_kind::always_off, 1.0, true};
  const span_context sampled_parent = parent_with(true);
  const span_context unsampled_parent = parent_with(false);
  EXPECT_TRUE(follows_off.should_sample(sampled_parent.trace_id, &sampled_parent));
  EXPECT_FALSE(follows_off.should_sample(random_trace_id(), nullptr));
  const sampler follows_on{sampler_kind::always_on, 1.0, true};
  EXPECT_FALSE(follows_on.should_sample(unsampled_parent.trace_id, &unsampled_parent));
  EXPECT_TRUE(follows_on.should_sample(random_trace_id(), nullptr));
  const sampler ignores_parent{sampler_kind::always_on, 1.0, false};
  EXPECT_TRUE(ignores_parent.should_sample(unsampled_parent.trace_id, &unsampled_parent));
}

TEST(Sampler, NamesItselfAsTheVariableDoes) {
  EXPECT_EQ((sampler{}.name()), "parentbased_always_on");
  EXPECT_EQ((sampler{sampler_kind::trace_id_ratio, 0.1, false}.name()), "traceidratio");
}

}  // namespace
}  // namespace switchboard::telemetry
