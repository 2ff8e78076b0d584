#include <switchboard/host/workflow_tracing.hpp>

#include "record_fields.hpp"

#include <boost/json/serialize.hpp>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <optional>
#include <vector>

namespace switchboard::host {
namespace {

namespace json = boost::json;
using orchestrator::event;
using orchestrator::event_kind;

std::array<std::uint8_t, 32> sha256(std::string_view data) {
  std::array<std::uint8_t, 32> digest{};
  unsigned int size = 0;
  // EVP_Digest fails only when OpenSSL is out of memory; the zero digest
  // then still yields valid (fixed) ids below, and tracing never throws
  // into the hub.
  // Fetched once: with OpenSSL 3, EVP_sha256() looks the implementation up
  // again on every digest, which cost more than the hashing itself.
  static EVP_MD* const fetched = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
  EVP_Digest(data.data(), data.size(), digest.data(), &size, fetched != nullptr ? fetched : EVP_sha256(), nullptr);
  return digest;
}

std::uint64_t micros_to_nanos(double micros) { return micros <= 0 ? 0 : static_cast<std::uint64_t>(micros * 1000.0); }

using detail::bool_field;
using detail::text_field;

double number_field(const json::object& record, std::string_view key) {
  const auto* value = record.if_contains(key);
  if (value == nullptr) return 0;
  if (value->is_double()) return value->get_double();
  if (value->is_int64()) return static_cast<double>(value->get_int64());
  if (value->is_uint64()) return static_cast<double>(value->get_uint64());
  return 0;
}

std::string_view error_code(const json::object& record) {
  const auto* error = record.if_contains("error");
  if (error == nullptr || !error->is_object()) return {};
  return text_field(error->get_object(), "code");
}

std::string_view outcome_of(event_kind kind) {
  switch (kind) {
    case event_kind::workflow_completed: return "completed";
    case event_kind::workflow_failed: return "failed";
    case event_kind::workflow_cancelled: return "cancelled";
    case event_kind::workflow_interrupted: return "interrupted";
    case event_kind::paused: return "awaiting_clarification";
    case event_kind::approval_requested: return "awaiting_approval";
    default: return "";
  }
}

}  // namespace

// What is open for one run: the workflow span of its current stretch, the
// step's span, and, between a step's end and its route, the step waiting
// for the route to be added.
struct workflow_tracer::run_spans {
  std::int64_t segment = 0;
  std::int64_t step_number = 0;        // of the last step_started
  telemetry::span workflow;
  telemetry::span step;
  std::string step_agent;              // "" for a group or coordinator before it chose
  bool step_ended = false;             // step_completed/failed seen; waits for `routed`
  std::uint64_t step_end_time = 0;
  std::optional<telemetry::span_context> caller;
};

workflow_tracing_options workflow_tracing_options_from(const telemetry::environment_lookup& lookup) {
  workflow_tracing_options out;
  constexpr std::string_view name = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
  const auto value = lookup(name);
  if (!value || value->empty()) return out;
  std::string lowered(*value);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lowered == "true") {
    out.capture_content = true;
  } else if (lowered != "false") {
    throw telemetry::configuration_error(std::string(name) + "='" + *value + "': expected true or false");
  }
  return out;
}

telemetry::trace_id trace_id_for_run(std::string_view run_id) {
  std::string input = "switchboard.run:";
  input.append(run_id);
  const auto digest = sha256(input);
  telemetry::trace_id out;
  std::memcpy(out.bytes.data(), digest.data(), out.bytes.size());
  if (!out.valid()) out.bytes.back() = 1;  // all zero is "no trace" in W3C
  return out;
}

telemetry::span_id workflow_span_id(std::string_view run_id, std::int64_t segment) {
  std::string input = "switchboard.workflow:";
  input.append(std::to_string(segment));
  input.push_back(':');
  input.append(run_id);
  const auto digest = sha256(input);
  telemetry::span_id out;
  std::memcpy(out.bytes.data(), digest.data(), out.bytes.size());
  if (!out.valid()) out.bytes.back() = 1;
  return out;
}

telemetry::span_id tool_span_id(std::string_view run_id, std::int64_t segment, std::int64_t step,
                                std::string_view call_id) {
  std::string input = "switchboard.tool:";
  input.append(std::to_string(segment)).append(":").append(std::to_string(step)).append(":");
  input.append(std::to_string(call_id.size())).append(":").append(call_id).append(":").append(run_id);
  const auto digest = sha256(input);
  telemetry::span_id out;
  std::memcpy(out.bytes.data(), digest.data(), out.bytes.size());
  if (!out.valid()) out.bytes.back() = 1;
  return out;
}

