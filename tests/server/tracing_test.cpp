// `switchboard serve` with tracing on: a run created with a caller's
// `traceparent` continues the caller's trace, and its resume — another
// request, with no header — stays in that trace, linked to the span before.
// Spans are kept by an in-memory processor (the OTLP path has its own tests).
#include "server_fixture.hpp"

#include <switchboard/host/workflow_tracing.hpp>
#include <switchboard/telemetry/tracer.hpp>

#include <mutex>
#include <vector>

namespace switchboard::server::testing {
namespace {

class kept_spans final : public telemetry::span_processor {
 public:
  void on_end(telemetry::span_data&& finished) noexcept override {
    std::scoped_lock lock(mutex_);
    spans_.push_back(std::move(finished));
  }
  std::vector<telemetry::span_data> workflow_spans() const {
    std::scoped_lock lock(mutex_);
    std::vector<telemetry::span_data> out;
    for (const auto& s : spans_)
      if (s.name.starts_with("invoke_workflow ")) out.push_back(s);
    return out;
  }
  std::vector<telemetry::span_data> all() const {
    std::scoped_lock lock(mutex_);
    return spans_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<telemetry::span_data> spans_;
};

std::string text_attribute(const telemetry::span_data& s, std::string_view key) {
  for (const auto& a : s.attributes)
    if (a.key == key)
      if (const auto* t = std::get_if<std::string>(&a.value)) return *t;
  return {};
}

class tracing_test : public server_test {
 protected:
  server::serve_options options() override {
    auto o = server_test::options();
    o.tracing = tracer_;
    return o;
  }
  std::shared_ptr<kept_spans> spans_ = std::make_shared<kept_spans>();
  std::shared_ptr<host::workflow_tracer> tracer_ = std::make_shared<host::workflow_tracer>(
      std::make_shared<telemetry::recording_tracer>(telemetry::sampler{}, spans_));
};

TEST_F(tracing_test, a_callers_traceparent_is_continued_across_the_runs_resume) {
  const auto id = create_thread();
  const auto paused = post(port(), "/threads/" + id + "/runs/wait",
                           json::object{{"assistant_id", "family_scheduling"},
                                        {"input", json::object{{"request", soccer}}}},
                           {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
                            {"tracestate", "vendor=abc"}});
  ASSERT_EQ(values_of(paused).at("status"), "awaiting_approval") << paused.describe();
  const auto done = values_of(resume(id, json::object{{"decision", "approve"}}));
  ASSERT_EQ(done.at("status"), "completed") << json::serialize(done);

  const auto workflows = spans_->workflow_spans();
  ASSERT_EQ(workflows.size(), 2u);
  for (const auto& w : workflows) {
    EXPECT_EQ(w.context.trace_id.hex(), "4bf92f3577b34da6a3ce929d0e0e4736") << w.name;
    EXPECT_EQ(w.parent_span_id.hex(), "00f067aa0ba902b7") << w.name;
    EXPECT_TRUE(w.parent_is_remote);
    EXPECT_EQ(w.context.trace_state, "vendor=abc");
  }
  EXPECT_EQ(text_attribute(workflows[0], "switchboard.run.outcome"), "awaiting_approval");
  EXPECT_EQ(text_attribute(workflows[1], "switchboard.run.outcome"), "completed");
  ASSERT_EQ(workflows[1].links.size(), 1u);
  EXPECT_EQ(workflows[1].links[0].context.span_id, workflows[0].context.span_id);
  // Every span of the run in the caller's trace, the agents' and tools' too.
  std::size_t tools = 0;
  for (const auto& s : spans_->all()) {
    EXPECT_EQ(s.context.trace_id.hex(), "4bf92f3577b34da6a3ce929d0e0e4736") << s.name;
    if (s.name == "execute_tool calendar.book") ++tools;
  }
  EXPECT_GE(tools, 1u);

  // The traceparent is kept with the run that started the hub run, for
  // resumes after a restart.
  const auto runs = get(port(), "/threads/" + id + "/runs").json().as_array();
  bool kept = false;
  for (const auto& r : runs)
    if (const auto* tp = r.at("kwargs").as_object().if_contains("traceparent"))
      kept = kept || *tp == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  EXPECT_TRUE(kept);
}

TEST_F(tracing_test, without_a_traceparent_the_trace_is_derived_from_the_run_and_a_bad_one_is_ignored) {
  const auto id = create_thread();
  const auto r = post(port(), "/threads/" + id + "/runs/wait",
                      json::object{{"assistant_id", "family_scheduling"},
                                   {"input", json::object{{"request", question}}}},
                      {{"traceparent", "00-not-a-trace-01"}});
  ASSERT_EQ(values_of(r).at("status"), "completed") << r.describe();
  const auto workflows = spans_->workflow_spans();
  ASSERT_EQ(workflows.size(), 1u);
  const std::string run = text_attribute(workflows[0], "switchboard.run.id");
  ASSERT_FALSE(run.empty());
  EXPECT_EQ(workflows[0].context.trace_id, host::trace_id_for_run(run));
  EXPECT_FALSE(workflows[0].parent_span_id.valid());
}

}  // namespace
}  // namespace switchboard::server::testing
