// `switchboard run` / `resume` / `agents` on a user's own workflow: a
// directory with a prompt file, a schema and a workflow file (no C++), or a
// plugin found by name, run by the built binary against the loopback model
// server, as a user would.
#include "../../cli_runner.hpp"

#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;
using switchboard::test::shell_quoted;
using switchboard::testing::loopback_model_server;
using switchboard::testing::server_action;

const fs::path host_echo_plugin = SWITCHBOARD_HOST_ECHO_PLUGIN;
const fs::path tool_plugin = SWITCHBOARD_TOOL_PLUGIN;

// The model's answer as a model writes it (confidence as "0.9", which
// Boost.JSON's serializer would write as 9E-1).
std::string envelope(json::object data, std::string_view confidence, const std::string& explanation) {
  return "{\"data\": " + json::serialize(data) + ", \"explanation\": " + json::serialize(json::string(explanation)) +
         ", \"confidence\": " + std::string(confidence) + ", \"reasoning\": \"scripted\"}";
}

std::string listing(std::string title) {
  return envelope({{"title", std::move(title)}, {"price", 250000}}, "0.9", "A house listing.");
}

class CmdRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("switchboard-run-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(flow() / "prompts");
    fs::create_directories(flow() / "schemas");
    fs::create_directories(dir_ / "state");
    fs::create_directories(dir_ / "elsewhere");
    write(flow() / "schemas" / "listing.output@1.json", R"({
      "type": "object",
      "properties": {"title": {"type": "string"}, "price": {"type": "integer", "minimum": 0}},
      "required": ["title", "price"], "additionalProperties": false})");
    write(flow() / "prompts" / "listing.v1.json", R"({
      "name": "listing", "version": 1,
      "description": "Reads a house listing out of an advertisement.",
      "output_schema": "listing.output@1",
      "system": "You read house listings.",
      "user": ["Advertisement: {{input/request}}"]})");
    write(flow() / "workflow.json", R"({
      "name": "listings",
      "schemas": ["schemas"],
      "prompts": ["prompts"],
      "nodes": {
        "read": {"type": "agent", "agent": "listing", "routes": [{"when": "otherwise", "to": "done"}]},
        "done": {"type": "end"}
      }})");
    write(dir_ / "stdin.txt", "");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path flow() const { return dir_ / "my-flow"; }
  static void write(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }
  std::string stderr_text() const {
    std::ifstream in(last_dir_ / "stderr.txt");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // `switchboard ARGS` from an unrelated directory, with the model at the
  // loopback server and nothing inherited from the developer's environment.
  switchboard::test::cli_result run(const std::string& args, const std::string& stdin_text = "",
                                    bool with_model = true, const std::string& directory = "elsewhere") {
    write(dir_ / "stdin.txt", stdin_text);
    std::string environment = switchboard::test::isolated_environment(dir_ / "state");
    if (with_model) environment += " OPENAI_BASE_URL=" + shell_quoted(server_.base_url() + "/v1") + " OPENAI_API_KEY=k SWITCHBOARD_MODEL=gpt-test";
    fs::create_directories(dir_ / directory);
    last_dir_ = dir_ / directory;
    return switchboard::test::run_switchboard(dir_ / directory, args, dir_ / "stdin.txt", false, environment);
  }
  std::string workflow() const { return shell_quoted((flow() / "workflow.json").string()); }

  static std::string describe(const switchboard::test::cli_result& r, const std::string& err) {
    return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + err;
  }

  loopback_model_server server_;
  fs::path dir_;
  fs::path last_dir_;
};

TEST_F(CmdRun, a_prompt_file_agent_with_its_own_schema_runs_with_no_cpp) {
  server_.enqueue(server_action::reply(listing("Sunny cottage")));
  const auto r = run("run " + workflow() + " --input 'Sunny cottage, 250k, two bedrooms'");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_THAT(r.out, HasSubstr("[1] listing  (confidence 0.90)"));
  EXPECT_THAT(r.out, HasSubstr("\nA house listing.\n"));
  ASSERT_EQ(server_.request_count(), 1u);
  EXPECT_THAT(json::serialize(server_.requests()[0].json()), HasSubstr("Sunny cottage, 250k, two bedrooms"));
}

