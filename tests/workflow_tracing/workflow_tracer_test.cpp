#include <switchboard/host/workflow_tracing.hpp>

#include "telemetry/collecting_processor.hpp"

#include <switchboard/telemetry/trace_context.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace switchboard::host {
namespace {

namespace json = boost::json;
using orchestrator::event;
using orchestrator::event_kind;
using telemetry::span_data;

using testing::collecting_processor;

struct fixture {
  std::shared_ptr<collecting_processor> processor = std::make_shared<collecting_processor>();
  std::shared_ptr<telemetry::tracer> tracer =
      std::make_shared<telemetry::recording_tracer>(telemetry::sampler{}, processor);
};

const telemetry::attribute_value* find(const span_data& data, std::string_view key) {
  for (const auto& item : data.attributes)
    if (item.key == key) return &item.value;
  return nullptr;
}
std::optional<std::string> text(const span_data& data, std::string_view key) {
  const auto* value = find(data, key);
  if (value == nullptr || !std::holds_alternative<std::string>(*value)) return std::nullopt;
  return std::get<std::string>(*value);
}
std::optional<std::int64_t> integer(const span_data& data, std::string_view key) {
  const auto* value = find(data, key);
  if (value == nullptr || !std::holds_alternative<std::int64_t>(*value)) return std::nullopt;
  return std::get<std::int64_t>(*value);
}
const span_data& named(const std::vector<span_data>& spans, std::string_view name) {
  for (const auto& s : spans)
    if (s.name == name) return s;
  throw std::runtime_error("no span named " + std::string(name));
}

event make(event_kind kind, std::string_view run = "run-1", std::int64_t segment = 1) {
  event e{};
  e.kind = kind;
  e.workflow_id = run;
  e.workflow_name = "scheduling";
  e.segment = segment;
  return e;
}

// One run: a planner that calls a tool and routes on, a booker that fails.
void run_two_steps(workflow_tracer& tracer, const json::object& tool_record, const protocol::envelope& planned,
                   const protocol::error_record& failure) {
  tracer.on_event(make(event_kind::workflow_started));
  auto started = make(event_kind::step_started);
  started.step = 1;
  started.node = "plan";
  started.agent = "planner";
  tracer.on_event(started);
  auto tool = make(event_kind::tool_called);
  tool.step = 1;
  tool.agent = "planner";
  tool.tool_call = &tool_record;
  tracer.on_event(tool);
  auto done = make(event_kind::step_completed);
  done.step = 1;
  done.node = "plan";
  done.agent = "planner";
  done.envelope = &planned;
  done.tokens.prompt_tokens = 120;
  done.tokens.completion_tokens = 30;
  done.attempts = 1;
  tracer.on_event(done);
  auto routed = make(event_kind::routed);
  routed.step = 1;
  routed.node = "plan";
  routed.target = "book";
  routed.condition = "confidence >= 0.7";
  tracer.on_event(routed);
  auto second = make(event_kind::step_started);
  second.step = 2;
  second.node = "book";
  second.agent = "booker";
  tracer.on_event(second);
  auto failed = make(event_kind::step_failed);
  failed.step = 2;
  failed.node = "book";
  failed.agent = "booker";
  failed.error = &failure;
  tracer.on_event(failed);
  auto over = make(event_kind::workflow_failed);
  over.step = 2;
  over.error = &failure;
  tracer.on_event(over);
}

struct sample_data {
  json::object tool_record{{"round", 1},
                           {"id", "call-7"},
                           {"tool", "book_meeting"},
                           {"arguments", json::object{{"who", "secret-person@example.com"}}},
                           {"is_error", false},
                           {"result", json::object{{"booked", "room 4"}}},
                           {"duration_ms", 12.5}};
  protocol::envelope planned;
  protocol::error_record failure{"timeout", "booker timed out", true, "booker"};
  sample_data() {
    planned.confidence = 0.85;
    planned.explanation = "private explanation";
  }
};

TEST(WorkflowTracer, MapsARunToAWorkflowSpanWithAgentAndToolChildren) {
  fixture f;
  sample_data d;
  {
    workflow_tracer tracer(f.tracer);
    run_two_steps(tracer, d.tool_record, d.planned, d.failure);
    EXPECT_EQ(tracer.open_runs(), 0u);
  }
  const auto spans = f.processor->spans();
  ASSERT_EQ(spans.size(), 4u);
  const auto& workflow = named(spans, "invoke_workflow scheduling");
  const auto& planner = named(spans, "invoke_agent planner");
  const auto& booker = named(spans, "invoke_agent booker");
  const auto& tool = named(spans, "execute_tool book_meeting");

  EXPECT_FALSE(workflow.parent_span_id.valid());
  EXPECT_EQ(workflow.context.trace_id, trace_id_for_run("run-1"));
  EXPECT_EQ(workflow.context.span_id, workflow_span_id("run-1", 1));
  EXPECT_EQ(text(workflow, "gen_ai.operation.name"), "invoke_workflow");
  EXPECT_EQ(text(workflow, "gen_ai.workflow.name"), "scheduling");
  EXPECT_EQ(text(workflow, "switchboard.run.outcome"), "failed");
  EXPECT_EQ(text(workflow, "error.type"), "timeout");
  EXPECT_EQ(workflow.status, telemetry::status_code::error);
  EXPECT_TRUE(workflow.links.empty());

  for (const auto* child : {&planner, &booker}) {
    EXPECT_EQ(child->context.trace_id, workflow.context.trace_id);
    EXPECT_EQ(child->parent_span_id, workflow.context.span_id);
    EXPECT_EQ(text(*child, "gen_ai.operation.name"), "invoke_agent");
    EXPECT_EQ(text(*child, "switchboard.run.id"), "run-1");
  }
  EXPECT_EQ(text(planner, "gen_ai.agent.name"), "planner");
  EXPECT_EQ(integer(planner, "switchboard.step"), 1);
  EXPECT_EQ(text(planner, "switchboard.node"), "plan");
  ASSERT_NE(find(planner, "switchboard.confidence"), nullptr);
  EXPECT_DOUBLE_EQ(std::get<double>(*find(planner, "switchboard.confidence")), 0.85);
  EXPECT_EQ(text(planner, "switchboard.route.target"), "book");
  EXPECT_EQ(text(planner, "switchboard.route.condition"), "confidence >= 0.7");
  EXPECT_EQ(integer(planner, "gen_ai.usage.input_tokens"), 120);
  EXPECT_EQ(integer(planner, "gen_ai.usage.output_tokens"), 30);
  EXPECT_EQ(planner.status, telemetry::status_code::unset);

  EXPECT_EQ(integer(booker, "switchboard.step"), 2);
  EXPECT_EQ(text(booker, "error.type"), "timeout");
  EXPECT_EQ(booker.status, telemetry::status_code::error);
  EXPECT_EQ(booker.status_message, "booker timed out");
  EXPECT_EQ(find(booker, "gen_ai.usage.input_tokens"), nullptr);  // the event had none

  EXPECT_EQ(tool.parent_span_id, planner.context.span_id);
  EXPECT_EQ(text(tool, "gen_ai.operation.name"), "execute_tool");
  EXPECT_EQ(text(tool, "gen_ai.tool.name"), "book_meeting");
  EXPECT_EQ(text(tool, "gen_ai.tool.call.id"), "call-7");
  ASSERT_NE(find(tool, "switchboard.tool.replayed"), nullptr);
  EXPECT_FALSE(std::get<bool>(*find(tool, "switchboard.tool.replayed")));
  // Timed by the record's duration, ending when the event arrived.
  EXPECT_GE(tool.end_time_unix_nano - tool.start_time_unix_nano, 12'000'000u);
}

TEST(WorkflowTracer, RecordsNoContentUnlessAskedTo) {
  sample_data d;
  const auto all_text = [](const std::vector<span_data>& spans) {
    std::string out;
    for (const auto& s : spans)
      for (const auto& a : s.attributes)
        if (const auto* t = std::get_if<std::string>(&a.value)) out.append(a.key.view()).append("=").append(*t).append("\n");
    return out;
  };
  fixture quiet;
  {
    workflow_tracer tracer(quiet.tracer);
    run_two_steps(tracer, d.tool_record, d.planned, d.failure);
  }
  const std::string recorded = all_text(quiet.processor->spans());
  EXPECT_EQ(recorded.find("secret-person"), std::string::npos) << recorded;
  EXPECT_EQ(recorded.find("room 4"), std::string::npos) << recorded;
  EXPECT_EQ(recorded.find("private explanation"), std::string::npos) << recorded;

  fixture loud;
  {
    workflow_tracing_options options;
    options.capture_content = true;
    workflow_tracer tracer(loud.tracer, options);
    run_two_steps(tracer, d.tool_record, d.planned, d.failure);
  }
  const auto spans = loud.processor->spans();
  const auto& tool = named(spans, "execute_tool book_meeting");
  EXPECT_EQ(text(tool, "gen_ai.tool.call.arguments"), R"({"who":"secret-person@example.com"})");
  EXPECT_EQ(text(tool, "gen_ai.tool.call.result"), R"({"booked":"room 4"})");
  EXPECT_EQ(text(named(spans, "invoke_agent planner"), "switchboard.explanation"), "private explanation");
}

TEST(WorkflowTracer, APauseEndsTheWorkflowSpanAndAResumeElsewhereLinksToIt) {
  fixture first_process;
  {
    workflow_tracer tracer(first_process.tracer);
    tracer.on_event(make(event_kind::workflow_started, "run-9", 1));
    auto paused = make(event_kind::paused, "run-9", 1);
    paused.node = "plan";
    paused.question = "Which day?";
    tracer.on_event(paused);
    EXPECT_EQ(tracer.open_runs(), 0u);  // ended at the pause, not at exit
  }
  fixture second_process;
  {
    workflow_tracer tracer(second_process.tracer);
    tracer.on_event(make(event_kind::resumed, "run-9", 2));
    auto approval = make(event_kind::approval_requested, "run-9", 2);
    tracer.on_event(approval);
  }
  fixture third_process;
  {
    workflow_tracer tracer(third_process.tracer);
    tracer.on_event(make(event_kind::resumed, "run-9", 3));
    tracer.on_event(make(event_kind::workflow_completed, "run-9", 3));
  }
  const auto one = first_process.processor->spans();
  const auto two = second_process.processor->spans();
  const auto three = third_process.processor->spans();
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(two.size(), 1u);
  ASSERT_EQ(three.size(), 1u);
  EXPECT_EQ(text(one[0], "switchboard.run.outcome"), "awaiting_clarification");
  EXPECT_EQ(text(one[0], "switchboard.pause.node"), "plan");
  EXPECT_EQ(find(one[0], "switchboard.question"), nullptr);  // content: off
  EXPECT_EQ(text(two[0], "switchboard.run.outcome"), "awaiting_approval");
  EXPECT_EQ(text(three[0], "switchboard.run.outcome"), "completed");

  EXPECT_EQ(one[0].context.trace_id, two[0].context.trace_id);
  EXPECT_EQ(two[0].context.trace_id, three[0].context.trace_id);
  EXPECT_NE(one[0].context.span_id, two[0].context.span_id);
  EXPECT_TRUE(one[0].links.empty());
  ASSERT_EQ(two[0].links.size(), 1u);
  EXPECT_EQ(two[0].links[0].context.span_id, one[0].context.span_id);
  EXPECT_EQ(two[0].links[0].context.trace_id, one[0].context.trace_id);
  ASSERT_EQ(three[0].links.size(), 1u);
  EXPECT_EQ(three[0].links[0].context.span_id, two[0].context.span_id);
}

TEST(WorkflowTracer, ContinuesACallersTrace) {
  fixture f;
  const auto caller = telemetry::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(caller);
  {
    workflow_tracer tracer(f.tracer);
    tracer.continue_trace("run-c", *caller);
    tracer.on_event(make(event_kind::workflow_started, "run-c"));
    auto started = make(event_kind::step_started, "run-c");
    started.agent = "planner";
    tracer.on_event(started);
    tracer.on_event(make(event_kind::workflow_completed, "run-c"));
  }
  const auto spans = f.processor->spans();
  ASSERT_EQ(spans.size(), 2u);
  const auto& workflow = named(spans, "invoke_workflow scheduling");
  EXPECT_EQ(workflow.context.trace_id.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(workflow.parent_span_id.hex(), "00f067aa0ba902b7");
  EXPECT_TRUE(workflow.parent_is_remote);
  EXPECT_EQ(named(spans, "invoke_agent planner").context.trace_id, workflow.context.trace_id);
}

TEST(WorkflowTracer, EndsWhatIsOpenAtShutdown) {
  fixture f;
  {
    workflow_tracer tracer(f.tracer);
    tracer.on_event(make(event_kind::workflow_started));
    auto started = make(event_kind::step_started);
    started.agent = "planner";
    tracer.on_event(started);
    EXPECT_EQ(tracer.open_runs(), 1u);
    EXPECT_TRUE(f.processor->spans().empty());
  }
  const auto spans = f.processor->spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(text(named(spans, "invoke_workflow scheduling"), "switchboard.run.outcome"), "shutdown");
}

TEST(WorkflowTracer, RunsOnManyThreadsAtOnceKeepTheirOwnTrees) {
  fixture f;
  constexpr int threads = 8;
  constexpr int runs_per_thread = 50;
  {
    workflow_tracer tracer(f.tracer);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&tracer, t] {
        for (int r = 0; r < runs_per_thread; ++r) {
          const std::string id = "run-" + std::to_string(t) + "-" + std::to_string(r);
          tracer.on_event(make(event_kind::workflow_started, id));
          auto started = make(event_kind::step_started, id);
          started.agent = "planner";
          started.step = 1;
          tracer.on_event(started);
          auto done = make(event_kind::step_completed, id);
          done.agent = "planner";
          done.step = 1;
          tracer.on_event(done);
          tracer.on_event(make(event_kind::workflow_completed, id));
        }
      });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(tracer.open_runs(), 0u);
  }
  const auto spans = f.processor->spans();
  ASSERT_EQ(spans.size(), static_cast<std::size_t>(threads * runs_per_thread * 2));
  std::map<std::string, std::string> workflow_span_of_run;
  for (const auto& s : spans)
    if (s.name == "invoke_workflow scheduling") workflow_span_of_run[*text(s, "switchboard.run.id")] = s.context.span_id.hex();
  EXPECT_EQ(workflow_span_of_run.size(), static_cast<std::size_t>(threads * runs_per_thread));
  for (const auto& s : spans) {
    if (s.name != "invoke_agent planner") continue;
    const auto run = *text(s, "switchboard.run.id");
    EXPECT_EQ(s.parent_span_id.hex(), workflow_span_of_run.at(run));
    EXPECT_EQ(s.context.trace_id, trace_id_for_run(run));
  }
}

