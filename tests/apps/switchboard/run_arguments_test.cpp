// take_run_option and resume_arguments: the resume command `run` prints
// repeats every option that decides what the resume loads, and only those.
#include "run_arguments.hpp"

#include "command.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace switchboard::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

run_settings parse(const std::vector<std::string>& args) {
  run_settings out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!take_run_option(args, i, out)) throw usage_error("not a run option: " + args[i]);
  }
  return out;
}

// What a resume given `words` (after "resume ID --workflow FILE") would load.
run_settings parse_resume(const std::vector<std::string>& words) {
  EXPECT_GE(words.size(), 4u);
  EXPECT_EQ(words[0], "resume");
  EXPECT_EQ(words[2], "--workflow");
  run_settings out = parse(std::vector<std::string>(words.begin() + 4, words.end()));
  out.workflow.workflow_file = words[3];
  return out;
}

std::vector<std::string> names_of(const std::vector<mcp::server_config>& servers) {
  std::vector<std::string> out;
  for (const auto& s : servers) out.push_back(s.name);
  return out;
}

TEST(resume_arguments, repeat_the_loader_the_model_the_mcp_servers_and_the_store) {
  auto settings = parse({"--schemas", "/s", "--plugin", "/p.so", "--plugin-path", "/pp", "--prompts", "/pr",
                         "--mcp", "files=stdio:node /srv/files.js --root /data", "--mcp", "web=https://mcp.example/mcp",
                         "--model", "m", "--timeout", "5", "--store", "sqlite:/runs.db"});
  settings.workflow.workflow_file = "/flow/workflow.json";
  const auto words = resume_arguments("wf-1", settings);
  EXPECT_EQ(words[1], "wf-1");
  const auto again = parse_resume(words);

  EXPECT_EQ(again.workflow.workflow_file, "/flow/workflow.json");
  EXPECT_EQ(again.workflow.loader.schema_dirs, settings.workflow.loader.schema_dirs);
  EXPECT_EQ(again.workflow.loader.plugins, settings.workflow.loader.plugins);
  EXPECT_EQ(again.workflow.loader.plugin_dirs, settings.workflow.loader.plugin_dirs);
  EXPECT_EQ(again.workflow.loader.prompt_dirs, settings.workflow.loader.prompt_dirs);
  ASSERT_THAT(names_of(again.workflow.loader.mcp_servers), ElementsAre("files", "web"));
  EXPECT_THAT(again.workflow.loader.mcp_servers[0].command,
              ElementsAre("node", "/srv/files.js", "--root", "/data"));
  EXPECT_EQ(again.workflow.loader.mcp_servers[1].url, "https://mcp.example/mcp");
  EXPECT_EQ(again.workflow.model.model, "m");
  EXPECT_EQ(again.workflow.model.timeout, std::chrono::seconds(5));
  EXPECT_EQ(again.store_url, "sqlite:/runs.db");
}

TEST(resume_arguments, leave_out_what_belongs_to_this_invocation_only) {
  auto settings = parse({"--json", "--verbose", "--stream", "--metrics", "m.prom"});
  settings.workflow.workflow_file = "/flow/workflow.json";
  settings.workflow.loader.reset_state = true;  // --reset: restoring a seed twice would lose what the run did
  EXPECT_THAT(resume_arguments("wf-1", settings), ElementsAre("resume", "wf-1", "--workflow", "/flow/workflow.json"));
}

TEST(take_run_option, makes_relative_paths_absolute_for_a_command_printed_for_later) {
  const auto settings = parse({"--store", "sqlite:runs.db", "--schemas", "schemas", "--cache", "cache"});
  EXPECT_TRUE(settings.store_url.starts_with("sqlite:/")) << settings.store_url;
  EXPECT_TRUE(settings.workflow.loader.schema_dirs.at(0).is_absolute());
  EXPECT_TRUE(settings.workflow.model.cache_dir.is_absolute());
}

TEST(shell_command, quotes_only_the_words_that_need_it) {
  EXPECT_EQ(shell_command({"switchboard", "resume", "wf-1", "--mcp", "files=stdio:node /srv/it's.js"}),
            "switchboard resume wf-1 --mcp 'files=stdio:node /srv/it'\\''s.js'");
}

}  // namespace
}  // namespace switchboard::cli