TEST_F(CmdRun, agents_lists_what_a_workflow_uses) {
  const auto r = run("agents " + workflow(), "", false);
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_THAT(r.out, HasSubstr("listing"));
  EXPECT_THAT(r.out, HasSubstr("listing.output@1"));
  EXPECT_THAT(r.out, HasSubstr("prompt:" + (flow() / "prompts" / "listing.v1.json").string()));
}

TEST_F(CmdRun, a_workflow_naming_a_missing_directory_or_plugin_says_which) {
  write(flow() / "workflow.json", R"({"name": "w", "prompts": ["nowhere"],
      "nodes": {"done": {"type": "end"}}})");
  auto r = run("run " + workflow() + " --input x");
  EXPECT_EQ(r.exit_code, 1) << describe(r, stderr_text());
  EXPECT_THAT(stderr_text(), HasSubstr("workflow.json: /prompts/0: directory '" + (flow() / "nowhere").string() +
                                       "' does not exist"));
  write(flow() / "workflow.json", R"({"name": "w", "plugins": ["weather"],
      "nodes": {"done": {"type": "end"}}})");
  r = run("run " + workflow() + " --input x");
  EXPECT_EQ(r.exit_code, 1) << describe(r, stderr_text());
  EXPECT_THAT(stderr_text(), HasSubstr("workflow.json: /plugins/0: plugin 'weather' not found"));
  EXPECT_THAT(stderr_text(), HasSubstr(flow().string()));
}

TEST_F(CmdRun, a_long_input_is_text_not_a_file_name) {
  server_.enqueue(server_action::reply(listing("Long")));
  const std::string text(300, 'w');
  const auto r = run("run " + workflow() + " --input " + text);
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_THAT(json::serialize(server_.requests().at(0).json()), HasSubstr(text));
}

