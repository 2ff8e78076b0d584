// The process's metrics (see workflow_metrics.hpp).
#include <switchboard/host/workflow_metrics.hpp>

#include "record_fields.hpp"

#include <boost/json/object.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace switchboard::host {
namespace {

namespace json = boost::json;
using orchestrator::event_kind;
using telemetry::metric_attributes;

using detail::bool_field;
using detail::text_field;


// The same outcomes as serve's switchboard_serve_runs_total.
std::string_view run_outcome(event_kind kind) {
  switch (kind) {
    case event_kind::workflow_completed: return "completed";
    case event_kind::workflow_failed: return "failed";
    case event_kind::workflow_cancelled: return "cancelled";
    case event_kind::workflow_interrupted: return "interrupted";
    case event_kind::paused: return "awaiting_clarification";
    case event_kind::approval_requested: return "awaiting_approval";
    default: return {};
  }
}

std::string_view tool_outcome(const json::object& record) {
  if (bool_field(record, "replayed")) return "replayed";
  return bool_field(record, "is_error") ? "error" : "ok";
}

double seconds(std::chrono::nanoseconds elapsed) { return std::chrono::duration<double>(elapsed).count(); }

void add_token_usage(const telemetry::instrument& usage, metric_attributes attributes, std::string_view type,
                     std::int64_t tokens) {
  if (tokens <= 0) return;  // not reported (or a provider's mistake): nothing to add
  attributes.emplace_back("gen_ai.token.type", std::string(type));
  usage.record(static_cast<double>(tokens), attributes);
}

}  // namespace

const std::vector<double>& token_usage_buckets() {
  static const std::vector<double> buckets{1,       4,        16,       64,       256,       1024,     4096,
                                           16384,   65536,    262144,   1048576,  4194304,   16777216, 67108864};
  return buckets;
}

