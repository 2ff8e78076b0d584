// The invoker's call limits (model_set::set_limits: --max-attempts,
// --timeout, --mode) reach an LLM agent built from a prompt file and win
// over the file's own settings.
#include <switchboard/agents/llm_agent.hpp>

#include <switchboard/models/scripted_model.hpp>

#include "agent_test_support.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace switchboard::agents {
namespace {

using agent_test::context_holder;
using agent_test::run_sync;
using agent_test::test_data;

struct LlmAgentLimits : ::testing::Test {
  std::shared_ptr<protocol::schema_registry> schemas = agent_test::test_schemas();
  prompt_library library;
  std::shared_ptr<scripted_model> model = std::make_shared<scripted_model>();
  context_holder holder;

  LlmAgentLimits() {
    library.load_directory(test_data() / "prompts");
    holder.input = boost::json::parse(R"({"request": "List the design review"})");
    for (int i = 0; i < 5; ++i) model->push_text(R"({"not": "an envelope"})");
  }
  ~LlmAgentLimits() override { holder.models = model_set{}; }

  protocol::envelope run_agent() {
    const auto a = llm_agent::from_library(library, "meeting_parser", schemas);
    auto context = holder.make();
    return run_sync(a->run(context));
  }
};

TEST_F(LlmAgentLimits, WithoutLimitsThePromptFilesAttemptsApply) {
  holder.models.add("default", model);
  const auto out = run_agent();
  ASSERT_TRUE(out.error);
  EXPECT_EQ(model->calls(), 2u);  // meeting_parser.v2.json says max_attempts 2
}

TEST_F(LlmAgentLimits, TheRunsMaxAttemptsAndModeWin) {
  holder.models.add("default", model);
  call_limits limits;
  limits.max_attempts = 1;
  limits.force_mode = output_mode::prompt_schema;
  holder.models.set_limits(limits);
  const auto out = run_agent();
  ASSERT_TRUE(out.error);
  EXPECT_NE(out.error->message.find("after 1 attempt"), std::string::npos) << out.error->message;
  ASSERT_EQ(model->calls(), 1u);
  EXPECT_EQ(model->request(0).format.type, response_format::kind::none);  // prompt_schema: no response_format
}

}  // namespace
}  // namespace switchboard::agents