TEST_F(CmdRun, input_files_are_read_only_when_asked_for) {
  write(dir_ / "ad.txt", "Cottage from a file\n");
  write(dir_ / "ad.json", R"({"request": "Cottage from JSON", "source": "newspaper"})");
  server_.set_default(server_action::reply(listing("Cottage")));
  const std::string ad = (dir_ / "ad.txt").string();
  // A file name given as --input is text.
  auto r = run("run " + workflow() + " --input " + shell_quoted(ad));
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_THAT(json::serialize(server_.requests().back().json()), HasSubstr("Advertisement: " + ad));
  r = run("run " + workflow() + " --input-file " + shell_quoted(ad));
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_THAT(json::serialize(server_.requests().back().json()), HasSubstr("Advertisement: Cottage from a file"));
  r = run("run " + workflow() + " --input-file " + shell_quoted((dir_ / "ad.json").string()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_EQ(json::parse(r.out).at("input").at("source"), "newspaper");
  // Text that looks like curl's @file is still text: a user's words never
  // choose a file to send to the model.
  r = run("run " + workflow() + " --input " + shell_quoted("@" + ad));
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_THAT(json::serialize(server_.requests().back().json()), HasSubstr("Advertisement: @" + ad));
  EXPECT_THAT(json::serialize(server_.requests().back().json()), Not(HasSubstr("Cottage from a file")));
  r = run("run " + workflow() + " --input-file " + shell_quoted((dir_ / "missing.txt").string()));
  EXPECT_EQ(r.exit_code, 2) << describe(r, stderr_text());
  EXPECT_THAT(stderr_text(), HasSubstr("missing.txt' does not exist"));
}

TEST_F(CmdRun, json_output_is_one_document_even_when_warnings_are_logged) {
  // A 503 is retried: the retry is logged as a warning, on standard error.
  server_.enqueue(server_action::error(503, "overloaded"));
  server_.enqueue(server_action::reply(listing("Cottage")));
  const auto r = run("run " + workflow() + " --input cottage --json");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  boost::system::error_code ec;
  const auto state = json::parse(r.out, ec);
  ASSERT_FALSE(ec) << describe(r, stderr_text());
  EXPECT_EQ(state.at("status"), "completed");
  EXPECT_EQ(server_.request_count(), 2u);
  EXPECT_THAT(stderr_text(), HasSubstr("503"));
}

TEST_F(CmdRun, numbers_print_as_people_write_them) {
  server_.enqueue(server_action::reply(listing("Cottage")));
  const auto r = run("run " + workflow() + " --input cottage --json");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  const auto state = json::parse(r.out);
  // The state's own numbers, not the model's raw text (kept as it came).
  EXPECT_THAT(r.out, HasSubstr("\"confidence\":0.9,"));
  EXPECT_THAT(r.out, Not(HasSubstr(":9E-1")));
  EXPECT_EQ(state.at("result").at("confidence"), 0.9);
}

class CmdRunClarification : public CmdRun {
 protected:
  void SetUp() override {
    CmdRun::SetUp();
    server_.enqueue(server_action::reply(
        envelope({{"title", "?"}, {"price", 0}}, "0.4", "The advertisement has no price.")));
    server_.enqueue(server_action::reply(listing("Cottage")));
  }
};

TEST_F(CmdRunClarification, answers_come_from_standard_input_when_it_is_not_a_terminal) {
  const auto r = run("run " + workflow() + " --input 'a cottage'", "250000 euros\n");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_THAT(r.out, HasSubstr("? "));
  EXPECT_THAT(r.out, HasSubstr("The advertisement has no price."));
  EXPECT_THAT(r.out, HasSubstr("> 250000 euros   (from standard input)"));
  ASSERT_EQ(server_.request_count(), 2u);
  EXPECT_THAT(json::serialize(server_.requests()[1].json()), HasSubstr("250000 euros"));
}

TEST_F(CmdRunClarification, a_memory_store_gives_no_resume_command_that_cannot_work) {
  const auto r = run("run " + workflow() + " --input 'a cottage' --store memory");
  EXPECT_EQ(r.exit_code, 3) << describe(r, stderr_text());
  EXPECT_THAT(r.out, HasSubstr("--store memory keeps nothing"));
  EXPECT_THAT(r.out, Not(HasSubstr("switchboard resume")));
}

TEST_F(CmdRunClarification, the_printed_resume_command_works_as_printed) {
  // Relative paths on the command line; the resume runs from another directory.
  const auto paused = run("run " + workflow() + " --input 'a cottage' --prompts " +
                          shell_quoted((flow() / "prompts").string()) +
                          " --max-attempts 2 --store sqlite:runs.db --cache cache", "", true, "first");
  ASSERT_EQ(paused.exit_code, 3) << describe(paused, stderr_text());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(paused.out, m, std::regex{R"(switchboard (resume .*) --answer "\.\.\.")"}))
      << paused.out;
  const std::string command = m[1].str();
  EXPECT_THAT(command, HasSubstr("--prompts"));
  EXPECT_THAT(command, HasSubstr("--max-attempts 2"));
  EXPECT_THAT(command, HasSubstr("--store sqlite:" + (dir_ / "first" / "runs.db").string()));
  EXPECT_THAT(command, HasSubstr("--cache " + (dir_ / "first" / "cache").string()));
  const auto resumed = run(command + " --answer '250000 euros'", "", true, "second");
  ASSERT_EQ(resumed.exit_code, 0) << describe(resumed, stderr_text());
  EXPECT_THAT(resumed.out, HasSubstr("A house listing."));
}

// The resume command repeats --mcp: the prompt names a tool of the MCP
// server, so a resume without the server would refuse to load the prompt.
TEST_F(CmdRunClarification, the_printed_resume_command_starts_the_same_mcp_servers) {
  const fs::path peers = SWITCHBOARD_MCP_PEERS;
  ASSERT_TRUE(fs::exists(peers / "node_modules")) << "run scripts/test.sh (npm ci in tests/mcp_peers)";
  write(flow() / "prompts" / "listing.v1.json", R"({
      "name": "listing", "version": 1,
      "description": "Reads a house listing out of an advertisement.",
      "output_schema": "listing.output@1",
      "system": "You read house listings.",
      "user": ["Advertisement: {{input/request}}"],
      "tools": ["mcp:everything/get-sum"]})");
  const std::string server = "everything=stdio:" SWITCHBOARD_NODE " " +
                             (peers / "node_modules/@modelcontextprotocol/server-everything/dist/index.js").string() +
                             " stdio";
  const auto paused = run("run " + workflow() + " --input 'a cottage' --mcp " + shell_quoted(server), "", true, "first");
  ASSERT_EQ(paused.exit_code, 3) << describe(paused, stderr_text());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(paused.out, m, std::regex{R"(switchboard (resume .*) --answer "\.\.\.")"}))
      << paused.out;
  const std::string command = m[1].str();
  EXPECT_THAT(command, HasSubstr("--mcp " + shell_quoted(server)));
  const auto resumed = run(command + " --answer '250000 euros'", "", true, "second");
  ASSERT_EQ(resumed.exit_code, 0) << describe(resumed, stderr_text());
  EXPECT_THAT(resumed.out, HasSubstr("A house listing."));
}