const std::vector<double>& operation_duration_buckets() {
  static const std::vector<double> buckets{0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                           1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
  return buckets;
}

model_call_metrics::model_call_metrics(std::shared_ptr<telemetry::meter> meter)
    : meter_(std::move(meter)),
      token_usage_(meter_->histogram({"gen_ai.client.token.usage", "{token}", "Number of input and output tokens used."},
                                   token_usage_buckets())),
      duration_(meter_->histogram({"gen_ai.client.operation.duration", "s", "GenAI operation duration."},
                                operation_duration_buckets())) {}

void model_call_metrics::on_model_call(const models::model_call& call) noexcept {
  try {
    metric_attributes attributes{{"gen_ai.operation.name", "chat"}, {"gen_ai.provider.name", std::string(call.provider)}};
    if (!call.request_model.empty()) attributes.emplace_back("gen_ai.request.model", std::string(call.request_model));
    if (!call.response_model.empty()) attributes.emplace_back("gen_ai.response.model", std::string(call.response_model));
    add_token_usage(token_usage_, attributes, "input", call.usage.prompt_tokens);
    add_token_usage(token_usage_, attributes, "output", call.usage.completion_tokens);
    if (!call.error_type.empty()) attributes.emplace_back("error.type", std::string(call.error_type));
    duration_.record(seconds(call.duration), attributes);
  } catch (...) {
    // Out of memory for the attributes: this request goes uncounted.
  }
}

workflow_metrics::workflow_metrics(std::shared_ptr<telemetry::meter> meter)
    : meter_(std::move(meter)),
      runs_(meter_->counter({"switchboard.workflow.runs", "{run}", "Stretches of workflow runs that ended, by outcome."})),
      steps_(meter_->counter({"switchboard.workflow.steps", "{step}", "Agent steps, by node, agent and outcome."})),
      step_duration_(meter_->histogram({"switchboard.workflow.step.duration", "s", "How long each agent step took."},
                                     operation_duration_buckets())),
      clarifications_(meter_->counter(
          {"switchboard.workflow.clarifications", "{clarification}", "Pauses that ask a person a question."})),
      approvals_(meter_->counter(
          {"switchboard.workflow.approvals", "{approval}", "Tool-call approvals requested, approved and rejected."})),
      tool_calls_(meter_->counter({"switchboard.tool.calls", "{call}", "Tool calls, by tool and outcome."})) {}

void workflow_metrics::on_event(const orchestrator::event& e) noexcept {
  try {
    record(e);
  } catch (...) {
    // A lost count is better than a lost event.
  }
}

void workflow_metrics::record(const orchestrator::event& e) {
  const std::string workflow(e.workflow_name);
  if (const std::string_view outcome = run_outcome(e.kind); !outcome.empty())
    runs_.add(1, {{"gen_ai.workflow.name", workflow}, {"switchboard.run.outcome", std::string(outcome)}});
  switch (e.kind) {
    case event_kind::step_completed:
    case event_kind::step_failed: {
      const metric_attributes attributes{
          {"gen_ai.workflow.name", workflow},
          {"switchboard.node", std::string(e.node)},
          {"gen_ai.agent.name", std::string(e.agent)},
          {"switchboard.step.outcome", e.kind == event_kind::step_completed ? "ok" : "failed"}};
      steps_.add(1, attributes);
      step_duration_.record(seconds(e.duration), attributes);
      break;
    }
    case event_kind::paused:
      clarifications_.add(1, {{"gen_ai.workflow.name", workflow}, {"switchboard.node", std::string(e.node)}});
      break;
    case event_kind::approval_requested:
      approvals_.add(1, {{"gen_ai.workflow.name", workflow}, {"switchboard.approval.decision", "requested"}});
      break;
    case event_kind::resumed:
      // After a person's decision on the pending tool calls (one decision
      // for all of them).
      if (e.condition == "approved" || e.condition == "rejected")
        approvals_.add(1, {{"gen_ai.workflow.name", workflow}, {"switchboard.approval.decision", std::string(e.condition)}});
      break;
    case event_kind::tool_called: {
      if (e.tool_call == nullptr) break;
      const std::string_view tool = text_field(*e.tool_call, "tool");
      tool_calls_.add(1, {{"gen_ai.workflow.name", workflow},
                          {"gen_ai.tool.name", tool.empty() ? std::string("_OTHER") : std::string(tool)},
                          {"switchboard.tool.outcome", std::string(tool_outcome(*e.tool_call))}});
      break;
    }
    default:
      break;
  }
}

process_metrics::process_metrics(const telemetry::environment_lookup& lookup, std::string_view service_name) {
  telemetry::metrics_configuration configuration = telemetry::metrics_configuration_from(lookup, service_name);
  model_calls_ = std::make_shared<model_call_metrics>(meter_);
  observer_ = std::make_shared<workflow_metrics>(meter_);
  if (!configuration.enabled) return;
  flush_timeout = configuration.exporter.otlp.shutdown_timeout;
  spdlog::debug("metrics: exporting to {} every {} ms", configuration.exporter.otlp.endpoint,
                configuration.exporter.interval.count());
  exporter_ = std::make_unique<telemetry::otlp_metric_exporter>(meter_, std::move(configuration.exporter));
}

process_metrics::~process_metrics() {
  shutdown(flush_timeout);
  std::scoped_lock lock(mutex_);
  for (const watched& entry : watched_)
    if (entry.model) entry.model->observe_calls(nullptr);
}

void process_metrics::watch(const configured_model& model) {
  if (model.metrics) model.metrics->observe_calls(model_calls_);
}

void process_metrics::watch(const opened_workflow& opened, std::string workflow_name) {
  if (opened.model.metrics) opened.model.metrics->observe_calls(model_calls_);
  std::shared_ptr<protocol::parser_metrics> parser = opened.parser_counts;
  watched entry{opened.model.metrics, parser, {}, {}};
  if (parser) {
    entry.parser_outcomes = meter_->observable_counter(
        {"switchboard.parser.outcomes", "{parse}", "Structured-output answers by parser stage, and failures by reason."},
        [parser, workflow_name](std::vector<telemetry::observation>& out) {
          const protocol::parser_metrics::counts counts = parser->outcomes();
          const auto add = [&](std::string stage, std::string reason, std::uint64_t n) {
            if (n == 0) return;
            metric_attributes attributes{{"gen_ai.workflow.name", workflow_name}, {"switchboard.parser.stage", std::move(stage)}};
            if (!reason.empty()) attributes.emplace_back("switchboard.parser.reason", std::move(reason));
            out.emplace_back(std::move(attributes), static_cast<double>(n));
          };
          add("direct", "", counts.direct);
          add("extracted", "", counts.extracted);
          add("repaired", "", counts.repaired);
          for (const auto& [reason, n] : counts.failed_by_reason) add("failed", reason, n);
        });
    entry.parser_time = meter_->observable_counter(
        {"switchboard.parser.stage.time", "s", "Time spent in each structured-output parser stage."},
        [parser, workflow_name](std::vector<telemetry::observation>& out) {
          for (const protocol::metric_sample& sample : parser->collect()) {
            if (sample.name != "switchboard_parse_stage_seconds_sum") continue;
            const auto stage = sample.labels.find("stage");
            if (stage == sample.labels.end()) continue;
            out.push_back({{{"gen_ai.workflow.name", workflow_name}, {"switchboard.parser.stage", stage->second}},
                           sample.value});
          }
        });
  }
  std::scoped_lock lock(mutex_);
  watched_.push_back(std::move(entry));
}

void process_metrics::forget(const opened_workflow& opened) {
  std::scoped_lock lock(mutex_);
  if (opened.model.metrics) opened.model.metrics->observe_calls(nullptr);
  std::erase_if(watched_, [&](const watched& entry) { return entry.parser == opened.parser_counts; });
}

void process_metrics::shutdown(std::chrono::milliseconds timeout) noexcept {
  try {
    if (exporter_) exporter_->shutdown(timeout);
  } catch (...) {
    // Nothing a collector does may stop the process from ending.
  }
}

telemetry::metric_exporter_counters process_metrics::counters() const {
  return exporter_ ? exporter_->counters() : telemetry::metric_exporter_counters{};
}

}  // namespace switchboard::host
