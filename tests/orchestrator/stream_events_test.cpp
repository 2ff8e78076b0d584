// Streaming to observers: an observer that wants deltas gets an LLM agent's
// model text as text_delta events (the scripted model delivers it as one
// piece) before the step's step_completed, with the step's origin; without
// such an observer the model is never asked to stream.
#include <switchboard/orchestrator/events.hpp>

#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/agents/prompt_file.hpp>

#include "hub_test_fixture.hpp"

#include <algorithm>

namespace switchboard::orchestrator {
namespace {

using namespace hub_testing;

constexpr std::string_view writer_prompt = R"({
  "name": "writer", "version": 1, "description": "Writes a status.", "output_schema": "test.output@1",
  "system": "Answer with JSON only.", "user": ["Request: {{input/request}}"]
})";

const std::string answer =
    R"({"data": {"status": "written"}, "explanation": "Wrote it.", "confidence": 0.9, "reasoning": "r"})";

struct delta_recorder final : observer {
  bool wants = true;
  std::vector<std::string> kinds;
  std::string text;
  std::string agent, node;
  bool wants_deltas() const noexcept override { return wants; }
  void on_event(const event& e) noexcept override {
    kinds.emplace_back(to_string(e.kind));
    if (e.kind == event_kind::text_delta) {
      text.append(e.text);
      agent = std::string(e.agent);
      node = std::string(e.node);
    }
  }
};

class stream_events_test : public hub_test {
 protected:
  stream_events_test() {
    models_.add("default", model_);
    std::vector<agents::prompt_file> versions{agents::prompt_file::parse(writer_prompt, "writer.v1.json")};
    registry_.add(std::make_shared<agents::llm_agent>(std::move(versions), registry_.schemas_ptr()));
  }
  workflow_state run_writer(std::shared_ptr<delta_recorder> recorder) {
    make_hub(testing::options(nullptr, models_));
    hub_->add_observer(recorder);
    workflow_builder wf{"write"};
    wf.agent("writer").otherwise("done");
    wf.end("done");
    return run(wf, json::object{{"request", "status please"}});
  }
  std::shared_ptr<models::scripted_model> model_ = std::make_shared<models::scripted_model>();
  agents::model_set models_;
};

TEST_F(stream_events_test, an_observer_that_wants_deltas_gets_the_text_before_the_step_ends) {
  model_->push_text(answer);
  auto recorder = std::make_shared<delta_recorder>();
  const auto s = run_writer(recorder);
  ASSERT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(recorder->text, answer);
  EXPECT_EQ(recorder->agent, "writer");
  const auto delta = std::find(recorder->kinds.begin(), recorder->kinds.end(), "text_delta");
  const auto completed = std::find(recorder->kinds.begin(), recorder->kinds.end(), "step_completed");
  ASSERT_NE(delta, recorder->kinds.end());
  EXPECT_LT(delta, completed);
  EXPECT_NE(model_->request(0).stream, nullptr);
}

TEST_F(stream_events_test, without_such_an_observer_nothing_is_streamed) {
  model_->push_text(answer);
  auto recorder = std::make_shared<delta_recorder>();
  recorder->wants = false;
  const auto s = run_writer(recorder);
  ASSERT_EQ(s.status, workflow_status::completed);
  EXPECT_TRUE(recorder->text.empty());
  EXPECT_EQ(model_->request(0).stream, nullptr);
}

}  // namespace
}  // namespace switchboard::orchestrator
