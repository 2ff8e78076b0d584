// `switchboard ask`: runs the built binary against a loopback model server,
// as a user would against a provider.
#include "../cli_runner.hpp"

#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::HasSubstr;
using switchboard::test::shell_quoted;
using switchboard::testing::loopback_model_server;
using switchboard::testing::server_action;

namespace {

class CmdAsk : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("switchboard-ask-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "schemas");
    write("schemas/meeting@1.json", R"({"type": "object",
        "properties": {"title": {"type": "string"}, "slots": {"type": "array", "items": {"type": "integer"}}},
        "required": ["title"], "additionalProperties": false})");
    write("stdin.txt", "");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  std::string stderr_text() const {
    std::ifstream in(dir_ / "stderr.txt");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // `switchboard ask` against the loopback server, with no API key or model
  // settings inherited from the environment.
  switchboard::test::cli_result ask(const std::string& args) {
    const std::string environment = switchboard::test::isolated_environment(dir_);
    const std::string base = "--base-url " + shell_quoted(server_.base_url() + "/v1") + " --model gpt-test ";
    return switchboard::test::run_switchboard(dir_, "ask " + base + args, dir_ / "stdin.txt", false, environment);
  }

  loopback_model_server server_;
  fs::path dir_;
};

}  // namespace

TEST_F(CmdAsk, ValidAnswerExitsZeroWithValueAttemptsAndUsage) {
  server_.enqueue(server_action::reply(R"({"title": "sync", "slots": [9]})"));
  const auto r = ask("--schema meeting@1 'Plan a sync meeting'");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  const json::value out = json::parse(r.out);
  EXPECT_EQ(out.at("ok"), true);
  EXPECT_EQ(out.at("schema"), "meeting@1");
  EXPECT_EQ(out.at("provider"), "openai");
  EXPECT_EQ(out.at("mode"), "json_schema");
  EXPECT_EQ(out.at("value"), json::parse(R"({"title": "sync", "slots": [9]})"));
  EXPECT_EQ(out.at("attempts").as_array().size(), 1u);
  EXPECT_EQ(out.at("usage").at("total_tokens"), 18);  // the server's 11 + 7

  // What went over the wire: the prompt, the model, the schema as response_format.
  ASSERT_EQ(server_.request_count(), 1u);
  const json::value sent = server_.requests().at(0).json();
  EXPECT_EQ(sent.at("model"), "gpt-test");
  EXPECT_EQ(sent.at("messages").at(0).at("content"), "Plan a sync meeting");
  EXPECT_EQ(sent.at("response_format").at("type"), "json_schema");
  EXPECT_EQ(sent.at("response_format").at("json_schema").at("name"), "meeting_1");
  EXPECT_TRUE(server_.requests().at(0).header("Authorization").empty());
}

TEST_F(CmdAsk, InvalidAnswerIsReAskedWithTheValidatorsErrors) {
  server_.enqueue(server_action::reply(R"({"slots": ["nine"]})"));
  server_.enqueue(server_action::reply(R"({"title": "sync"})"));
  const auto r = ask("--schema schemas/meeting@1.json 'Plan a sync meeting'");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  const json::value out = json::parse(r.out);
  const auto& attempts = out.at("attempts").as_array();
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts.at(0).at("reason"), "schema_missing_field");
  EXPECT_EQ(attempts.at(1).at("reason"), "");
  ASSERT_EQ(server_.request_count(), 2u);
  const json::value second = server_.requests().at(1).json();
  const auto& messages = second.at("messages").as_array();
  EXPECT_THAT(std::string(messages.back().at("content").as_string()), HasSubstr("title"));
}

TEST_F(CmdAsk, NoValidAnswerExitsOneNamingTheReason) {
  server_.set_default(server_action::reply("I would rather talk about the weather."));
  const auto r = ask("--schema meeting@1 --max-attempts 2 'Plan a sync meeting'");
  EXPECT_EQ(r.exit_code, 1) << r.out << stderr_text();
  const json::value out = json::parse(r.out);
  EXPECT_EQ(out.at("ok"), false);
  EXPECT_EQ(out.at("error"), "structured_output_failed");
  EXPECT_EQ(out.at("schema"), "meeting@1");
  EXPECT_FALSE(out.at("last_reason").as_string().empty());
  EXPECT_EQ(out.at("attempts").as_array().size(), 2u);
  EXPECT_EQ(server_.request_count(), 2u);
  // The warning is logged on standard error; standard output stays one JSON value.
  EXPECT_THAT(stderr_text(), HasSubstr("no valid answer after 2 attempts"));
}