TEST(WorkflowTracer, IdsAreDerivedFromTheRunIdAlone) {
  EXPECT_EQ(trace_id_for_run("abc"), trace_id_for_run("abc"));
  EXPECT_NE(trace_id_for_run("abc"), trace_id_for_run("abd"));
  EXPECT_TRUE(trace_id_for_run("").valid());
  EXPECT_EQ(workflow_span_id("abc", 2), workflow_span_id("abc", 2));
  EXPECT_NE(workflow_span_id("abc", 1), workflow_span_id("abc", 2));
  EXPECT_NE(workflow_span_id("abc", 1), workflow_span_id("abd", 1));
}

TEST(WorkflowTracingOptions, ReadsTheContentCaptureVariable) {
  const auto with = [](std::optional<std::string> value) {
    return workflow_tracing_options_from([value](std::string_view name) -> std::optional<std::string> {
      if (name == "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") return value;
      return std::nullopt;
    });
  };
  EXPECT_FALSE(with(std::nullopt).capture_content);
  EXPECT_FALSE(with("false").capture_content);
  EXPECT_TRUE(with("true").capture_content);
  EXPECT_TRUE(with("TRUE").capture_content);
  EXPECT_THROW(with("yes"), telemetry::configuration_error);
}

telemetry::environment_lookup environment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    const auto found = values.find(std::string(name));
    if (found == values.end()) return std::nullopt;
    return found->second;
  };
}

TEST(ProcessTracing, AttachesNothingWhenTracingIsOff) {
  const process_tracing no_endpoint(environment({{"OTEL_SERVICE_NAME", "x"}}), "switchboard");
  EXPECT_FALSE(no_endpoint.enabled());
  EXPECT_EQ(no_endpoint.observer(), nullptr);
  EXPECT_EQ(no_endpoint.tracing().exporter, nullptr);

  const process_tracing disabled(
      environment({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"}, {"OTEL_SDK_DISABLED", "true"}}),
      "switchboard");
  EXPECT_FALSE(disabled.enabled());
  EXPECT_EQ(disabled.observer(), nullptr);

  const process_tracing on(environment({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"}}), "switchboard");
  EXPECT_TRUE(on.enabled());
  EXPECT_NE(on.observer(), nullptr);
  EXPECT_NE(on.tracing().exporter, nullptr);

  EXPECT_THROW(process_tracing(environment({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"},
                                            {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "maybe"}}),
                               "switchboard"),
               telemetry::configuration_error);
}

}  // namespace
}  // namespace switchboard::host
