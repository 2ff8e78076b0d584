// Events: every step is reported to the hub's metrics, its observers and
// its log.

#include "workflow_run.hpp"

#include <spdlog/spdlog.h>

namespace switchboard::orchestrator::detail {

// ---------------------------------------------------------------- events

event workflow_run::make_event(event_kind kind) const {
  event e{};
  e.kind = kind;
  e.workflow_id = state_.id;
  e.workflow_name = state_.workflow_name;
  e.step = state_.step;
  e.segment = state_.starts;
  e.node = state_.next_node;
  return e;
}

void workflow_run::emit(const event& e) {
  if (hub_->options.collect_metrics) hub_->metrics.on_event(e);
  for (const auto& o : hub_->observers) o->on_event(e);
  log(e);
}

void workflow_run::log(const event& e) const {
  auto& logger = *hub_->logger;
  switch (e.kind) {
    case event_kind::step_completed:
      logger.info("[{}] step {} {}/{}: {} (confidence {:.2f})", e.workflow_id, e.step, e.node, e.agent,
                  e.envelope->explanation, e.envelope->confidence);
      logger.debug("[{}] step {} {} reasoning: {}", e.workflow_id, e.step, e.agent, e.envelope->reasoning);
      break;
    case event_kind::step_failed:
      logger.warn("[{}] step {} {}/{} failed ({}): {}", e.workflow_id, e.step, e.node, e.agent, e.error->type,
                  e.error->message);
      break;
    case event_kind::routed:
      logger.debug("[{}] {} -> {} ({})", e.workflow_id, e.node, e.target, e.condition);
      break;
    case event_kind::paused:
      logger.info("[{}] awaiting clarification at {}: {}", e.workflow_id, e.node, e.question);
      break;
    case event_kind::resumed:
      logger.info("[{}] resumed at {}", e.workflow_id, e.node);
      break;
    case event_kind::workflow_started:
      logger.debug("[{}] workflow '{}' started at {}", e.workflow_id, e.workflow_name, e.node);
      break;
    case event_kind::workflow_completed:
      logger.info("[{}] workflow '{}' completed after {} steps", e.workflow_id, e.workflow_name, e.step);
      break;
    case event_kind::workflow_failed:
      logger.warn("[{}] workflow '{}' failed ({}): {}", e.workflow_id, e.workflow_name, e.error->type,
                  e.error->message);
      break;
    case event_kind::workflow_interrupted:
      logger.info("[{}] workflow '{}' interrupted at {}; resumable", e.workflow_id, e.workflow_name, e.node);
      break;
    case event_kind::workflow_cancelled:
      logger.info("[{}] workflow '{}' cancelled at {}", e.workflow_id, e.workflow_name, e.node);
      break;
    case event_kind::step_started:
      logger.trace("[{}] step {} {} started", e.workflow_id, e.step, e.node);
      break;
    case event_kind::approval_requested:
      logger.info("[{}] awaiting approval at {}: {}", e.workflow_id, e.node, e.question);
      break;
    case event_kind::tool_called:
      logger.debug("[{}] step {} {} called a tool", e.workflow_id, e.step, e.agent);
      break;
    case event_kind::text_delta:
    case event_kind::tool_call_delta:
    case event_kind::stream_restarted:
      break;  // streamed pieces go to observers only (stream_relay.hpp), never through emit()
  }
}

}  // namespace switchboard::orchestrator::detail
