#include <switchboard/telemetry/tracer.hpp>

#include "collecting_processor.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

// Counts this thread's allocations, to prove the no-op path makes none.
namespace {
thread_local std::size_t allocations_on_this_thread = 0;
}
void* operator new(std::size_t size) {
  ++allocations_on_this_thread;
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }

namespace switchboard::telemetry {
namespace {

using switchboard::testing::collecting_processor;

const attribute_value* find(const span_data& data, std::string_view key) {
  for (const attribute& item : data.attributes)
    if (item.key == key) return &item.value;
  return nullptr;
}

TEST(NoopTracer, AllocatesNothingAndCarriesTheParent) {
  noop_tracer tracer;
  span_context parent;
  parent.trace_id = random_trace_id();
  parent.span_id = random_span_id();
  parent.trace_flags = sampled_flag;
  span_options options;
  options.parent = &parent;
  const std::vector<std::string> reasons{"stop"};

  const std::size_t before = allocations_on_this_thread;
  bool recording = true;
  span_id carried;
  bool root_valid = true;
  {
    span step = tracer.start_span("invoke_agent planner", options);
    step.set_attribute("gen_ai.agent.name", "planner");
    step.set_attribute("gen_ai.usage.input_tokens", 120);
    step.set_attribute("switchboard.confidence", 0.9);
    step.set_attribute("switchboard.replayed", false);
    step.set_attribute("gen_ai.response.finish_reasons", std::span<const std::string>(reasons));
    step.add_event("paused");
    step.set_status(status_code::error, "failed");
    recording = step.is_recording();
    carried = step.context().span_id;
    span root = tracer.start_span("invoke_workflow sample");
    root_valid = root.context().valid();
  }
  const std::size_t allocations = allocations_on_this_thread - before;
  EXPECT_EQ(allocations, 0u);
  EXPECT_FALSE(recording);
  EXPECT_EQ(carried, parent.span_id);
  EXPECT_FALSE(root_valid);
}

TEST(RecordingTracer, ALiteralKeyIsNotCopiedAndAKeyMadeAtRunTimeIs) {
  auto processor = std::make_shared<collecting_processor>();
  recording_tracer tracer(sampler{}, processor);
  {
    span step = tracer.start_span("invoke_agent planner");
    const std::size_t before = allocations_on_this_thread;
    step.set_attribute("gen_ai.usage.input_tokens", 120);
    step.set_attribute("switchboard.confidence", 0.9);
    step.set_attribute("switchboard.tool.replayed", false);
    EXPECT_EQ(allocations_on_this_thread - before, 0u) << "literal keys with number and bool values";
    {
      std::string made = "app.tenant.region.of.the.caller";
      step.set_attribute(std::string_view(made), "eu");
      made.assign(made.size(), 'x');  // the span kept a copy, not a view
    }
    step.set_attribute("gen_ai.usage.input_tokens", 130);  // the same key again replaces
  }
  const std::vector<span_data> spans = processor->spans();
  ASSERT_EQ(spans.size(), 1u);
  ASSERT_EQ(spans[0].attributes.size(), 4u);
  EXPECT_EQ(std::get<std::int64_t>(*find(spans[0], "gen_ai.usage.input_tokens")), 130);
  ASSERT_NE(find(spans[0], "app.tenant.region.of.the.caller"), nullptr);
  EXPECT_EQ(std::get<std::string>(*find(spans[0], "app.tenant.region.of.the.caller")), "eu");

  // Copies and moves of both kinds of key keep their text.
  attribute_key literal = "gen_ai.agent.name";
  attribute_key made = std::string_view(std::string("made.at.run.time.and.long"));
  attribute_key copied = made;
  attribute_key moved = std::move(made);
  EXPECT_EQ(made.view(), "");  // moved from: empty, owns nothing
  literal = copied;
  EXPECT_EQ(literal.view(), "made.at.run.time.and.long");
  EXPECT_EQ(moved.view(), "made.at.run.time.and.long");
  literal = literal;  // NOLINT: self-assignment keeps the text
  EXPECT_EQ(literal.view(), "made.at.run.time.and.long");
  moved = attribute_key("error.type");  // a literal over an owned key
  EXPECT_EQ(moved.view(), "error.type");
  EXPECT_TRUE(moved.plain());
  EXPECT_NE(literal.view().data(), moved.view().data());
  attribute_key from_literal = "error.type";
  EXPECT_EQ(attribute_key(from_literal).view().data(), from_literal.view().data());
}

TEST(RecordingTracer, RecordsATreeWithIdsParentsAndAttributes) {
  auto processor = std::make_shared<collecting_processor>();
  recording_tracer tracer(sampler{}, processor);
  {
    span run = tracer.start_span("invoke_workflow sample");
    span_options child;
    child.parent = &run.context();
    child.kind = span_kind::client;
    span call = tracer.start_span("chat gpt-4o", child);
    call.set_attribute("gen_ai.usage.input_tokens", 100).set_attribute("gen_ai.usage.input_tokens", 120);
    call.set_status(status_code::error, "rate limited");
    call.end();
    call.end();  // once only
  }
  const std::vector<span_data> spans = processor->spans();
  ASSERT_EQ(spans.size(), 2u);
  const span_data& call = spans[0];
  const span_data& run = spans[1];
  EXPECT_EQ(call.name, "chat gpt-4o");
  EXPECT_EQ(call.kind, span_kind::client);
  EXPECT_EQ(call.context.trace_id, run.context.trace_id);
  EXPECT_EQ(call.parent_span_id, run.context.span_id);
  EXPECT_FALSE(run.parent_span_id.valid());
  EXPECT_TRUE(call.context.sampled());
  ASSERT_EQ(call.attributes.size(), 1u);  // the later value replaced the earlier
  EXPECT_EQ(std::get<std::int64_t>(*find(call, "gen_ai.usage.input_tokens")), 120);
  EXPECT_EQ(call.status, status_code::error);
  EXPECT_EQ(call.status_message, "rate limited");
  EXPECT_GE(call.end_time_unix_nano, call.start_time_unix_nano);
  EXPECT_GT(call.start_time_unix_nano, 0u);
}

TEST(RecordingTracer, ContinuesARemoteParentAndKeepsItsTracestate) {
  auto processor = std::make_shared<collecting_processor>();
  recording_tracer tracer(sampler{}, processor);
  span_context remote;
  remote.trace_id = random_trace_id();
  remote.span_id = random_span_id();
  remote.trace_flags = sampled_flag;
  remote.trace_state = "vendor=abc";
  remote.is_remote = true;
  span_options options;
  options.parent = &remote;
  span served = tracer.start_span("invoke_workflow served", options);
  EXPECT_EQ(served.context().trace_id, remote.trace_id);
  EXPECT_EQ(served.context().trace_state, "vendor=abc");
  EXPECT_NE(served.context().span_id, remote.span_id);
  served.end();
  EXPECT_EQ(processor->spans().at(0).parent_span_id, remote.span_id);
}

TEST(RecordingTracer, AnUnsampledSpanRecordsNothingButPropagatesTheDecision) {
  auto processor = std::make_shared<collecting_processor>();
  recording_tracer tracer(sampler{sampler_kind::always_off, 1.0, true}, processor);
  span root = tracer.start_span("invoke_workflow off");
  EXPECT_FALSE(root.is_recording());
  EXPECT_TRUE(root.context().valid());
  EXPECT_FALSE(root.context().sampled());
  span_options options;
  options.parent = &root.context();
  span child = tracer.start_span("child", options);
  EXPECT_FALSE(child.is_recording());
  EXPECT_EQ(child.context().trace_id, root.context().trace_id);
  child.end();
  root.end();
  EXPECT_TRUE(processor->spans().empty());
}

TEST(RecordingTracer, LinksStatusRulesAndLimits) {
  auto processor = std::make_shared<collecting_processor>();
  span_limits limits;
  limits.max_attributes = 2;
  limits.max_events = 1;
  limits.max_links = 1;
  limits.max_value_bytes = 5;
  recording_tracer tracer(sampler{}, processor, limits);
  span_context earlier;
  earlier.trace_id = random_trace_id();
  earlier.span_id = random_span_id();
  {
    span resumed = tracer.start_span("invoke_workflow resumed");
    resumed.add_link(earlier, {{"switchboard.link", std::string("resumed")}});
    resumed.add_link(earlier);           // over the limit
    resumed.add_link(span_context{});    // invalid: ignored
    resumed.set_attribute("a", "héllo wörld");  // cut at 5 bytes, not inside 'é'... or 'ö'
    resumed.set_attribute("b", 1);
    resumed.set_attribute("c", 2);  // over the limit
    resumed.add_event("one");
    resumed.add_event("two");  // over the limit
    resumed.set_status(status_code::ok);
    resumed.set_status(status_code::error, "too late");  // ok is final
  }
  const span_data data = processor->spans().at(0);
  ASSERT_EQ(data.links.size(), 1u);
  EXPECT_EQ(data.links[0].context.span_id, earlier.span_id);
  EXPECT_EQ(data.dropped_links, 1u);
  EXPECT_EQ(data.attributes.size(), 2u);
  EXPECT_EQ(data.dropped_attributes, 1u);
  EXPECT_EQ(std::get<std::string>(*find(data, "a")), "h\xc3\xa9ll");
  EXPECT_EQ(data.events.size(), 1u);
  EXPECT_EQ(data.dropped_events, 1u);
  EXPECT_EQ(data.status, status_code::ok);
  EXPECT_EQ(data.status_message, "");
}

TEST(RecordingTracer, AMovedSpanEndsOnce) {
  auto processor = std::make_shared<collecting_processor>();
  recording_tracer tracer(sampler{}, processor);
  {
    span first = tracer.start_span("first");
    span moved = std::move(first);
    span other = tracer.start_span("other");
    other = std::move(moved);  // "other" ends here
  }
  const std::vector<span_data> spans = processor->spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].name, "other");
  EXPECT_EQ(spans[1].name, "first");
}