TEST_F(CmdRun, a_plugin_named_in_the_workflow_gets_its_configuration) {
  write(flow() / "workflow.json", R"({
    "name": "echo",
    "plugins": [{"name": ")" + host_echo_plugin.stem().string().substr(3) + R"(",
                 "config": {"calendar": "data/calendar.db"}}],
    "nodes": {
      "echo": {"type": "agent", "agent": "host_echo", "routes": [{"when": "otherwise", "to": "done"}]},
      "done": {"type": "end"}
    }})");
  const std::string plugin_dir = shell_quoted(host_echo_plugin.parent_path().string());
  const auto r = run("run " + workflow() + " --input x --reset --json --plugin-path " + plugin_dir, "", false);
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  const auto data = json::parse(r.out).at("result").at("data");
  EXPECT_EQ(data.at("config").at("calendar"), "data/calendar.db");
  EXPECT_EQ(data.at("base_dir"), json::value(flow().string()));
  EXPECT_EQ(data.at("state_dir"), json::value((dir_ / "state").string()));
  EXPECT_EQ(data.at("reset_state"), true);
  EXPECT_EQ(data.at("model_configured"), false);
  EXPECT_EQ(data.at("workflow_id"), json::parse(r.out).at("id"));

  // Under --json the plugin's notice is a note: on standard error.
  EXPECT_THAT(stderr_text(), HasSubstr("host_echo: loaded with 1 config keys"));

  // Without --plugin-path the name is not found, and the message says where it looked.
  const auto missing = run("run " + workflow() + " --input x", "", false);
  EXPECT_EQ(missing.exit_code, 1) << describe(missing, stderr_text());
  EXPECT_THAT(stderr_text(), HasSubstr("not found as"));
}

TEST_F(CmdRun, metrics_are_written_in_prometheus_text_format) {
  server_.enqueue(server_action::reply(listing("Cottage")));
  const auto metrics = dir_ / "run.prom";
  const auto r = run("run " + workflow() + " --input cottage --metrics " + shell_quoted(metrics.string()));
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  std::ifstream in(metrics);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("# TYPE switchboard_workflows_total counter"));
  EXPECT_THAT(text.str(), HasSubstr("switchboard_workflows_total{status=\"completed\"} 1"));
  EXPECT_THAT(text.str(), HasSubstr("switchboard_agent_calls_total{agent=\"listing\",outcome=\"ok\"} 1"));
  EXPECT_THAT(text.str(), HasSubstr("switchboard_model_requests_total"));
  EXPECT_THAT(text.str(), HasSubstr("switchboard_parse_total{outcome=\"direct\"} 1"));
}

TEST_F(CmdRun, timeout_is_the_whole_wait_for_a_model_call) {
  server_.set_default(server_action::stall(std::chrono::seconds(30)));
  const auto r = run("run " + workflow() + " --input cottage --timeout 2 --max-attempts 1");
  EXPECT_EQ(r.exit_code, 1) << describe(r, stderr_text());
  // The call's deadline ended it (the server would have stalled 30 s), after
  // the one attempt allowed.
  EXPECT_THAT(stderr_text(), HasSubstr("timeout"));
  EXPECT_THAT(stderr_text(), HasSubstr("after 1 attempt"));
  EXPECT_EQ(server_.request_count(), 1u);
}

TEST_F(CmdRun, the_coordinator_sees_the_request_not_the_tool_settings) {
  write(flow() / "workflow.json", R"({
    "name": "routed", "schemas": ["schemas"], "prompts": ["prompts"],
    "nodes": {
      "route": {"type": "coordinator", "default_agent": "listing", "candidates": ["listing"],
                "routes": [{"when": "otherwise", "to": "done"}]},
      "done": {"type": "end"}
    }})");
  server_.enqueue(server_action::reply(R"({"agent_name": "listing", "additional_instructions": ""})"));
  server_.enqueue(server_action::reply(listing("Cottage")));
  const auto r = run("run " + workflow() + " --input 'a cottage'");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  ASSERT_GE(server_.request_count(), 1u);
  const std::string coordinator = server_.requests()[0].body;
  EXPECT_THAT(coordinator, HasSubstr("a cottage"));
  for (const std::string& internal : {server_.base_url(), (dir_ / "state").string(), flow().string()})
    EXPECT_THAT(coordinator, Not(HasSubstr(internal)));
}