telemetry::span_context workflow_tracer::step_span(std::string_view run_id) const {
  std::scoped_lock lock(mutex_);
  const auto found = runs_.find(run_id);
  if (found == runs_.end()) return {};
  const run_spans& run = *found->second;
  // Between a step's end and its route the span is still open; a model
  // call then belongs to no step (none is made there) and takes the run's.
  if (run.step.context().valid() && !run.step_ended) return run.step.context();
  return run.workflow.context();
}

telemetry::span_context workflow_tracer::tool_span(std::string_view run_id, std::string_view call_id) const {
  std::scoped_lock lock(mutex_);
  const auto found = runs_.find(run_id);
  if (found == runs_.end()) return {};
  const run_spans& run = *found->second;
  telemetry::span_context out = run.step.context().valid() ? run.step.context() : run.workflow.context();
  if (!out.valid()) return {};
  out.span_id = tool_span_id(run_id, run.segment, run.step_number, call_id);
  out.is_remote = false;
  return out;
}

workflow_tracer::workflow_tracer(std::shared_ptr<telemetry::tracer> tracer, workflow_tracing_options options)
    : tracer_(std::move(tracer)), options_(options) {}

workflow_tracer::~workflow_tracer() { end_all("shutdown"); }

void workflow_tracer::continue_trace(std::string_view run_id, const telemetry::span_context& caller) {
  if (!caller.valid()) return;
  std::scoped_lock lock(mutex_);
  callers_.insert_or_assign(std::string(run_id), caller);
}

std::size_t workflow_tracer::open_runs() const {
  std::scoped_lock lock(mutex_);
  return runs_.size();
}

namespace {

// Ends the step's span: at the time its step ended when that is known (the
// route came after), else now.
void end_step(workflow_tracer::run_spans& run) {
  run.step.end(run.step_ended ? run.step_end_time : 0);
  run.step_agent.clear();
  run.step_ended = false;
  run.step_end_time = 0;
}

void end_workflow(workflow_tracer::run_spans& run, std::string_view outcome) {
  end_step(run);
  run.workflow.set_attribute("switchboard.run.outcome", outcome);
  run.workflow.end();
}

}  // namespace

void workflow_tracer::end_all(std::string_view why) noexcept {
  std::scoped_lock lock(mutex_);
  for (auto& [id, run] : runs_) end_workflow(*run, why);
  runs_.clear();
}

void workflow_tracer::on_event(const event& e) noexcept {
  // Streamed pieces are not spans; dropping them here keeps the lock off the
  // hot streaming path.
  if (e.kind == event_kind::text_delta || e.kind == event_kind::tool_call_delta ||
      e.kind == event_kind::stream_restarted)
    return;
  try {
    std::scoped_lock lock(mutex_);
    handle(e);
  } catch (...) {
    // An observer must not throw into the hub (events.hpp); a span lost to
    // an allocation failure is the lesser harm.
  }
}

// The run's open spans, starting the workflow span of the event's stretch
// when none is open (its start, its resume, or a question asked again
// without either).
workflow_tracer::run_spans& workflow_tracer::spans_of(const event& e) {
  auto found = runs_.find(e.workflow_id);
  if (found != runs_.end() && found->second->segment == e.segment)
    return *found->second;
  if (found != runs_.end()) {
    // A new stretch of a run whose last one never ended here (a resume in
    // the same process after a pause ends it; this is the defensive case).
    end_workflow(*found->second, "superseded");
  } else {
    found = runs_.emplace(std::string(e.workflow_id), std::make_unique<run_spans>()).first;
  }
  run_spans& run = *found->second;
  run.segment = e.segment;
  if (auto caller = callers_.find(e.workflow_id); caller != callers_.end()) run.caller = caller->second;

  const telemetry::trace_id trace = run.caller ? run.caller->trace_id : trace_id_for_run(e.workflow_id);
  const telemetry::span_id id = workflow_span_id(e.workflow_id, e.segment);
  std::vector<telemetry::span_link> links;
  if (e.segment > 1) {
    telemetry::span_link previous;
    previous.context.trace_id = trace;
    previous.context.span_id = workflow_span_id(e.workflow_id, e.segment - 1);
    previous.context.trace_flags = telemetry::sampled_flag;
    previous.attributes.push_back({"switchboard.link", std::string("resumed_from")});
    links.push_back(std::move(previous));
  }
  telemetry::span_options options;
  options.trace_id = &trace;
  options.span_id = &id;
  options.parent = run.caller ? &*run.caller : nullptr;
  options.links = links;
  std::string name = "invoke_workflow ";
  name.append(e.workflow_name);
  run.workflow = tracer_->start_span(name, options);
  if (run.workflow.is_recording()) {
    run.workflow.set_attribute("gen_ai.operation.name", "invoke_workflow")
        .set_attribute("gen_ai.workflow.name", e.workflow_name)
        .set_attribute("switchboard.run.id", e.workflow_id)
        .set_attribute("switchboard.run.segment", e.segment)
        .set_attribute("switchboard.run.resumed", e.kind == event_kind::resumed || e.segment > 1);
    if (!e.node.empty()) run.workflow.set_attribute("switchboard.node", e.node);
  }
  return run;
}