TEST_F(CmdAsk, ProviderErrorExitsOneWithStatusAndMessage) {
  server_.set_default(server_action::error(400, "model 'gpt-test' does not exist"));
  const auto r = ask("--schema meeting@1 'Plan a sync meeting'");
  EXPECT_EQ(r.exit_code, 1) << r.out << stderr_text();
  const json::value out = json::parse(r.out);
  EXPECT_EQ(out.at("ok"), false);
  EXPECT_EQ(out.at("http_status"), 400);
  EXPECT_EQ(out.at("provider_message"), "model 'gpt-test' does not exist");
}

TEST_F(CmdAsk, PromptSchemaModePutsTheSchemaInThePrompt) {
  server_.enqueue(server_action::fenced_json(R"({"title": "sync"})"));
  const auto r = ask("--schema meeting@1 --mode prompt_schema 'Plan a sync meeting'");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  EXPECT_EQ(json::parse(r.out).at("mode"), "prompt_schema");
  const json::value sent = server_.requests().at(0).json();
  EXPECT_FALSE(sent.as_object().contains("response_format"));
  EXPECT_THAT(std::string(sent.at("messages").at(0).at("content").as_string()),
              AllOf(HasSubstr("Plan a sync meeting"), HasSubstr("\"required\"")));
}

TEST_F(CmdAsk, UsageErrorsExitTwoAndNameTheProblem) {
  struct bad_call {
    std::string args;
    std::string says;
  };
  for (const auto& [args, says] : {bad_call{"'no schema given'", "--schema is required"},
                                   bad_call{"--schema meeting@1", "exactly one PROMPT"},
                                   bad_call{"--schema meeting@1 --max-attempts 0 'x'", "--max-attempts"},
                                   bad_call{"--schema meeting@1 --mode fancy 'x'", "option '--mode' must be json_schema, json_object or prompt_schema, got 'fancy'"},
                                   bad_call{"--schema meeting@1 --bogus 'x'", "unknown option '--bogus'"},
                                   bad_call{"--schema nosuch@1 'x'", "nosuch"}}) {
    const auto r = ask(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_THAT(stderr_text(), HasSubstr(says)) << args;
  }
  EXPECT_EQ(server_.request_count(), 0u);
}

// A hostile model: its text reaches standard output only as exact JSON
// (parsing back to the same string) in a terminal-safe form, and the
// retry warning that quotes the provider's message stays one escaped line.
TEST_F(CmdAsk, HostileModelTextIsExactInJsonAndEscapedInTheLog) {
  using switchboard::test::find_raw_control;
  using switchboard::test::hostile_text;
  server_.enqueue(server_action::error(503, hostile_text));
  server_.enqueue(server_action::reply(json::serialize(json::object{{"title", hostile_text}})));
  const auto r = ask("--schema meeting@1 'Plan a sync meeting'");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  EXPECT_EQ(find_raw_control(r.out), "") << r.out;
  EXPECT_EQ(std::string(json::parse(r.out).at("value").at("title").as_string()), hostile_text);

  const std::string log = stderr_text();
  EXPECT_EQ(find_raw_control(log), "") << log;
  EXPECT_FALSE(switchboard::test::has_line_starting_with(log, switchboard::test::forged_record)) << log;
  EXPECT_NE(log.find("\\x1b[2J\\x1b]0;pwned\\x07"), std::string::npos) << log;
  EXPECT_NE(log.find("retrying"), std::string::npos) << log;
}

TEST_F(CmdAsk, HostileProviderErrorIsExactInJson) {
  server_.set_default(server_action::error(400, switchboard::test::hostile_text));
  const auto r = ask("--schema meeting@1 'Plan a sync meeting'");
  EXPECT_EQ(r.exit_code, 1) << r.out << stderr_text();
  EXPECT_EQ(switchboard::test::find_raw_control(r.out), "") << r.out;
  const json::value out = json::parse(r.out);
  EXPECT_EQ(std::string(out.at("provider_message").as_string()), switchboard::test::hostile_text);
  EXPECT_EQ(switchboard::test::find_raw_control(stderr_text()), "") << stderr_text();
}
