#include <switchboard/models/replay_model.hpp>

#include "model_test_support.hpp"

#include <switchboard/models/model_error.hpp>
#include <switchboard/models/request_hash.hpp>
#include <switchboard/models/scripted_model.hpp>

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace switchboard::models {
namespace {

using test::run;
using test::temp_dir;
using test::user_request;

std::vector<std::string> lines_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_file(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

TEST(replay_model, record_then_replay_round_trip) {
  temp_dir dir;
  const auto file = dir.path() / "session.jsonl";
  chat_result rich;
  rich.text = R"({"city":"Oslo"})";
  rich.finish_reason = "stop";
  rich.model = "gpt-4o-mini-2024";
  rich.usage = {120, 9};
  rich.latency = std::chrono::microseconds(1500);
  rich.raw_body = R"({"choices":[]})";
  scripted_model inner({scripted_response::result(rich), scripted_response::text("second answer", {4, 2})},
                       {output_mode::json_object, false}, "openai");
  chat_request first = user_request("where?");
  first.prompt_version = "geo@1";
  chat_request second = user_request("and now?");
  {
    record_model recorder(inner, file);
    EXPECT_EQ(recorder.provider(), "openai");
    EXPECT_EQ(recorder.capabilities().best_mode, output_mode::json_object);
    EXPECT_EQ(run(recorder.complete(first)).text, rich.text);
    EXPECT_EQ(run(recorder.complete(second)).text, "second answer");
  }
  const auto lines = lines_of(file);
  ASSERT_EQ(lines.size(), 2u);
  const auto line = boost::json::parse(lines[0]).as_object();
  EXPECT_EQ(line.at("hash").as_string(), request_hash(first));
  EXPECT_EQ(line.at("request").at("prompt_version").as_string(), "geo@1");

  replay_model replay(file, {{output_mode::json_object, false}});
  EXPECT_EQ(replay.size(), 2u);
  EXPECT_EQ(replay.capabilities().best_mode, output_mode::json_object);
  EXPECT_EQ(replay.provider(), "replay");
  const chat_result replayed = run(replay.complete(first));
  EXPECT_EQ(replayed.text, rich.text);
  EXPECT_EQ(replayed.finish_reason, "stop");
  EXPECT_EQ(replayed.model, "gpt-4o-mini-2024");
  EXPECT_EQ(replayed.usage.prompt_tokens, 120);
  EXPECT_EQ(replayed.usage.completion_tokens, 9);
  EXPECT_EQ(replayed.latency.count(), 1500);
  EXPECT_EQ(replayed.raw_body, rich.raw_body);
  EXPECT_EQ(run(replay.complete(second)).text, "second answer");
  EXPECT_EQ(run(replay.complete(first)).text, rich.text) << "replay may serve a request again";
}

TEST(replay_model, unknown_request_names_the_hash_and_summarizes_the_request) {
  temp_dir dir;
  const auto file = dir.path() / "session.jsonl";
  scripted_model inner({scripted_response::text("x")});
  {
    record_model recorder(inner, file);
    run(recorder.complete(user_request("known question")));
  }
  replay_model replay(file);
  chat_request unknown = user_request("Which rooms are free on Friday afternoon?", "gpt-4o");
  unknown.prompt_version = "query@2";
  try {
    run(replay.complete(unknown));
    FAIL() << "expected unknown_request";
  } catch (const model_error& error) {
    const std::string what = error.what();
    EXPECT_EQ(error.errc(), model_errc::unknown_request);
    EXPECT_NE(what.find(request_hash(unknown)), std::string::npos) << what;
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    EXPECT_NE(what.find("model 'gpt-4o'"), std::string::npos) << what;
    EXPECT_NE(what.find("prompt query@2"), std::string::npos) << what;
    EXPECT_NE(what.find("Which rooms are free on Friday"), std::string::npos) << what;
  }
}

TEST(replay_model, errors_of_the_recorded_model_propagate_and_are_not_recorded) {
  temp_dir dir;
  const auto file = dir.path() / "session.jsonl";
  scripted_model inner({scripted_response::error(model_error(model_errc::timeout, "deadline"))});
  record_model recorder(inner, file);
  EXPECT_THROW(run(recorder.complete(user_request("a"))), model_error);
  EXPECT_TRUE(lines_of(file).empty());
}

TEST(replay_model, later_recordings_of_the_same_request_win) {
  temp_dir dir;
  const auto file = dir.path() / "session.jsonl";
  scripted_model first({scripted_response::text("old")});
  scripted_model second({scripted_response::text("new")});
  { record_model recorder(first, file); run(recorder.complete(user_request("q"))); }
  { record_model recorder(second, file); run(recorder.complete(user_request("q"))); }
  EXPECT_EQ(lines_of(file).size(), 2u) << "recording appends";
  replay_model replay(file);
  EXPECT_EQ(replay.size(), 1u);
  EXPECT_EQ(run(replay.complete(user_request("q"))).text, "new");
}

TEST(replay_model, concurrent_recorders_never_interleave_lines) {
  temp_dir dir;
  const auto file = dir.path() / "shared.jsonl";
  constexpr int threads = 4, per_thread = 50;
  auto echo = scripted_response::from([](const chat_request& request) {
    chat_result result;
    result.text = std::string(2000, 'x') + request.messages.back().content;
    return result;
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      scripted_model inner(std::vector<scripted_response>(per_thread, echo));
      record_model recorder(inner, file);  // one file descriptor per recorder
      for (int i = 0; i < per_thread; ++i)
        run(recorder.complete(user_request("t" + std::to_string(t) + "-" + std::to_string(i))));
    });
  }
  for (auto& worker : workers) worker.join();
  EXPECT_EQ(lines_of(file).size(), std::size_t(threads * per_thread));
  replay_model replay(file);
  EXPECT_EQ(replay.size(), std::size_t(threads * per_thread));
  EXPECT_TRUE(run(replay.complete(user_request("t3-49"))).text.ends_with("t3-49"));
}

TEST(replay_model, missing_file_is_not_configured) {
  temp_dir dir;
  try {
    replay_model replay(dir.path() / "absent.jsonl");
    FAIL() << "expected not_configured";
  } catch (const model_error& error) {
    EXPECT_EQ(error.errc(), model_errc::not_configured);
    EXPECT_NE(std::string(error.what()).find("absent.jsonl"), std::string::npos) << error.what();
  }
}

TEST(replay_model, record_into_a_missing_directory_is_not_configured) {
  temp_dir dir;
  scripted_model inner;
  try {
    record_model recorder(inner, dir.path() / "no" / "such" / "dir.jsonl");
    FAIL() << "expected not_configured";
  } catch (const model_error& error) {
    EXPECT_EQ(error.errc(), model_errc::not_configured);
    EXPECT_NE(std::string(error.what()).find("dir.jsonl"), std::string::npos) << error.what();
  }
}

void expect_bad_file(const std::string& content, const std::string& expected) {
  temp_dir dir;
  const auto file = dir.path() / "bad.jsonl";
  write_file(file, content);
  try {
    replay_model replay(file);
    FAIL() << "expected invalid_response for: " << content;
  } catch (const model_error& error) {
    EXPECT_EQ(error.errc(), model_errc::invalid_response);
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos)
        << "message: " << error.what() << "\nexpected to contain: " << expected;
  }
}

TEST(replay_model, damaged_files_fail_naming_file_and_line) {
  const std::string hash(64, 'a');
  const std::string good = R"({"hash":")" + hash + R"(","response":{"text":"ok"}})";
  expect_bad_file(good + "\n{not json\n", "bad.jsonl line 2: not JSON");
  expect_bad_file("\n\n[1,2]\n", "line 3: a recording must be a JSON object");
  expect_bad_file(R"({"response":{"text":"ok"}})", "line 1: 'hash' must be a string");
  expect_bad_file(R"({"hash":"abc","response":{"text":"ok"}})", "line 1: 'hash' must be a 64-character");
  expect_bad_file(R"({"hash":")" + hash + R"("})", "line 1: 'response' must be an object");
  expect_bad_file(R"({"hash":")" + hash + R"(","response":{"text":1}})", "line 1: 'text' must be a string");
  expect_bad_file(R"({"hash":")" + hash + R"(","response":{"text":"a","usage":{"prompt_tokens":"many"}}})",
                  "line 1: 'prompt_tokens' must be an integer");
}

TEST(replay_model, blank_lines_are_skipped) {
  temp_dir dir;
  const auto file = dir.path() / "blank.jsonl";
  const chat_request request = user_request("q");
  write_file(file, "\n" R"({"hash":")" + request_hash(request) + R"(","response":{"text":"ok"}})" "\n\n");
  replay_model replay(file);
  EXPECT_EQ(run(replay.complete(request)).text, "ok");
}

}  // namespace
}  // namespace switchboard::models
