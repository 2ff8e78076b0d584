// The hub's events as OpenTelemetry spans (GenAI semantic conventions
// v1.41, as ADR 0030 fixes them): an orchestrator::observer that the
// command line and the server attach when tracing is on, and never when it
// is off (then the hub pays nothing at all).
//
//   invoke_workflow {workflow}   one per stretch of a run: from its start or
//                                resume to its end or pause
//   invoke_agent {agent}         one per step, child of the workflow span
//   execute_tool {tool}          one per tool call, child of its step's span
//   (chat {model}                one per model request, child of its step's
//                                span: models::traced_model, ADR 0034)
//
// It lives in host/, not in telemetry/, so that dependencies stay one-way:
// telemetry/ knows spans and OTLP and nothing of the hub; the hub knows
// observers and nothing of spans; this adapter knows both.
//
// Trace continuity without storage: a run's trace id is derived from its
// run id (trace_id_for_run), and each stretch's workflow span id from the
// run id and the stretch's number (event::segment), so the process that
// resumes a run — this one or another, after a restart — lands in the same
// trace and links its workflow span to the one before. A caller's trace
// (serve's `traceparent`) is taken instead when the run was given one
// (continue_trace); the caller keeps it with the run for later resumes.
//
// Thread-safety: on_event() is called concurrently for different runs
// (each run's events in order, on its strand); all state is behind one
// mutex held only while spans are started, annotated and ended (the
// exporter's on_end only queues).
#pragma once

#include <switchboard/agents/trace_parents.hpp>
#include <switchboard/orchestrator/events.hpp>
#include <switchboard/telemetry/configuration.hpp>
#include <switchboard/telemetry/tracer.hpp>
#include <switchboard/telemetry/tracing.hpp>

#include <chrono>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace switchboard::host {

struct workflow_tracing_options {
  // Prompts' answers (explanations), clarification questions and tool
  // arguments and results go on spans only when this is true; never by
  // default. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
  bool capture_content = false;
};

// Reads OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT ("true" or
// "false", any case; unset: false). Throws telemetry::configuration_error
// for another value, naming it.
workflow_tracing_options workflow_tracing_options_from(const telemetry::environment_lookup& lookup);

// The trace a run id's spans belong to: the first 16 bytes of SHA-256 of
// "switchboard.run:" + run_id (never all zero).
telemetry::trace_id trace_id_for_run(std::string_view run_id);

// The span id of the workflow span of a run's `segment`-th stretch (1 for
// its first start): 8 bytes of SHA-256 of the run id and the number.
telemetry::span_id workflow_span_id(std::string_view run_id, std::int64_t segment);

// The span id of the execute_tool span of tool call `call_id`, made in the
// run's `segment`-th stretch at `step`: 8 bytes of SHA-256 of the four.
// Known before the call is made, so the call can carry it as traceparent
// (an MCP server's spans then sit under it) although the span is recorded
// only when the call's event arrives.
telemetry::span_id tool_span_id(std::string_view run_id, std::int64_t segment, std::int64_t step,
                                std::string_view call_id);

// Also the hub's trace_parents (hub::set_trace_parents): the open step span
// of a run, under which the model layer starts its chat spans, and the
// context a tool call's execute_tool span will have.
class workflow_tracer final : public orchestrator::observer, public agents::trace_parents {
 public:
  explicit workflow_tracer(std::shared_ptr<telemetry::tracer> tracer, workflow_tracing_options options = {});
  ~workflow_tracer() override;  // ends what is still open ("shutdown")
  workflow_tracer(const workflow_tracer&) = delete;
  workflow_tracer& operator=(const workflow_tracer&) = delete;

  void on_event(const orchestrator::event& e) noexcept override;

  // The run continues `caller`'s trace (a parsed traceparent): its spans
  // take the caller's trace id, and its first workflow span the caller's
  // span as parent. Call before the run starts or resumes.
  void continue_trace(std::string_view run_id, const telemetry::span_context& caller);

  // Ends every open span with switchboard.run.outcome = `why` (e.g. at
  // shutdown, so that a flush sends what the process saw).
  void end_all(std::string_view why) noexcept;

  telemetry::span_context step_span(std::string_view run_id) const override;
  telemetry::span_context tool_span(std::string_view run_id, std::string_view call_id) const override;

  // The tracer the spans go to (for the model layer's chat spans).
  const std::shared_ptr<telemetry::tracer>& tracer() const noexcept { return tracer_; }

  // Runs with open spans (tests).
  std::size_t open_runs() const;

  struct run_spans;  // defined in the .cpp

 private:
  run_spans& spans_of(const orchestrator::event& e);
  void handle(const orchestrator::event& e);

  std::shared_ptr<telemetry::tracer> tracer_;
  workflow_tracing_options options_;
  mutable std::mutex mutex_;
  // Looked up by the event's run id as it is (no string made per event).
  struct id_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const noexcept { return std::hash<std::string_view>{}(id); }
  };
  template <class T>
  using by_run_id = std::unordered_map<std::string, T, id_hash, std::equal_to<>>;
  by_run_id<std::unique_ptr<run_spans>> runs_;
  by_run_id<telemetry::span_context> callers_;
};

// Tracing for a process that runs hubs (`switchboard run`, `resume`,
// `serve`): started from the OTEL_* variables; `observer` is null when
// tracing is off (OTEL_SDK_DISABLED=true, no endpoint, ...), and then
// nothing is attached to any hub. The destructor ends what is still open
// and flushes the exporter within flush_timeout, so that a process never
// hangs at exit on a collector that is down or slow.
class process_tracing {
 public:
  // Throws telemetry::configuration_error for a variable that cannot be
  // used, std::invalid_argument for an endpoint the HTTP client refuses.
  process_tracing(const telemetry::environment_lookup& lookup, std::string_view service_name);
  ~process_tracing();
  process_tracing(const process_tracing&) = delete;
  process_tracing& operator=(const process_tracing&) = delete;

  bool enabled() const noexcept { return observer_ != nullptr; }
  // Null when tracing is off.
  const std::shared_ptr<workflow_tracer>& observer() const noexcept { return observer_; }
  const telemetry::tracing& tracing() const noexcept { return tracing_; }
  // Ends open spans ("exit") and flushes, at most `timeout`. Idempotent.
  void shutdown(std::chrono::milliseconds timeout) noexcept;

  std::chrono::milliseconds flush_timeout{5000};

 private:
  telemetry::tracing tracing_;
  std::shared_ptr<workflow_tracer> observer_;
};

}  // namespace switchboard::host
