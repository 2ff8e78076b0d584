// The process's metrics (GenAI semantic conventions v1.41, as ADR 0030
// fixes them, plus the hub's own): instruments on one telemetry::meter,
// fed by the hub's events (an orchestrator::observer), by every request
// metered_model makes (a models::model_call_observer) and by the parser's
// counts; exported over OTLP when the OTEL_* variables ask for it, and
// shown by `switchboard serve` on /metrics.
//
//   gen_ai.client.token.usage         histogram {token}: tokens per request, by gen_ai.token.type
//   gen_ai.client.operation.duration  histogram s: each model request, error.type on failure
//   switchboard.workflow.runs         counter {run}: stretches of runs that ended, by outcome
//   switchboard.workflow.steps        counter {step}: agent steps, by node, agent and outcome
//   switchboard.workflow.step.duration histogram s: how long each step took
//   switchboard.workflow.clarifications counter {clarification}: pauses asking a person a question
//   switchboard.workflow.approvals    counter {approval}: requested, approved, rejected
//   switchboard.tool.calls            counter {call}: by tool and outcome (ok, error, replayed)
//   switchboard.parser.outcomes       counter {parse}: structured-output answers by stage and reason
//   switchboard.parser.stage.time     counter s: time spent in each parser stage
//
// docs/observability.md lists their attributes. Attribute values come from
// the workflow file and the provider (names, models), never from prompts or
// answers; each instrument keeps at most 2000 attribute sets.
//
// Thread-safety: every member may be called from any thread at once.
#pragma once

#include <switchboard/host/opened_workflow.hpp>
#include <switchboard/models/metered_model.hpp>
#include <switchboard/orchestrator/events.hpp>
#include <switchboard/telemetry/configuration.hpp>
#include <switchboard/telemetry/metrics.hpp>
#include <switchboard/telemetry/otlp_metric_exporter.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::host {

// The conventions' bucket boundaries.
const std::vector<double>& token_usage_buckets();
const std::vector<double>& operation_duration_buckets();

// gen_ai.client.* from each model request.
class model_call_metrics final : public models::model_call_observer {
 public:
  // Keeps `meter` alive: a request may end after its process_metrics.
  explicit model_call_metrics(std::shared_ptr<telemetry::meter> meter);
  void on_model_call(const models::model_call& call) noexcept override;

 private:
  std::shared_ptr<telemetry::meter> meter_;
  telemetry::instrument token_usage_;
  telemetry::instrument duration_;
};

// switchboard.workflow.*, switchboard.tool.calls from the hub's events.
class workflow_metrics final : public orchestrator::observer {
 public:
  // Keeps `meter` alive: a hub may outlive its process_metrics.
  explicit workflow_metrics(std::shared_ptr<telemetry::meter> meter);
  void on_event(const orchestrator::event& e) noexcept override;

 private:
  void record(const orchestrator::event& e);
  std::shared_ptr<telemetry::meter> meter_;
  telemetry::instrument runs_, steps_, step_duration_, clarifications_, approvals_, tool_calls_;
};

// Metrics for a process that runs hubs (`switchboard run`, `resume`,
// `serve`). The meter always records (serve shows it on /metrics); the OTLP
// export runs when metrics_configuration_from says so. The destructor
// exports one last time within flush_timeout, so that a process never hangs
// at exit on a collector that is down or slow.
class process_metrics {
 public:
  // Throws telemetry::configuration_error for a variable that cannot be
  // used, std::invalid_argument for an endpoint the HTTP client refuses.
  process_metrics(const telemetry::environment_lookup& lookup, std::string_view service_name);
  ~process_metrics();
  process_metrics(const process_metrics&) = delete;
  process_metrics& operator=(const process_metrics&) = delete;

  // Whether metrics go out over OTLP.
  bool exporting() const noexcept { return exporter_ != nullptr; }
  const std::shared_ptr<telemetry::meter>& meter() const noexcept { return meter_; }
  // Attach to every hub.
  const std::shared_ptr<workflow_metrics>& observer() const noexcept { return observer_; }

  // Records the model requests and parser outcomes of `opened` (a workflow
  // named `workflow_name`) from now on; forget() stops that. What is kept
  // is shared with `opened`, so either may end first.
  void watch(const opened_workflow& opened, std::string workflow_name);
  void forget(const opened_workflow& opened);
  // Records the requests of a model used without a workflow (`switchboard
  // ask`): token usage and operation duration.
  void watch(const configured_model& model);

  // Exports one last time and stops, at most `timeout`. Idempotent.
  void shutdown(std::chrono::milliseconds timeout) noexcept;
  telemetry::metric_exporter_counters counters() const;

  std::chrono::milliseconds flush_timeout{5000};

 private:
  struct watched {
    std::shared_ptr<models::model_metrics> model;
    std::shared_ptr<protocol::parser_metrics> parser;
    telemetry::observable_registration parser_outcomes, parser_time;
  };
  std::shared_ptr<telemetry::meter> meter_ = std::make_shared<telemetry::meter>();
  std::shared_ptr<model_call_metrics> model_calls_;
  std::shared_ptr<workflow_metrics> observer_;
  std::mutex mutex_;
  std::vector<watched> watched_;
  std::unique_ptr<telemetry::otlp_metric_exporter> exporter_;
};

}  // namespace switchboard::host
