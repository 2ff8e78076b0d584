// Where an agent's outgoing requests sit in the run's trace (ADR 0034): the
// span a model request is a child of (the step's invoke_agent span) and the
// span a tool call will be recorded as (its execute_tool span), so that the
// model layer can make its chat spans children of the step, and the HTTP
// model clients and the MCP transport can send W3C traceparent naming the
// right span. host::workflow_tracer implements it; the hub hands it to every
// agent call (hub_options::traces) only when tracing is on, so with tracing
// off nobody asks and nothing is computed.
//
// Thread-safety: called concurrently from any thread.
#pragma once

#include <switchboard/telemetry/span_data.hpp>

#include <string_view>

namespace switchboard::agents {

class trace_parents {
 public:
  virtual ~trace_parents() = default;
  // The span of run `run_id`'s step in progress (invalid: none open).
  virtual telemetry::span_context step_span(std::string_view run_id) const = 0;
  // The context of the execute_tool span that the call `call_id` of run
  // `run_id` will be recorded with (invalid: the run is not traced).
  virtual telemetry::span_context tool_span(std::string_view run_id, std::string_view call_id) const = 0;
};

}  // namespace switchboard::agents
