// `switchboard ask` with the shared model options, run as a user would
// against a loopback model server: --timeout is the whole wait,
// --max-attempts counts every request, --cache answers repeats from disk,
// --metrics writes Prometheus text, and numbers print as people write them.
#include "../../cli_runner.hpp"

#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::Not;
using switchboard::test::shell_quoted;
using switchboard::testing::loopback_model_server;
using switchboard::testing::server_action;
using namespace std::chrono_literals;

namespace {

class AskModelOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("switchboard-ask-options-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "schemas");
    write("schemas/score@1.json", R"({"type": "object",
        "properties": {"title": {"type": "string"}, "score": {"type": "number"}},
        "required": ["title", "score"], "additionalProperties": false})");
    write("stdin.txt", "");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::string read(const fs::path& file) const {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string stderr_text() const { return read(dir_ / "stderr.txt"); }

  switchboard::test::cli_result ask(const std::string& args) {
    const std::string environment = switchboard::test::isolated_environment(dir_);
    const std::string base = "--base-url " + shell_quoted(server_.base_url() + "/v1") + " --model gpt-test ";
    return switchboard::test::run_switchboard(dir_, "ask " + base + args, dir_ / "stdin.txt", false, environment);
  }

  loopback_model_server server_;
  fs::path dir_;
};

// Before: --timeout bounded each of 3 transport attempts (≈ 3 × 2 s + back-off)
// and the error said "attempt 3".
TEST_F(AskModelOptions, TimeoutIsTheWholeWaitAndTheErrorNamesOneAttempt) {
  server_.set_default(server_action::stall(60s));
  const auto r = ask("--schema score@1 --timeout 2 --max-attempts 1 'Rate it'");
  ASSERT_EQ(r.exit_code, 1) << r.out << stderr_text();
  const json::value out = json::parse(r.out);
  EXPECT_EQ(out.at("ok"), false);
  EXPECT_EQ(out.at("error"), "timeout");
  EXPECT_THAT(std::string(out.at("message").as_string()), HasSubstr("after 1 attempt"));
  EXPECT_THAT(std::string(out.at("message").as_string()), Not(HasSubstr("attempt 3")));
  EXPECT_EQ(server_.request_count(), 1u);  // the deadline ended the call, not a stalled 60 s wait
}

TEST_F(AskModelOptions, MaxAttemptsCountsTransportRetries) {
  server_.set_default(server_action::error(503, "overloaded"));
  const auto r = ask("--schema score@1 --max-attempts 2 'Rate it'");
  ASSERT_EQ(r.exit_code, 1) << r.out << stderr_text();
  EXPECT_EQ(server_.request_count(), 2u);
  EXPECT_THAT(r.out, HasSubstr("after 2 attempts"));
}

TEST_F(AskModelOptions, NumbersPrintAsPeopleWriteThem) {
  server_.enqueue(server_action::reply(R"({"title": "sync", "score": 0.9})"));
  const auto r = ask("--schema score@1 'Rate it'");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  EXPECT_THAT(r.out, HasSubstr(R"("score":0.9)"));
  EXPECT_THAT(r.out, Not(HasSubstr("E-1")));
  EXPECT_EQ(json::parse(r.out).at("value").at("score"), 0.9);
}

TEST_F(AskModelOptions, TheSecondIdenticalAskIsAnsweredFromTheCache) {
  server_.enqueue(server_action::reply(R"({"title": "sync", "score": 0.95})"));
  const auto first = ask("--schema score@1 --cache cache 'Rate it'");
  ASSERT_EQ(first.exit_code, 0) << first.out << stderr_text();
  EXPECT_EQ(server_.request_count(), 1u);
  struct stat info {};
  ASSERT_EQ(::stat((dir_ / "cache").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  for (const auto& entry : fs::directory_iterator(dir_ / "cache")) {
    ASSERT_EQ(::stat(entry.path().c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u) << entry.path();
  }

  const auto second = ask("--schema score@1 --cache cache --metrics metrics.prom 'Rate it'");
  ASSERT_EQ(second.exit_code, 0) << second.out << stderr_text();
  EXPECT_EQ(server_.request_count(), 1u);  // nothing sent
  EXPECT_EQ(json::parse(second.out).at("value"), json::parse(first.out).at("value"));
  const std::string metrics = read(dir_ / "metrics.prom");
  EXPECT_THAT(metrics, HasSubstr("switchboard_model_cache_requests_total{cache=\"model\",outcome=\"hit\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("switchboard_model_cache_store_hits_total{cache=\"model\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("switchboard_model_requests_total{outcome=\"ok\",provider=\"openai\"} 0\n"));
  EXPECT_THAT(metrics, HasSubstr("# TYPE switchboard_parse_total counter\n"));
}

TEST_F(AskModelOptions, ACorruptedCacheEntryIsAMissWithAWarning) {
  server_.enqueue(server_action::reply(R"({"title": "sync", "score": 0.5})"));
  ASSERT_EQ(ask("--schema score@1 --cache cache 'Rate it'").exit_code, 0) << stderr_text();
  for (const auto& entry : fs::directory_iterator(dir_ / "cache")) {
    std::string text = read(entry.path());
    text[text.find("0.5")] = '7';  // the answer would become {"score": 7.5}
    std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << text;
  }
  server_.enqueue(server_action::reply(R"({"title": "sync", "score": 0.25})"));
  const auto r = ask("--schema score@1 --cache cache 'Rate it'");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  EXPECT_EQ(server_.request_count(), 2u);
  EXPECT_EQ(json::parse(r.out).at("value").at("score"), 0.25);
  EXPECT_THAT(stderr_text(), HasSubstr("ignoring entry"));
}

TEST_F(AskModelOptions, MetricsCountRequestsRetriesAndTokens) {
  server_.enqueue(server_action::error(503, "busy"));
  server_.enqueue(server_action::reply(R"({"title": "sync", "score": 1})"));
  const auto r = ask("--schema score@1 --metrics metrics.prom 'Rate it'");
  ASSERT_EQ(r.exit_code, 0) << r.out << stderr_text();
  const std::string metrics = read(dir_ / "metrics.prom");
  EXPECT_THAT(metrics, HasSubstr("switchboard_model_requests_total{outcome=\"ok\",provider=\"openai\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("switchboard_model_retries_total{provider=\"openai\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("switchboard_model_tokens_total{kind=\"completion\",provider=\"openai\"} 7\n"));
  EXPECT_THAT(metrics, HasSubstr("switchboard_parse_total{outcome=\"direct\"} 1\n"));
}

TEST_F(AskModelOptions, BadModelOptionValuesAreUsageErrors) {
  const auto r = ask("--schema score@1 --timeout 0 'Rate it'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(stderr_text(), HasSubstr("'--timeout' needs an integer from 1 to 86400, got '0'"));
  EXPECT_EQ(server_.request_count(), 0u);
}

}  // namespace