TEST(RecordingTracer, TakesTheCallersIdsButAParentsTraceWins) {
  auto processor = std::make_shared<collecting_processor>();
  recording_tracer tracer(sampler{}, processor);
  trace_id chosen_trace;
  chosen_trace.bytes.fill(0xab);
  span_id chosen_span;
  chosen_span.bytes.fill(0xcd);
  span_options options;
  options.trace_id = &chosen_trace;
  options.span_id = &chosen_span;
  span root = tracer.start_span("root", options);
  EXPECT_EQ(root.context().trace_id, chosen_trace);
  EXPECT_EQ(root.context().span_id, chosen_span);

  span_context parent;
  parent.trace_id = random_trace_id();
  parent.span_id = random_span_id();
  parent.trace_flags = sampled_flag;
  options.parent = &parent;
  span child = tracer.start_span("child", options);
  EXPECT_EQ(child.context().trace_id, parent.trace_id);  // the trace id is for new traces only
  EXPECT_EQ(child.context().span_id, chosen_span);

  span_id zero;
  options.parent = nullptr;
  options.span_id = &zero;  // invalid: ignored, a random one instead
  span other = tracer.start_span("other", options);
  EXPECT_TRUE(other.context().span_id.valid());
  EXPECT_NE(other.context().span_id, zero);
}

}  // namespace
}  // namespace switchboard::telemetry
