// The model's raw text of an LLM step is kept in the step's audit entry, in
// the state's JSON and in its checkpoint, bounded in size.
#include <switchboard/orchestrator/hub.hpp>

#include <switchboard/agents/llm_agent.hpp>
#include <switchboard/models/scripted_model.hpp>
#include <switchboard/agents/prompt_file.hpp>

#include "hub_test_fixture.hpp"

#include <boost/json/serialize.hpp>

namespace switchboard::orchestrator {
namespace {

using namespace hub_testing;

constexpr std::string_view writer_prompt = R"({
  "name": "writer",
  "version": 1,
  "description": "Writes a status.",
  "output_schema": "test.output@1",
  "system": "Answer with JSON only.",
  "user": ["Request: {{input/request}}"]
})";

std::string envelope_text(std::string_view reasoning) {
  return R"({"data": {"status": "written"}, "explanation": "Wrote it.", "confidence": 0.9, "reasoning": ")" +
         std::string(reasoning) + "\"}";
}

class raw_text_test : public hub_test {
 protected:
  raw_text_test() {
    models_.add("default", model_);
    std::vector<agents::prompt_file> versions{agents::prompt_file::parse(writer_prompt, "writer.v1.json")};
    registry_.add(std::make_shared<agents::llm_agent>(std::move(versions), registry_.schemas_ptr()));
  }

  workflow_state run_writer(std::shared_ptr<checkpoint_store> store = nullptr) {
    make_hub(testing::options(std::move(store), models_));
    workflow_builder wf{"write"};
    wf.agent("writer").otherwise("done");
    wf.end("done");
    return run(wf, json::object{{"request", "status please"}});
  }

  std::shared_ptr<models::scripted_model> model_ = std::make_shared<models::scripted_model>();
  agents::model_set models_;
};

TEST_F(raw_text_test, the_models_text_is_in_the_audit_entry_and_the_states_json) {
  const std::string answer = "Here is the answer:\n```json\n" + envelope_text("Asked for it.") + "\n```\nBye.";
  model_->push_text(answer);
  auto s = run_writer();
  ASSERT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
  ASSERT_EQ(s.audit.size(), 1u);
  EXPECT_EQ(s.audit[0].raw_text, answer);  // as the model wrote it, prose and fences included
  EXPECT_EQ(s.audit[0].raw_text_bytes, 0);
  const auto entry = s.to_json().at("audit").at(0).as_object();
  EXPECT_EQ(entry.at("raw_text").as_string(), answer);
  EXPECT_FALSE(entry.contains("raw_text_bytes"));
  EXPECT_EQ(workflow_state::from_json(s.to_json()).audit[0].raw_text, answer);
}

TEST_F(raw_text_test, a_huge_answer_is_cut_with_its_length_noted_in_the_state_and_its_checkpoint) {
  const std::string answer = envelope_text(std::string(100 * 1024, 'r'));
  model_->push_text(answer);
  auto s = run_writer(make_in_memory_checkpoint_store());
  ASSERT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
  const auto& entry = s.audit[0];
  EXPECT_EQ(entry.raw_text.size(), max_raw_text_bytes);
  EXPECT_EQ(entry.raw_text, answer.substr(0, max_raw_text_bytes));
  EXPECT_EQ(entry.raw_text_bytes, static_cast<std::int64_t>(answer.size()));
  EXPECT_EQ(s.to_json().at("audit").at(0).at("raw_text_bytes").as_int64(), static_cast<std::int64_t>(answer.size()));

  const auto stored = sync(hub_->find(s.id));
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->audit[0].raw_text, entry.raw_text);
  EXPECT_EQ(stored->audit[0].raw_text_bytes, entry.raw_text_bytes);
}

TEST_F(raw_text_test, the_ladders_attempts_show_repairs_and_stop_reasons_in_the_state_and_its_checkpoint) {
  // The first answer is cut at the token limit, the second has a trailing comma.
  models::chat_result cut;
  cut.text = R"({"data": {"status": "wri)";
  cut.finish_reason = "length";
  model_->push(models::scripted_response::result(cut));
  model_->push_text("Sure: " + envelope_text("Asked for it.").insert(envelope_text("Asked for it.").size() - 1, ","));
  auto s = run_writer(make_in_memory_checkpoint_store());
  ASSERT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
  const json::value state = s.to_json();
  const json::array& attempts = state.at("audit").at(0).at("model_attempts").as_array();
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].at("reason"), "truncated");
  EXPECT_EQ(attempts[0].at("stop"), "truncated");
  EXPECT_EQ(attempts[1].at("stage"), "repaired");
  EXPECT_NE(json::serialize(attempts[1].at("repairs")).find("trailing comma"), std::string::npos);
  const auto stored = sync(hub_->find(s.id));
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->audit[0].model_attempts, s.audit[0].model_attempts);
}

TEST_F(raw_text_test, a_refused_answer_keeps_its_text_and_why) {
  models::chat_result refused;
  refused.text = "I won't write statuses.";
  refused.finish_reason = "refusal";
  model_->push(models::scripted_response::result(refused));
  auto s = run_writer();
  EXPECT_EQ(s.status, workflow_status::failed);
  ASSERT_EQ(s.audit.size(), 1u);
  EXPECT_EQ(s.audit[0].raw_text, "I won't write statuses.");
  ASSERT_EQ(s.audit[0].model_attempts.size(), 1u);
  EXPECT_EQ(s.audit[0].model_attempts[0].at("reason"), "refusal");
}

TEST_F(raw_text_test, native_agents_leave_no_raw_text) {
  add(constant_agent("native"));
  workflow_builder wf{"native"};
  wf.agent("native").otherwise("done");
  wf.end("done");
  auto s = run(wf);
  EXPECT_EQ(s.audit[0].raw_text, "");
  EXPECT_FALSE(s.to_json().at("audit").at(0).as_object().contains("raw_text"));
}

TEST_F(raw_text_test, synthesis_by_a_model_keeps_the_models_text) {
  const std::string answer = R"({"answer": "All set.", "explanation": "Combined.", "confidence": 0.9})";
  model_->push_text(answer);
  add(constant_agent("native"));
  workflow_builder wf{"synthesis"};
  wf.agent("native").otherwise("sum");
  wf.synthesis("sum", testing::synthesis_by_model("default")).otherwise("done");
  wf.end("done");
  make_hub(testing::options(nullptr, models_));
  auto s = run(wf);
  ASSERT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
  ASSERT_EQ(s.audit.size(), 2u);
  EXPECT_EQ(s.audit[1].raw_text, answer);
}

}  // namespace
}  // namespace switchboard::orchestrator