TEST_F(CmdRun, a_cache_directory_answers_the_same_request_without_the_model) {
  server_.enqueue(server_action::reply(listing("Cottage")));
  const std::string cache = shell_quoted((dir_ / "cache").string());
  const auto first = run("run " + workflow() + " --input cottage --cache " + cache);
  ASSERT_EQ(first.exit_code, 0) << describe(first, stderr_text());
  // Nothing more is scripted: a second request to the server would fail the run.
  const auto second = run("run " + workflow() + " --input cottage --cache " + cache);
  ASSERT_EQ(second.exit_code, 0) << describe(second, stderr_text());
  EXPECT_EQ(server_.request_count(), 1u);
  EXPECT_THAT(second.out, HasSubstr("A house listing."));
}

TEST_F(CmdRun, a_prompt_file_agent_calls_a_plugins_tool) {
  write(flow() / "prompts" / "listing.v1.json", R"({
    "name": "listing", "version": 1, "description": "Reads a listing, shouting its title.",
    "output_schema": "listing.output@1", "tools": ["plugin.shout"],
    "user": ["Advertisement: {{input/request}}"]})");
  write(flow() / "workflow.json", R"({
    "name": "listings", "schemas": ["schemas"], "prompts": ["prompts"],
    "plugins": [")" + tool_plugin.string() + R"("],
    "nodes": {
      "read": {"type": "agent", "agent": "listing", "routes": [{"when": "otherwise", "to": "done"}]},
      "done": {"type": "end"}
    }})");
  server_.enqueue(server_action::tool_calls({{"call_1", "plugin.shout", R"({"text": "cottage"})"}}));
  server_.enqueue(server_action::reply(listing("COTTAGE")));
  const auto r = run("run " + workflow() + " --input 'a cottage'");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  ASSERT_EQ(server_.request_count(), 2u);
  // The tool ran, and its result went back to the model.
  EXPECT_THAT(json::serialize(server_.requests()[0].json()), HasSubstr("plugin.shout"));
  EXPECT_THAT(json::serialize(server_.requests()[1].json()), HasSubstr("COTTAGE"));
}

