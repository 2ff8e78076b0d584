// End-to-end: the scheduling sample through `switchboard run` / `resume`,
// offline (rule-based language agents), with a temporary SQLite store.
#include "cli_support.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

namespace switchboard::testing {
namespace {

class run_sample : public ::testing::Test {
 protected:
  cli_result run(std::vector<std::string> extra) {
    std::vector<std::string> args{"run", sample_workflow.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_switchboard(args, scratch_);
  }
  std::string store() const { return "sqlite:" + (scratch_.path() / "workflows.db").string(); }

  temp_dir scratch_;
};

TEST_F(run_sample, clear_request_is_auto_confirmed) {
  const auto r = run({"--input", "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("offline: rule-based nl_parser"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("[1] nl_parser  (confidence 0.95)"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("-> schedule"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("-> auto_confirm"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("] resolution"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Confirmed: \"Soccer practice\", Sat 2026-03-07 14:00\u201316:00, with Maya, using the minivan, "
                       "driven by Ana"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(r.out.find("] booking"), std::string::npos) << describe(r);
}

// Every command line test runs the tool in one isolated environment
// (tests/cli_runner.hpp): a developer's own Anthropic configuration, or
// their own prompt files, must not turn the offline sample online.
TEST_F(run_sample, the_developers_own_model_configuration_does_not_reach_the_run) {
  struct environment_guard {
    environment_guard() {
      ::setenv("SWITCHBOARD_PROVIDER", "anthropic", 1);
      ::setenv("ANTHROPIC_API_KEY", "a-developers-key", 1);
      ::setenv("SWITCHBOARD_PROMPT_PATH", "/nonexistent-prompts", 1);
    }
    ~environment_guard() {
      ::unsetenv("SWITCHBOARD_PROVIDER");
      ::unsetenv("ANTHROPIC_API_KEY");
      ::unsetenv("SWITCHBOARD_PROMPT_PATH");
    }
  } guard;
  const auto r = run({"--input", "When is everyone free on Sunday?"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("offline: rule-based nl_parser"), std::string::npos) << describe(r);
}

TEST_F(run_sample, a_huge_request_is_refused_clearly_not_a_crash) {
  // 60 KB of "for Maya and Leo and ...": the offline parser's phrase patterns
  // would recurse per character; the request is refused before they run.
  std::string request = "Soccer for Maya";
  while (request.size() < 60000) request += " and Leo";
  const auto file = scratch_.path() / "huge.json";
  std::ofstream(file) << boost::json::serialize(boost::json::object{{"request", request}});
  const auto r = run({"--input-file", file.string()});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE((r.out + r.err).find("a scheduling request may have at most 2000"), std::string::npos) << describe(r);
}

TEST_F(run_sample, conflicting_request_goes_through_resolution) {
  const auto r = run({"--input", "Dentist appointment for Leo on Tuesday 4-5pm, he needs the minivan"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("-> resolve"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("] resolution"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Plan (after resolution)"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("using the sedan"), std::string::npos) << describe(r);
}

TEST_F(run_sample, query_returns_availability) {
  const auto r = run({"--input", "When is everyone free on Sunday?"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("-> query"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Answer: Everyone (Ana, Sam, Maya and Leo) is free on Sunday 2026-03-08: "
                       "07:00\u201309:00, 11:00\u201313:00 and 14:00\u201320:00."),
            std::string::npos)
      << describe(r);
}

TEST_F(run_sample, vague_request_completes_after_an_answer) {
  const auto r = run({"--input", "Piano lesson for Leo sometime next week", "--answer", "Wednesday 5-6pm",
                      "--store", store()});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("? When next week should \"Piano lesson\" take place?"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Confirmed: \"Piano lesson\", Wed 2026-03-11 17:00\u201318:00, with Leo"), std::string::npos)
      << describe(r);
}

TEST_F(run_sample, vague_request_pauses_and_resumes_from_another_process) {
  const auto paused = run({"--input", "Piano lesson for Leo sometime next week", "--store", store()});
  ASSERT_EQ(paused.exit_code, 3) << describe(paused);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(paused.out, m,
                                std::regex{R"(switchboard resume (\S+) --workflow (\S+) --store (\S+) --answer)"}))
      << describe(paused);
  const std::string id = m[1].str();
  EXPECT_EQ(m[2].str(), sample_workflow.string());
  EXPECT_EQ(m[3].str(), store());

  const auto resumed = run_switchboard(
      {"resume", id, "--workflow", sample_workflow.string(), "--answer", "Wednesday 5-6pm", "--store", store()},
      scratch_);
  ASSERT_EQ(resumed.exit_code, 0) << describe(resumed);
  EXPECT_NE(resumed.out.find("Confirmed: \"Piano lesson\", Wed 2026-03-11 17:00\u201318:00"), std::string::npos)
      << describe(resumed);

  // A completed run is kept (`switchboard runs`) but never resumed again.
  const auto again = run_switchboard(
      {"resume", id, "--workflow", sample_workflow.string(), "--answer", "Thursday", "--store", store()}, scratch_);
  EXPECT_EQ(again.exit_code, 1) << describe(again);
  EXPECT_NE(again.err.find("'" + id + "' is completed"), std::string::npos) << describe(again);
}

TEST_F(run_sample, default_store_lives_in_the_state_directory) {
  const auto paused = run({"--input", "Piano lesson for Leo sometime next week"});
  ASSERT_EQ(paused.exit_code, 3) << describe(paused);
  EXPECT_TRUE(std::filesystem::exists(scratch_.path() / "workflows.db"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(paused.out, m, std::regex{R"(switchboard resume (\S+) --workflow \S+ --answer)"}));
  const auto resumed =
      run_switchboard({"resume", m[1].str(), "--workflow", sample_workflow.string(), "--answer", "Friday at 5pm"},
                      scratch_);
  ASSERT_EQ(resumed.exit_code, 0) << describe(resumed);
  EXPECT_NE(resumed.out.find("Fri 2026-03-13 17:00\u201318:00"), std::string::npos) << describe(resumed);
}

TEST_F(run_sample, json_prints_the_final_state) {
  const auto r = run({"--input", "Soccer practice for Maya on Saturday 2-4pm", "--json"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  boost::system::error_code ec;
  const auto state = boost::json::parse(r.out, ec);
  ASSERT_FALSE(ec) << describe(r);
  EXPECT_EQ(state.at("status").as_string(), "completed") << r.out;
}

TEST_F(run_sample, unknown_person_is_a_question_not_a_failure) {
  const auto r = run({"--input", "Swimming lesson for Zoe on Saturday at 3pm"});
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  EXPECT_NE(r.out.find("Who is Zoe?"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Maya"), std::string::npos) << describe(r);
  const auto answered = run({"--input", "Swimming lesson for Zoe on Saturday at 3pm", "--answer", "Maya"});
  ASSERT_EQ(answered.exit_code, 0) << describe(answered);
  EXPECT_NE(answered.out.find("Confirmed: \"Swimming lesson\", Sat 2026-03-07 15:00\u201316:00, with Maya"),
            std::string::npos)
      << describe(answered);
}

TEST_F(run_sample, nonsense_is_a_question_with_low_confidence) {
  const auto r = run({"--input", "asdf qwerty"});
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  EXPECT_NE(r.out.find("[1] nl_parser  (confidence 0.10)"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("could not find an event or a question"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("Asdf qwerty"), std::string::npos) << describe(r);
}

TEST_F(run_sample, unknown_resource_fails_with_a_clear_message) {
  const auto r = run({"--input", "Fishing for Sam on Saturday at 1pm, he needs the boat"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("unknown resource 'boat'"), std::string::npos) << describe(r);
}

TEST_F(run_sample, unschedulable_request_is_explained) {
  const auto r = run({"--input", "Road trip for Maya on Saturday for 14 hours"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("cannot schedule \"Road trip\""), std::string::npos) << describe(r);
}

TEST_F(run_sample, a_copy_of_the_sample_runs_from_an_unrelated_directory) {
  // A workflow is a directory: its data and schemas are found relative to the
  // file, its plugin by name next to the tool, wherever the copy lives.
  const auto copy = scratch_.path() / "somewhere" / "else" / "family";
  std::filesystem::create_directories(copy.parent_path());
  std::filesystem::copy(sample_workflow.parent_path(), copy, std::filesystem::copy_options::recursive);
  const auto r = run_switchboard({"run", (copy / "workflow.json").string(), "--input",
                                  "Soccer practice for Maya on Saturday 2-4pm, she needs the minivan"},
                                 scratch_);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("Confirmed: \"Soccer practice\", Sat 2026-03-07 14:00\u201316:00, with Maya"), std::string::npos)
      << describe(r);
  const auto agents = run_switchboard({"agents", (copy / "workflow.json").string()}, scratch_);
  ASSERT_EQ(agents.exit_code, 0) << describe(agents);
  EXPECT_NE(agents.out.find("booking"), std::string::npos) << describe(agents);
  EXPECT_NE(agents.out.find("plugin:"), std::string::npos) << describe(agents);
}

TEST_F(run_sample, malformed_data_file_is_named_with_its_line) {
  // Another household: a copy of the sample whose data is edited (the
  // plugin is found by name, so a copy anywhere works).
  const auto copy = scratch_.path() / "sample";
  std::filesystem::copy(sample_workflow.parent_path(), copy, std::filesystem::copy_options::recursive);
  std::ofstream(copy / "data" / "resources.json") << "{\n  \"resources\": [\n    { \"name\": \"minivan\",, }\n  ]\n}\n";
  const auto r = run_switchboard({"run", (copy / "workflow.json").string(), "--input",
                                  "Soccer practice for Maya on Saturday 2-4pm"},
                                 scratch_);
  EXPECT_NE(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.err.find("resources.json:3:"), std::string::npos) << describe(r);
}

TEST_F(run_sample, missing_files_and_bad_options_are_usage_errors) {
  auto r = run_switchboard({"run", "/nonexistent/workflow.json", "--input", "x"}, scratch_);
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("/nonexistent/workflow.json"), std::string::npos) << describe(r);
  r = run({"--input-file", "/nonexistent/request.txt"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("/nonexistent/request.txt"), std::string::npos) << describe(r);
  r = run({"--bogus"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("unknown option '--bogus'"), std::string::npos) << describe(r);
  r = run({"--input", "x", "--input-field", "now"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("--input-field expects KEY=VALUE, got 'now'"), std::string::npos) << describe(r);
}

TEST_F(run_sample, input_may_be_a_file_and_now_may_be_overridden) {
  const auto request = scratch_.path() / "request.txt";
  std::ofstream(request) << "Soccer practice for Maya on Saturday 2-4pm\n";
  const auto r = run({"--input-file", request.string(), "--input-field", "now=2026-03-09T08:00"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("Sat 2026-03-14 14:00"), std::string::npos) << describe(r);
}

// The sample's agents refuse a reference time they cannot read, rather
// than plan for the household's week.
TEST_F(run_sample, a_now_that_is_not_a_date_and_time_fails_the_run_naming_it) {
  for (const std::string now : {"2026-02-30T10:00", "2026-03-01T24:00", "2026-03-01T10:60", "tomorrow"}) {
    const auto r = run({"--input", "Soccer practice for Maya on Saturday 2-4pm", "--input-field", "now=" + now});
    EXPECT_EQ(r.exit_code, 1) << now << describe(r);
    EXPECT_NE(r.err.find("\"now\" must be a date and time \"YYYY-MM-DDTHH:MM\", got \"" + now + "\""),
              std::string::npos)
        << now << describe(r);
  }
}

TEST_F(run_sample, tools_lists_the_calendar_tools_and_which_wait_for_approval) {
  const auto shipped = run_switchboard({"tools", shipped_sample_workflow.string()}, scratch_);
  ASSERT_EQ(shipped.exit_code, 0) << describe(shipped);
  const std::regex book{R"(calendar\.book  \(plugin:[^)]*scheduling\.so\)  \[needs approval\]  \[idempotent\])"};
  EXPECT_TRUE(std::regex_search(shipped.out, book)) << describe(shipped);
  EXPECT_NE(shipped.out.find("calendar.household  (plugin:"), std::string::npos) << describe(shipped);
  EXPECT_NE(shipped.out.find("arguments: from: string*, to: string, who: array"), std::string::npos)
      << describe(shipped);

  // The copy that books without asking: the same tools, none waits.
  const auto unconfirmed = run_switchboard({"tools", "--json", sample_workflow.string()}, scratch_);
  ASSERT_EQ(unconfirmed.exit_code, 0) << describe(unconfirmed);
  const auto tools = boost::json::parse(unconfirmed.out).as_array();
  std::vector<std::string> names;
  for (const auto& t : tools) {
    names.emplace_back(t.at("name").as_string());
    EXPECT_EQ(t.at("needs_approval"), false) << boost::json::serialize(t);
    EXPECT_TRUE(t.at("parameters").is_object()) << boost::json::serialize(t);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"calendar.book", "calendar.cancel", "calendar.events",
                                             "calendar.household"}));

  const auto missing = run_switchboard({"tools", "/nonexistent/workflow.json"}, scratch_);
  EXPECT_EQ(missing.exit_code, 2) << describe(missing);
  EXPECT_NE(missing.err.find("/nonexistent/workflow.json"), std::string::npos) << describe(missing);
}

}  // namespace
}  // namespace switchboard::testing