void workflow_tracer::handle(const event& e) {
  run_spans& run = spans_of(e);
  const telemetry::span_context workflow_context = run.workflow.context();
  switch (e.kind) {
    case event_kind::workflow_started:
    case event_kind::resumed:
      return;  // spans_of started the stretch

    case event_kind::step_started: {
      end_step(run);
      telemetry::span_options options;
      options.parent = &workflow_context;
      std::string name = "invoke_agent";
      const std::string_view agent = e.agent.empty() ? e.node : e.agent;
      if (!agent.empty()) name.append(" ").append(agent);
      run.step = tracer_->start_span(name, options);
      run.step_agent = std::string(e.agent);
      run.step_number = e.step;
      if (run.step.is_recording()) {
        run.step.set_attribute("gen_ai.operation.name", "invoke_agent")
            .set_attribute("switchboard.run.id", e.workflow_id)
            .set_attribute("switchboard.step", e.step)
            .set_attribute("switchboard.node", e.node);
        if (!agent.empty()) run.step.set_attribute("gen_ai.agent.name", agent);
      }
      return;
    }

    case event_kind::step_completed:
    case event_kind::step_failed: {
      const std::uint64_t now = telemetry::now_unix_nano();
      // A member of a parallel group (or a second agent in one step) gets a
      // span of its own, timed by the event's duration; the step's span is
      // the first agent's, or the group's.
      telemetry::span member;
      telemetry::span* target = &run.step;
      const bool own_span = !run.step.is_recording() || run.step_ended ||
                            (!run.step_agent.empty() && !e.agent.empty() && run.step_agent != e.agent);
      if (own_span) {
        telemetry::span_options options;
        options.parent = &workflow_context;
        const auto micros = static_cast<double>(e.duration.count());
        options.start_time_unix_nano = now - std::min<std::uint64_t>(now, micros_to_nanos(micros));
        std::string name = "invoke_agent";
        if (!e.agent.empty()) name.append(" ").append(e.agent);
        member = tracer_->start_span(name, options);
        member.set_attribute("gen_ai.operation.name", "invoke_agent")
            .set_attribute("switchboard.run.id", e.workflow_id)
            .set_attribute("switchboard.step", e.step)
            .set_attribute("switchboard.node", e.node);
        target = &member;
      }
      telemetry::span& s = *target;
      if (s.is_recording()) {
        if (!e.agent.empty()) s.set_attribute("gen_ai.agent.name", e.agent);
        if (!e.prompt_version.empty()) s.set_attribute("switchboard.prompt.version", e.prompt_version);
        if (e.attempts > 0) s.set_attribute("switchboard.attempts", e.attempts);
        if (e.tokens.prompt_tokens > 0 || e.tokens.completion_tokens > 0) {
          s.set_attribute("gen_ai.usage.input_tokens", e.tokens.prompt_tokens);
          s.set_attribute("gen_ai.usage.output_tokens", e.tokens.completion_tokens);
        }
        if (e.envelope != nullptr) {
          s.set_attribute("switchboard.confidence", e.envelope->confidence);
          if (options_.capture_content) s.set_attribute("switchboard.explanation", e.envelope->explanation);
        }
        if (e.kind == event_kind::step_failed && e.error != nullptr) {
          s.set_attribute("error.type", e.error->type.empty() ? std::string_view("_OTHER") : std::string_view(e.error->type));
          s.set_status(telemetry::status_code::error, e.error->message);
        }
      }
      if (own_span) {
        member.end(now);
      } else {
        // Kept open for the route, which comes next.
        run.step_ended = true;
        run.step_end_time = now;
      }
      return;
    }

    case event_kind::routed:
      if (run.step.is_recording()) {
        run.step.set_attribute("switchboard.route.target", e.target)
            .set_attribute("switchboard.route.condition", e.condition);
      }
      end_step(run);
      return;

    case event_kind::tool_called: {
      if (e.tool_call == nullptr) return;
      const json::object& record = *e.tool_call;
      const std::uint64_t now = telemetry::now_unix_nano();
      const telemetry::span_context step_context = run.step.context();
      telemetry::span_options options;
      options.parent = step_context.valid() ? &step_context : &workflow_context;
      options.start_time_unix_nano = now - std::min<std::uint64_t>(now, micros_to_nanos(number_field(record, "duration_ms") * 1000.0));
      // The id the call carried as traceparent while it was made (tool_span).
      const std::string_view call_id = text_field(record, "id");
      const telemetry::span_id id = tool_span_id(e.workflow_id, e.segment, e.step, call_id);
      if (!call_id.empty()) options.span_id = &id;
      const std::string_view tool = text_field(record, "tool");
      std::string name = "execute_tool";
      if (!tool.empty()) name.append(" ").append(tool);
      telemetry::span call = tracer_->start_span(name, options);
      if (call.is_recording()) {
        call.set_attribute("gen_ai.operation.name", "execute_tool")
            .set_attribute("gen_ai.tool.type", "function")
            .set_attribute("switchboard.run.id", e.workflow_id)
            .set_attribute("switchboard.step", e.step);
        if (!tool.empty()) call.set_attribute("gen_ai.tool.name", tool);
        if (const auto id = text_field(record, "id"); !id.empty()) call.set_attribute("gen_ai.tool.call.id", id);
        if (!e.agent.empty()) call.set_attribute("gen_ai.agent.name", e.agent);
        if (const auto origin = text_field(record, "origin"); !origin.empty())
          call.set_attribute("switchboard.tool.origin", origin);
        // Made now, or an earlier run of the step made it and its recorded
        // result was used again (the call was not repeated).
        call.set_attribute("switchboard.tool.replayed", bool_field(record, "replayed"));
        const std::string_view code = error_code(record);
        if (code == "rejected") {
          call.set_attribute("switchboard.tool.approval", "rejected");
        } else if (const auto* approved = record.if_contains("approved"); approved && approved->is_bool()) {
          call.set_attribute("switchboard.tool.approval", approved->get_bool() ? "approved" : "rejected");
        }
        if (bool_field(record, "is_error")) {
          call.set_attribute("error.type", code.empty() ? std::string_view("_OTHER") : code);
          call.set_status(telemetry::status_code::error);
        }
        if (options_.capture_content) {
          if (const auto* arguments = record.if_contains("arguments"))
            call.set_attribute("gen_ai.tool.call.arguments", json::serialize(*arguments));
          if (const auto* result = record.if_contains("result"))
            call.set_attribute("gen_ai.tool.call.result", json::serialize(*result));
        }
      }
      call.end(now);
      return;
    }

    case event_kind::paused:
    case event_kind::approval_requested:
      if (run.workflow.is_recording() && options_.capture_content && !e.question.empty())
        run.workflow.set_attribute("switchboard.question", e.question);
      if (run.workflow.is_recording() && !e.node.empty()) run.workflow.set_attribute("switchboard.pause.node", e.node);
      [[fallthrough]];
    case event_kind::workflow_completed:
    case event_kind::workflow_failed:
    case event_kind::workflow_cancelled:
    case event_kind::workflow_interrupted: {
      if (e.kind == event_kind::workflow_failed && e.error != nullptr) {
        run.workflow.set_attribute("error.type", e.error->type.empty() ? std::string_view("_OTHER") : std::string_view(e.error->type));
        run.workflow.set_status(telemetry::status_code::error, e.error->message);
      }
      run.workflow.set_attribute("switchboard.steps", e.step);
      end_workflow(run, outcome_of(e.kind));
      const std::string id(e.workflow_id);
      runs_.erase(id);
      // A finished run is not continued: forget its caller. A paused or
      // interrupted one keeps it for its resume in this process.
      if (e.kind == event_kind::workflow_completed || e.kind == event_kind::workflow_failed ||
          e.kind == event_kind::workflow_cancelled)
        callers_.erase(id);
      return;
    }

    case event_kind::text_delta:
    case event_kind::tool_call_delta:
    case event_kind::stream_restarted:
      return;
  }
}

process_tracing::process_tracing(const telemetry::environment_lookup& lookup, std::string_view service_name) {
  const auto configuration = telemetry::tracing_configuration_from(lookup, service_name);
  const auto options = workflow_tracing_options_from(lookup);
  tracing_ = telemetry::start_tracing(configuration);
  if (configuration.enabled) observer_ = std::make_shared<workflow_tracer>(tracing_.tracer, options);
}

process_tracing::~process_tracing() { shutdown(flush_timeout); }

void process_tracing::shutdown(std::chrono::milliseconds timeout) noexcept {
  try {
    if (observer_) observer_->end_all("exit");
    tracing_.shutdown(timeout);
  } catch (...) {
    // At exit: a flush that failed is the exporter's counted loss, not a crash.
  }
}

}  // namespace switchboard::host
