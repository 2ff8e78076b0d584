// The tracer interface the hub, the model layer and an embedding
// application emit spans through, the span handle they hold, a no-op tracer
// for when tracing is off, and the SDK's recording tracer that samples and
// hands finished spans to a span_processor (the OTLP exporter, or a test's).
//
// An application that has its own tracing implements `tracer` and
// `span_recorder`; Switchboard then never sees OTLP.
//
//   telemetry::span_options options;
//   options.parent = &run.context();
//   telemetry::span step = tracer.start_span("invoke_agent planner", options);
//   step.set_attribute("gen_ai.agent.name", "planner");
//   ... step ends when it goes out of scope, or at step.end()
//
// Thread-safety: tracers are called from any thread at once. A span handle
// has one owner at a time (move it between threads, do not share it).
#pragma once

#include <switchboard/telemetry/sampler.hpp>
#include <switchboard/telemetry/span_data.hpp>

#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::telemetry {

// What one span may hold, so that untrusted or runaway data cannot grow a
// span without a bound: past a limit, further items are dropped and counted
// (span_data::dropped_*). The OpenTelemetry SDKs' defaults.
struct span_limits {
  std::size_t max_attributes = 128;
  std::size_t max_events = 128;
  std::size_t max_links = 128;
  std::size_t max_value_bytes = 64 * 1024;  // longer string values are cut
};

// The recording side of a span, implemented by a tracer. Called by the
// span handle only, by its one owner; end() is called once, last.
class span_recorder {
 public:
  virtual ~span_recorder() = default;
  virtual const span_context& context() const noexcept = 0;
  virtual void set_attribute(attribute_key key, attribute_value value) = 0;
  virtual void add_event(std::string_view name, attributes event_attributes) = 0;
  virtual void add_link(span_link link) = 0;
  virtual void set_status(status_code code, std::string_view message) = 0;
  // `end_time_unix_nano` is never 0 here.
  virtual void end(std::uint64_t end_time_unix_nano) noexcept = 0;
};

// A span being recorded, or a non-recording one that only carries a
// context (tracing off, or not sampled) so that traceparent still
// propagates. Every call on a non-recording span returns at once without
// allocating. Ends when destroyed if end() was not called.
class span {
 public:
  span() = default;  // non-recording, invalid context
  explicit span(span_context context) noexcept : context_(std::move(context)) {}
  explicit span(std::unique_ptr<span_recorder> recorder) noexcept : recorder_(std::move(recorder)) {}
  ~span() { end(); }
  span(span&&) noexcept = default;
  span& operator=(span&& other) noexcept;
  span(const span&) = delete;
  span& operator=(const span&) = delete;

  // Attributes and events cost something only here: check before building
  // an expensive value.
  bool is_recording() const noexcept { return recorder_ != nullptr; }
  const span_context& context() const noexcept { return recorder_ ? recorder_->context() : context_; }

  // A later value for the same key replaces the earlier one.
  // A literal key is not copied (attribute_key).
  span& set_attribute(attribute_key key, std::string_view value);
  span& set_attribute(attribute_key key, const char* value) { return set_attribute(std::move(key), std::string_view(value)); }
  span& set_attribute(attribute_key key, bool value);
  span& set_attribute(attribute_key key, double value);
  template <std::integral Integer>
    requires(!std::same_as<Integer, bool>)
  span& set_attribute(attribute_key key, Integer value) {
    return set_integer(std::move(key), static_cast<std::int64_t>(value));
  }
  span& set_attribute(attribute_key key, std::span<const std::string> values);

  void add_event(std::string_view name, attributes event_attributes = {});
  void add_link(const span_context& linked, attributes link_attributes = {});
  // OpenTelemetry's rule: ok is final; error after ok is ignored. The
  // message is kept with error only.
  void set_status(status_code code, std::string_view message = {});
  // 0: now. Later calls do nothing.
  void end(std::uint64_t end_time_unix_nano = 0) noexcept;

 private:
  span& set_integer(attribute_key key, std::int64_t value);

  std::unique_ptr<span_recorder> recorder_;
  span_context context_;  // non-recording spans only
};

struct span_options {
  span_kind kind = span_kind::internal;
  // The parent (may be remote, from a traceparent); null or invalid: a
  // new trace. Read during start_span only.
  const span_context* parent = nullptr;
  // Links to other spans, e.g. the span a resumed run continues.
  std::span<const span_link> links;
  std::uint64_t start_time_unix_nano = 0;  // 0: now
  // Ids chosen by the caller instead of drawn at random, for spans that
  // another process must be able to name without being told: the hub's
  // workflow spans derive them from the run id, so a run resumed anywhere
  // lands in the same trace and links to the span before. `trace_id` is
  // used only for a new trace (no valid parent); invalid ids are ignored.
  // Read during start_span only.
  const telemetry::trace_id* trace_id = nullptr;
  const telemetry::span_id* span_id = nullptr;
};

class tracer {
 public:
  virtual ~tracer() = default;
  virtual span start_span(std::string_view name, const span_options& options = {}) = 0;
};

// Tracing off: records nothing and allocates nothing. A span started under
// a parent carries the parent's context (so traceparent still goes out
// unchanged); one without is invalid.
class noop_tracer final : public tracer {
 public:
  span start_span(std::string_view name, const span_options& options = {}) override;
};

// Receives each finished, sampled span. on_end() is called on the thread
// that ended the span: it must not block (the OTLP exporter queues, or
// drops and counts). Attribute keys spelled as literals are views of the
// code that set them (attribute_key): a processor that keeps span_data
// past the unloading of a plugin that made the span must copy them.
class span_processor {
 public:
  virtual ~span_processor() = default;
  virtual void on_end(span_data&& finished) noexcept = 0;
};

// The SDK's tracer: new ids, the sampler's decision, limits, and every
// finished sampled span to the processor. A span that is not sampled is
// non-recording, with a fresh span id and the sampled flag clear, so that
// the processes after this one see the decision.
class recording_tracer final : public tracer {
 public:
  recording_tracer(telemetry::sampler sampler, std::shared_ptr<span_processor> processor, span_limits limits = {});
  span start_span(std::string_view name, const span_options& options = {}) override;

 private:
  telemetry::sampler sampler_;
  std::shared_ptr<span_processor> processor_;
  span_limits limits_;
};

}  // namespace switchboard::telemetry