// A tool that needs approval: the run stops with exit 4 and the pending
// call, resume --reject tells the model, and resume --approve (in another
// process, from another directory) makes the call once.
TEST_F(CmdRun, a_tool_that_needs_approval_waits_for_resume_approve_or_reject) {
  const fs::path stamps = dir_ / "stamps.txt";
  write(flow() / "prompts" / "listing.v1.json", R"({
    "name": "listing", "version": 1, "description": "Reads a listing and stamps it.",
    "output_schema": "listing.output@1", "tools": ["plugin.stamp"],
    "user": ["Advertisement: {{input/request}}"]})");
  write(flow() / "workflow.json", R"({
    "name": "listings", "schemas": ["schemas"], "prompts": ["prompts"],
    "plugins": [{"name": ")" + tool_plugin.string() + R"(", "config": {"stamp_file": ")" + stamps.string() + R"("}}],
    "nodes": {
      "read": {"type": "agent", "agent": "listing", "routes": [{"when": "otherwise", "to": "done"}]},
      "done": {"type": "end"}
    }})");
  auto count_stamps = [&] {
    std::ifstream in(stamps);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  };
  auto id_of = [](const std::string& out) {
    const auto at = out.find("workflow id: ");
    return at == std::string::npos ? std::string{} : out.substr(at + 13, out.find('\n', at) - at - 13);
  };

  // Rejected: the model hears why, nothing is stamped.
  server_.enqueue(server_action::tool_calls({{"call_1", "plugin.stamp", R"({"text": "sold"})"}}));
  auto r = run("run " + workflow() + " --input 'a cottage'");
  ASSERT_EQ(r.exit_code, 4) << describe(r, stderr_text());
  EXPECT_THAT(r.out, HasSubstr("Waiting for your approval before acting:"));
  EXPECT_THAT(r.out, HasSubstr("listing wants to call plugin.stamp {\"text\":\"sold\"}"));
  EXPECT_THAT(r.out, HasSubstr("--approve"));
  std::string id = id_of(r.out);
  ASSERT_FALSE(id.empty()) << r.out;
  EXPECT_EQ(count_stamps(), 0);
  server_.enqueue(server_action::reply(listing("Cottage")));
  r = run("resume " + id + " --workflow " + workflow() + " --reject --reason 'not yet sold'");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_THAT(r.out, HasSubstr("called plugin.stamp {\"text\": \"sold\"}: error rejected"));
  EXPECT_EQ(count_stamps(), 0);
  ASSERT_EQ(server_.request_count(), 2u);  // the tool call was not asked for again
  EXPECT_THAT(json::serialize(server_.requests()[1].json()), HasSubstr("not yet sold"));

  // Approved, in another directory: stamped once; a second --approve is refused.
  server_.enqueue(server_action::tool_calls({{"call_1", "plugin.stamp", R"({"text": "sold"})"}}));
  r = run("run " + workflow() + " --input 'a cottage'");
  ASSERT_EQ(r.exit_code, 4) << describe(r, stderr_text());
  id = id_of(r.out);
  server_.enqueue(server_action::reply(listing("Cottage")));
  r = run("resume " + id + " --workflow " + workflow() + " --approve", "", true, "other");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  EXPECT_THAT(r.out, HasSubstr("called plugin.stamp {\"text\": \"sold\"}: ok"));
  EXPECT_EQ(count_stamps(), 1);
  r = run("resume " + id + " --workflow " + workflow() + " --approve");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_stamps(), 1);

  // A paused run resumed without a decision stays paused (exit 4), and
  // --reason without --reject is a usage error.
  server_.enqueue(server_action::tool_calls({{"call_1", "plugin.stamp", R"({"text": "sold"})"}}));
  r = run("run " + workflow() + " --input 'a cottage'");
  ASSERT_EQ(r.exit_code, 4) << describe(r, stderr_text());
  id = id_of(r.out);
  r = run("resume " + id + " --workflow " + workflow());
  EXPECT_EQ(r.exit_code, 4) << describe(r, stderr_text());
  EXPECT_THAT(stderr_text(), HasSubstr("--approve or --reject"));
  r = run("resume " + id + " --workflow " + workflow() + " --approve --reason x");
  EXPECT_EQ(r.exit_code, 2) << describe(r, stderr_text());
  EXPECT_EQ(count_stamps(), 0 + 1);
}

TEST_F(CmdRun, a_prompt_naming_a_tool_nobody_brought_is_refused_by_name) {
  write(flow() / "prompts" / "listing.v1.json", R"({
    "name": "listing", "version": 1, "description": "Reads a listing.",
    "output_schema": "listing.output@1", "tools": ["calendar.lookup"],
    "user": ["Advertisement: {{input/request}}"]})");
  const auto r = run("run " + workflow() + " --input 'a cottage'");
  EXPECT_EQ(r.exit_code, 1) << describe(r, stderr_text());
  EXPECT_THAT(stderr_text(), HasSubstr("calendar.lookup"));
  EXPECT_THAT(stderr_text(), HasSubstr("listing.v1.json"));
  EXPECT_EQ(server_.request_count(), 0u);
}

