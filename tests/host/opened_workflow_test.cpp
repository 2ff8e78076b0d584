// open_workflow and load_agents: a workflow directory opened as a host
// opens it, and every error names the file, the key or the directory that
// was wrong. awaited_by and resume_options_for: what continuing a stored
// run needs.
#include <switchboard/host/opened_workflow.hpp>

#include <switchboard/host/error.hpp>
#include <switchboard/host/store.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace switchboard::host {
namespace {

namespace fs = std::filesystem;
namespace orch = switchboard::orchestrator;
using ::testing::HasSubstr;

// A workflow directory with one prompt-file agent and its schema.
class open_workflow_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sb-host-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    for (const char* name : {"OPENAI_BASE_URL", "OPENAI_API_KEY", "SWITCHBOARD_PROVIDER", "SWITCHBOARD_SCHEMA_PATH",
                             "SWITCHBOARD_PLUGIN_PATH", "SWITCHBOARD_PROMPT_PATH"})
      ::unsetenv(name);
    fs::create_directories(flow() / "schemas");
    fs::create_directories(flow() / "prompts");
    write(flow() / "schemas" / "listing.output@1.json",
          R"({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]})");
    write(flow() / "prompts" / "listing.v1.json", R"({
      "name": "listing", "version": 1, "description": "Reads a listing.",
      "output_schema": "listing.output@1", "system": "You read listings.", "user": ["{{input/request}}"]})");
    write_workflow(R"("schemas": ["schemas"], "prompts": ["prompts"])");
    settings_.workflow_file = flow() / "workflow.json";
    settings_.loader.state_dir = dir_ / "state";  // not the user's own
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path flow() const { return dir_ / "flow"; }
  static void write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }
  void write_workflow(const std::string& directories) {
    write(flow() / "workflow.json", R"({"name": "listings", )" + directories + R"(,
      "nodes": {"read": {"type": "agent", "agent": "listing", "routes": [{"when": "otherwise", "to": "done"}]},
                "done": {"type": "end"}}})");
  }

  // The host_error opening the workflow ends in.
  host_error refusal() {
    try {
      open_workflow(settings_, nullptr);
    } catch (const host_error& e) {
      return e;
    }
    ADD_FAILURE() << "opened";
    return host_error(host_errc::bad_store_url, "(opened)");
  }

  fs::path dir_;
  workflow_settings settings_;
};

TEST_F(open_workflow_test, opens_the_agents_the_file_names_and_keeps_the_store) {
  const auto store = open_store("memory");
  const auto opened = open_workflow(settings_, store);
  ASSERT_NE(opened.workflow, nullptr);
  EXPECT_NE(opened.agents.registry->find("listing"), nullptr);
  EXPECT_EQ(opened.model.model, nullptr);  // no model configured
  EXPECT_EQ(opened.hub_options().store, store);
  EXPECT_EQ(opened.metrics_sources().size(), 1u);  // the parser's counts
}

TEST_F(open_workflow_test, a_missing_workflow_file_is_named) {
  settings_.workflow_file = flow() / "nothing.json";
  const auto e = refusal();
  EXPECT_EQ(e.code(), host_errc::missing_path);
  EXPECT_THAT(e.what(), HasSubstr("workflow file '" + (flow() / "nothing.json").string() + "' does not exist"));
}

TEST_F(open_workflow_test, a_directory_the_file_names_that_is_missing_names_the_file_and_the_key) {
  write_workflow(R"("schemas": ["schemas"], "prompts": ["prompts", "more-prompts"])");
  const auto e = refusal();
  EXPECT_EQ(e.code(), host_errc::bad_workflow);
  EXPECT_THAT(e.what(), HasSubstr((flow() / "workflow.json").string() + ": /prompts/1: directory '" +
                                  (flow() / "more-prompts").string() + "' does not exist"));
}

TEST_F(open_workflow_test, a_plugin_the_file_names_that_is_missing_names_the_file_and_the_entry) {
  write_workflow(R"("schemas": ["schemas"], "prompts": ["prompts"], "plugins": [{"name": "no_such_plugin"}])");
  const auto e = refusal();
  EXPECT_EQ(e.code(), host_errc::bad_workflow);
  EXPECT_THAT(e.what(), HasSubstr((flow() / "workflow.json").string() + ": /plugins/0: "));
  EXPECT_THAT(e.what(), HasSubstr("no_such_plugin"));
}

TEST_F(open_workflow_test, a_directory_or_file_the_settings_name_that_is_missing_is_named) {
  settings_.loader.schema_dirs = {dir_ / "no-schemas"};
  auto e = refusal();
  EXPECT_EQ(e.code(), host_errc::missing_path);
  EXPECT_THAT(e.what(), HasSubstr("schema directory '" + (dir_ / "no-schemas").string() + "' does not exist"));

  settings_.loader.schema_dirs.clear();
  settings_.loader.plugins = {dir_ / "libnothing.so"};
  e = refusal();
  EXPECT_EQ(e.code(), host_errc::missing_path);
  EXPECT_THAT(e.what(), HasSubstr("plugin file '" + (dir_ / "libnothing.so").string() + "' does not exist"));
}

TEST_F(open_workflow_test, a_file_that_is_not_a_workflow_is_named) {
  write(flow() / "workflow.json", "{\"name\": ");
  try {
    open_workflow(settings_, nullptr);
    ADD_FAILURE() << "opened";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr((flow() / "workflow.json").string()));
  }
}

orch::workflow_state state_with(orch::workflow_status status, bool question, bool calls) {
  orch::workflow_state state;
  state.status = status;
  state.step = 4;
  if (question) {
    state.clarification.emplace();
    state.clarification->question = "When?";
  }
  if (calls) state.approval.emplace().node = "read";
  return state;
}

TEST(awaited_by, names_what_a_stored_run_waits_for) {
  using enum orch::workflow_status;
  EXPECT_EQ(awaited_by(state_with(awaiting_clarification, true, false)), awaited_input::answer);
  EXPECT_EQ(awaited_by(state_with(awaiting_approval, false, true)), awaited_input::decision);
  // Interrupted while a decision or an answer was pending: still awaited (the answer may be left out).
  EXPECT_EQ(awaited_by(state_with(interrupted, false, true)), awaited_input::decision);
  EXPECT_EQ(awaited_by(state_with(interrupted, true, false)), awaited_input::optional_answer);
  EXPECT_EQ(awaited_by(state_with(interrupted, false, false)), awaited_input::none);
  EXPECT_EQ(awaited_by(state_with(completed, false, false)), awaited_input::none);
}

TEST(resume_options_for, holds_the_run_to_the_step_and_the_calls_the_caller_saw) {
  using enum orch::workflow_status;
  const auto paused = resume_options_for(state_with(awaiting_clarification, true, false));
  EXPECT_EQ(paused.expected_step, 4);
  EXPECT_FALSE(paused.expected_calls);
  const auto state = state_with(awaiting_approval, false, true);
  const auto waiting = resume_options_for(state);
  EXPECT_EQ(waiting.expected_step, 4);
  EXPECT_EQ(waiting.expected_calls, state.approval->calls_key());
}

}  // namespace
}  // namespace switchboard::host
