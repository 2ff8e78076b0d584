// `switchboard run --stream`: an agent's model text printed as it arrives,
// escaped for the terminal, on standard output — or on standard error with
// --json, so that standard output stays one JSON document. Run by the built
// binary against the loopback model server, answering with an event stream.
#include "../../cli_runner.hpp"

#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/json/parse.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;
using switchboard::test::shell_quoted;
using switchboard::testing::loopback_model_server;
using switchboard::testing::server_action;

// The explanation carries an escape sequence: it must never reach the terminal raw.
const std::string answer =
    R"({"data": {"title": "Sunny cottage", "price": 250000}, "explanation": "A listing \u001b[31mred\u001b[0m.",)"
    R"( "confidence": 0.9, "reasoning": "streamed"})";

class CmdRunStream : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("switchboard-run-stream-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "flow" / "prompts");
    fs::create_directories(dir_ / "flow" / "schemas");
    fs::create_directories(dir_ / "state");
    write(dir_ / "flow" / "schemas" / "listing.output@1.json", R"({
      "type": "object", "properties": {"title": {"type": "string"}, "price": {"type": "integer"}},
      "required": ["title", "price"]})");
    write(dir_ / "flow" / "prompts" / "listing.v1.json", R"({
      "name": "listing", "version": 1, "description": "Reads a listing.", "output_schema": "listing.output@1",
      "system": "You read house listings.", "user": "Advertisement: {{input/request}}"})");
    write(dir_ / "flow" / "workflow.json", R"({"name": "listings", "schemas": ["schemas"], "prompts": ["prompts"],
      "nodes": {"read": {"type": "agent", "agent": "listing", "routes": [{"when": "otherwise", "to": "done"}]},
                "done": {"type": "end"}}})");
    write(dir_ / "stdin.txt", "");
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void write(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }
  std::string stderr_text() const {
    std::ifstream in(dir_ / "stderr.txt");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  switchboard::test::cli_result run(const std::string& args) {
    const std::string environment =
        switchboard::test::isolated_environment(dir_ / "state") + " OPENAI_BASE_URL=" + shell_quoted(server_.base_url() + "/v1") + " OPENAI_API_KEY=k SWITCHBOARD_MODEL=gpt-test";
    return switchboard::test::run_switchboard(dir_, "run " + shell_quoted((dir_ / "flow" / "workflow.json").string()) +
                                                        " --input cottage --store memory " + args,
                                              dir_ / "stdin.txt", false, environment);
  }

  loopback_model_server server_;
  fs::path dir_;
};

TEST_F(CmdRunStream, the_agents_text_is_printed_as_it_arrives_escaped) {
  server_.enqueue(server_action::reply(answer).streamed().with_delta_bytes(6));
  const auto r = run("--stream");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  ASSERT_EQ(server_.request_count(), 1u);
  EXPECT_EQ(server_.requests()[0].json().at("stream"), true);
  EXPECT_THAT(r.out, HasSubstr("  ~ listing: {\"data\": {\"title\": \"Sunny cottage\""));
  EXPECT_THAT(r.out, HasSubstr("[1] listing  (confidence 0.90)"));
  EXPECT_THAT(r.out, Not(HasSubstr("\x1b[31m")));  // neither the stream nor the summary prints it raw
  // The streamed line ends before the step's own line.
  EXPECT_LT(r.out.find("  ~ listing:"), r.out.find("[1] listing"));
}

TEST_F(CmdRunStream, with_json_the_stream_goes_to_standard_error) {
  server_.enqueue(server_action::reply(answer).streamed());
  const auto r = run("--stream --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  boost::system::error_code ec;
  const auto state = json::parse(r.out, ec);
  ASSERT_FALSE(ec) << r.out;
  EXPECT_EQ(state.at("status"), "completed");
  EXPECT_THAT(stderr_text(), HasSubstr("  ~ listing: {\"data\""));
}

TEST_F(CmdRunStream, without_the_option_nothing_is_streamed) {
  server_.enqueue(server_action::reply(answer));
  const auto r = run("");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  EXPECT_FALSE(server_.requests()[0].json().as_object().contains("stream"));
  EXPECT_THAT(r.out, Not(HasSubstr("  ~ listing:")));
}

}  // namespace
