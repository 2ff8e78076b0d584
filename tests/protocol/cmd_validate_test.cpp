// `switchboard validate`: runs the built binary as a user would.
#include "../cli_runner.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::HasSubstr;

namespace {

using switchboard::test::shell_quoted;

class CmdValidate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("switchboard-cli-" + std::string(::testing::UnitTest::GetInstance()
                                                 ->current_test_info()->name()) +
            "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "schemas");
    schema_file_ = write("schemas/meeting@1.json", R"({"type": "object",
        "properties": {"title": {"type": "string"}, "slots": {"type": "array",
        "items": {"type": "integer"}}}, "required": ["title"]})");
    write("schemas/meeting@2.json", R"({"type": "object", "required": ["title", "room"]})");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path file = dir_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
  }

  // Runs `switchboard validate <args>` with `stdin_text` on standard input.
  switchboard::test::cli_result run(const std::string& args, const std::string& stdin_text = "") {
    return switchboard::test::run_switchboard(dir_, "validate " + args, write("stdin.txt", stdin_text));
  }

  fs::path dir_;
  std::string schema_file_;
};

}  // namespace

TEST_F(CmdValidate, ValidAnswerFromStdinExitsZero) {
  const auto r = run("--schema " + shell_quoted(schema_file_),
                     "Sure:\n```json\n{\"title\": \"sync\", \"slots\": [9]}\n```");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const json::value j = json::parse(r.out);
  EXPECT_EQ(j.at("ok"), true);
  EXPECT_EQ(j.at("stage"), "extracted");
  EXPECT_TRUE(j.at("reason").is_null());
  EXPECT_TRUE(j.at("errors").as_array().empty());
  EXPECT_EQ(j.at("value").at("title"), "sync");
  EXPECT_TRUE(j.at("repairs").is_array());
}

TEST_F(CmdValidate, InvalidAnswerExitsOneWithReasonAndErrors) {
  const std::string input = write("answer.txt", R"({"title": "sync", "slots": ["9"]})");
  const auto r = run("--schema " + shell_quoted(schema_file_) + " --input " + shell_quoted(input));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const json::value j = json::parse(r.out);
  EXPECT_EQ(j.at("ok"), false);
  EXPECT_EQ(j.at("reason"), "schema_type_error");
  EXPECT_EQ(j.at("errors").at(0).at("path"), "/slots/0");
}

TEST_F(CmdValidate, RepairedAnswerListsItsRepairs) {
  const auto r = run("--schema " + shell_quoted(schema_file_), R"({"title": "sync", "slots": [1, 2,]})");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const json::value j = json::parse(r.out);
  EXPECT_EQ(j.at("stage"), "repaired");
  EXPECT_EQ(j.at("repairs").at(0), "removed trailing comma at offset 32");
}

TEST_F(CmdValidate, EmptyAndNonJsonAnswersExitOne) {
  auto r = run("--schema " + shell_quoted(schema_file_), "");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(json::parse(r.out).at("reason"), "empty_output");
  r = run("--schema " + shell_quoted(schema_file_), "no json here");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(json::parse(r.out).at("reason"), "invalid_json");
}

TEST_F(CmdValidate, NamesAreLookedUpInSchemaDirectories) {
  // Newest version by name: meeting@2 requires "room".
  auto r = run("--schema meeting --schemas schemas", R"({"title": "t"})");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(json::parse(r.out).at("errors").at(0).at("path"), "/room");
  r = run("--schema meeting@1 --schemas schemas", R"({"title": "t"})");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // ./schemas is the default directory.
  r = run("--schema meeting@1", R"({"title": "t"})");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST_F(CmdValidate, EnvelopeModeWrapsTheSchema) {
  auto r = run("--schema meeting@1 --envelope",
               R"({"data": {"title": "t"}, "explanation": "e", "confidence": 0.7, "reasoning": "r"})");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = run("--schema meeting@1 --envelope", R"({"data": {"title": 5}, "explanation": "e",
                                               "confidence": 0.7, "reasoning": "r"})");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(json::parse(r.out).at("errors").at(0).at("path"), "/data/title");
}

TEST_F(CmdValidate, UsageErrorsExitTwoAndNameTheProblem) {
  auto r = run("--schema " + shell_quoted(schema_file_) + " --bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("unknown option '--bogus'"));

  r = run("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--schema is required"));

  r = run("--schema");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("needs a value"));

  r = run("--schema missing/schema.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("schema file 'missing/schema.json' does not exist"));

  r = run("--schema " + shell_quoted(schema_file_) + " --input nowhere.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("input file 'nowhere.txt'"));

  r = run("--schema meeting@9 --schemas schemas");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("unknown schema 'meeting@9'"));

  r = run("--schema meeting --schemas no-such-dir");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("no-such-dir"));

  const std::string broken = write("broken.json", "{not json");
  r = run("--schema " + shell_quoted(broken));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr(broken));
}

TEST_F(CmdValidate, BrokenFileInSchemaDirectoryIsNamed) {
  write("schemas/bad@1.json", "[");
  const auto r = run("--schema meeting --schemas schemas");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("schema file 'schemas/bad@1.json' is not valid JSON"));
}

TEST_F(CmdValidate, HelpExitsZero) {
  const auto r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("usage: switchboard validate"));
}

// A hostile raw answer (escape sequences, bidi, invalid UTF-8): the report
// quotes it only in terminal-safe JSON that parses back to the same value.
TEST_F(CmdValidate, HostileAnswerIsReportedInTerminalSafeJson) {
  const json::value answer = {{"title", switchboard::test::hostile_text}};
  const auto valid = run("--schema " + shell_quoted(schema_file_), "Here:\n" + json::serialize(answer));
  EXPECT_EQ(valid.exit_code, 0) << valid.out;
  EXPECT_EQ(switchboard::test::find_raw_control(valid.out), "") << valid.out;
  EXPECT_EQ(json::parse(valid.out).at("value"), answer);

  const auto garbage = run("--schema " + shell_quoted(schema_file_),
                           switchboard::test::hostile_text + " \xff\xfe not JSON \xe2\x80\xae");
  EXPECT_EQ(garbage.exit_code, 1) << garbage.out;
  EXPECT_EQ(switchboard::test::find_raw_control(garbage.out), "") << garbage.out;
  EXPECT_EQ(json::parse(garbage.out).at("ok"), false);
}