TEST_F(CmdRun, usage_errors_name_the_problem) {
  auto r = run("run " + workflow());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(stderr_text(), HasSubstr("missing --input TEXT or --input-file FILE"));
  r = run("run " + workflow() + " --input a --input-file b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(stderr_text(), HasSubstr("not both"));
  r = run("run " + workflow() + " --input a --plugin-path /nonexistent/plugins");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(stderr_text(), HasSubstr("plugin search directory '/nonexistent/plugins' does not exist"));
  r = run("run /nonexistent/workflow.json --input a");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(stderr_text(), HasSubstr("/nonexistent/workflow.json"));
  r = run("run " + workflow() + " --input a --plugin /nonexistent/libx.so");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(stderr_text(), HasSubstr("plugin file '/nonexistent/libx.so' does not exist"));
  r = run("run " + workflow() + " --input a --input-field region");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(stderr_text(), HasSubstr("--input-field expects KEY=VALUE, got 'region'"));
  r = run("run " + workflow() + " --input a --input-field request=b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(stderr_text(), HasSubstr("the request is given with --input or --input-file"));
  r = run("run " + workflow() + " --input a --now 2026-03-09T08:00");  // the sample's option is gone
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(stderr_text(), HasSubstr("unknown option '--now'"));
}

// --input-field sets a field of the input the agents read, over the input
// file's, and the run keeps it: a resume answers the same input.
TEST_F(CmdRun, input_fields_join_the_request_in_the_input) {
  write(flow() / "prompts" / "listing.v1.json", R"json({
      "name": "listing", "version": 1,
      "description": "Reads a house listing out of an advertisement.",
      "output_schema": "listing.output@1",
      "system": "You read house listings.",
      "user": ["Advertisement: {{input/request}} (region {{input/region}})"]})json");
  write(dir_ / "request.json", R"({"request": "Sunny cottage", "region": "south"})");
  server_.enqueue(server_action::reply(listing("Sunny cottage")));
  const auto r = run("run " + workflow() + " --input-file " + shell_quoted((dir_ / "request.json").string()) +
                     " --input-field region=north --input-field 'note=a b' --json");
  ASSERT_EQ(r.exit_code, 0) << describe(r, stderr_text());
  ASSERT_EQ(server_.request_count(), 1u);
  EXPECT_THAT(json::serialize(server_.requests()[0].json()), HasSubstr("Sunny cottage (region north)"));
  const auto state = json::parse(r.out);
  EXPECT_EQ(state.at("input").at("note"), "a b");
}

TEST_F(CmdRun, a_store_url_that_names_no_store_is_named) {
  const auto r = run("run " + workflow() + " --input a --store mysql://db/runs", "", false);
  EXPECT_EQ(r.exit_code, 1) << describe(r, stderr_text());
  EXPECT_THAT(stderr_text(), HasSubstr("unknown checkpoint store 'mysql://db/runs'"));
}

// A postgres URL reaches the PostgreSQL store; with nobody listening, the
// message names the server and never the password.
TEST_F(CmdRun, a_postgres_store_that_cannot_be_reached_is_named_without_its_password) {
  const auto r = run("run " + workflow() +
                         " --input a --store 'postgresql://app:s3cret@127.0.0.1:1/runs?connect_timeout=5'",
                     "", false);
  EXPECT_EQ(r.exit_code, 1) << describe(r, stderr_text());
  EXPECT_THAT(stderr_text(), HasSubstr("PostgreSQL checkpoint store (at 127.0.0.1 port 1, database 'runs'"));
  EXPECT_THAT(stderr_text(), HasSubstr("Connection refused"));
  EXPECT_THAT(stderr_text() + r.out, Not(HasSubstr("s3cret")));
}

TEST_F(CmdRun, help_names_every_exit_code_of_run_and_resume) {
  for (const char* command : {"--help", "run --help", "resume --help"}) {
    const auto r = run(command, "", false);
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_THAT(r.out, HasSubstr("3 paused for clarification")) << command;
    EXPECT_THAT(r.out, HasSubstr("4 awaiting approval of tool calls")) << command;
    EXPECT_THAT(r.out, HasSubstr("128+N interrupted by signal N")) << command;
  }
}

TEST_F(CmdRun, help_names_the_opentelemetry_variables_of_run_resume_and_serve) {
  for (const char* command : {"run --help", "resume --help", "serve --help"}) {
    const auto r = run(command, "", false);
    EXPECT_EQ(r.exit_code, 0) << command;
    for (const char* variable : {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SERVICE_NAME",
                                 "OTEL_TRACES_SAMPLER", "OTEL_SDK_DISABLED",
                                 "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"})
      EXPECT_THAT(r.out, HasSubstr(variable)) << command;
    EXPECT_THAT(r.out, HasSubstr("traceparent")) << command;
  }
  const auto top = run("--help", "", false);
  EXPECT_THAT(top.out, HasSubstr("OTEL_EXPORTER_OTLP_ENDPOINT"));
}

TEST_F(CmdRun, model_options_without_a_model_are_named_not_silently_ignored) {
  write(flow() / "workflow.json", R"({"name": "w", "nodes": {"done": {"type": "end"}}})");
  const auto r = run("run " + workflow() + " --input a --timeout 5", "", false);
  EXPECT_THAT(stderr_text(), HasSubstr("no model is configured"));
  EXPECT_THAT(stderr_text(), HasSubstr("have no effect"));
}

}  // namespace
