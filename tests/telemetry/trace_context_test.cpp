#include <switchboard/telemetry/trace_context.hpp>

#include <gtest/gtest.h>

#include <string>

namespace switchboard::telemetry {
namespace {

constexpr std::string_view example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(Traceparent, ParsesTheSpecsExample) {
  const auto context = parse_traceparent(example);
  ASSERT_TRUE(context);
  EXPECT_EQ(context->trace_id.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(context->span_id.hex(), "00f067aa0ba902b7");
  EXPECT_TRUE(context->sampled());
  EXPECT_TRUE(context->is_remote);
  EXPECT_EQ(format_traceparent(*context), example);
}

TEST(Traceparent, KeepsTheFlagsAsSent) {
  const auto context = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(context);
  EXPECT_FALSE(context->sampled());
  EXPECT_EQ(context->trace_flags, 0);
  const auto other = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->trace_flags, 0x09);
  EXPECT_EQ(format_traceparent(*other).substr(53), "09");
}

TEST(Traceparent, RejectsMalformedValues) {
  const std::string_view malformed[] = {
      "",
      "00",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",            // short flags
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",          // long, version 00
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",     // version 00 has no more fields
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",           // version ff
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",           // zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",           // zero parent id
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",           // upper case
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",           // not hex
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",           // separator
      "0-04bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",           // fields shifted
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",           // flags not hex
      "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",           // version not hex
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",          // later version, no '-' after flags
      " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",          // leading space
  };
  for (std::string_view value : malformed) EXPECT_FALSE(parse_traceparent(value)) << value;
}

TEST(Traceparent, RejectsBinaryGarbageWithoutCrashing) {
  std::string garbage(55, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 37 + 200);
  EXPECT_FALSE(parse_traceparent(garbage));
  EXPECT_FALSE(parse_traceparent(std::string(100000, '0')));
}

TEST(Traceparent, ReadsALaterVersionByItsFirstFourFields) {
  const auto context = parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds");
  ASSERT_TRUE(context);
  EXPECT_EQ(context->span_id.hex(), "00f067aa0ba902b7");
  EXPECT_EQ(format_traceparent(*context), example);  // we speak version 00
}

TEST(Traceparent, KeepsAValidTracestateAndDropsABadOne) {
  const auto kept = parse_traceparent(example, "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->trace_state, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
  const auto dropped = parse_traceparent(example, "Rojo=1");
  ASSERT_TRUE(dropped);  // a bad tracestate does not invalidate the traceparent
  EXPECT_EQ(dropped->trace_state, "");
}

TEST(Tracestate, AcceptsTheGrammar) {
  EXPECT_EQ(parse_tracestate("a=1"), "a=1");
  EXPECT_EQ(parse_tracestate("tenant@vendor=x y"), "tenant@vendor=x y");
  EXPECT_EQ(parse_tracestate("a=1,,b=2"), "a=1,b=2");  // empty members are allowed
  EXPECT_EQ(parse_tracestate(" a=1 ,\tb=2 "), "a=1,b=2");
  EXPECT_EQ(parse_tracestate("k_-*/9=v"), "k_-*/9=v");
}

TEST(Tracestate, RejectsWhatTheGrammarDoesNotAllow) {
  EXPECT_FALSE(parse_tracestate("novalue"));
  EXPECT_FALSE(parse_tracestate("A=1"));          // upper-case key
  EXPECT_FALSE(parse_tracestate("1a=1"));         // a simple key starts with a letter
  EXPECT_FALSE(parse_tracestate("a="));           // empty value
  EXPECT_FALSE(parse_tracestate("a=x="));         // '=' in the value
  EXPECT_FALSE(parse_tracestate("a=\x01"));       // control character
  EXPECT_FALSE(parse_tracestate("@vendor=1"));    // empty tenant
  EXPECT_FALSE(parse_tracestate("a=" + std::string(257, 'v')));
  std::string many;
  for (int i = 0; i < 33; ++i) many += "k" + std::to_string(i) + "=v,";
  EXPECT_FALSE(parse_tracestate(many));  // 33 members
  EXPECT_FALSE(parse_tracestate(std::string(9000, ',')));
}

TEST(SpanIds, AreRandomAndNeverZero) {
  const trace_id first = random_trace_id();
  const trace_id second = random_trace_id();
  EXPECT_TRUE(first.valid());
  EXPECT_NE(first, second);
  EXPECT_EQ(first.hex().size(), 32u);
  EXPECT_EQ(random_span_id().hex().size(), 16u);
  EXPECT_FALSE(trace_id{}.valid());
  EXPECT_FALSE(span_id{}.valid());
}

}  // namespace
}  // namespace switchboard::telemetry
