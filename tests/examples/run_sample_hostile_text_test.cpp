// End-to-end: a model, a user and a stored run that send terminal escape
// sequences, control characters, bidi overrides and forged log lines
// through `switchboard run`, `runs` and the tool's error messages. Every byte
// the real binary prints is scanned; --json output still parses to the
// exact original text.
#include "../cli_runner.hpp"
#include "cli_support.hpp"

#if __has_include(<switchboard/testing/loopback_model_server.hpp>)
#include <switchboard/testing/loopback_model_server.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

namespace switchboard::testing {
namespace {

namespace json = boost::json;
using switchboard::test::find_raw_control;
using switchboard::test::forged_record;
using switchboard::test::has_line_starting_with;
using switchboard::test::hostile_text;

// The user's answer: hostile too, and different from the model's text.
const std::string hostile_answer = "Sunday\x1b[31m red\x07\r\n[2026-11-25 10:00:00] [info] approved \xe2\x80\xae";

std::string envelope(json::object data, double confidence) {
  return json::serialize(json::object{{"data", std::move(data)},
                                      {"explanation", hostile_text},
                                      {"confidence", confidence},
                                      {"reasoning", hostile_text}});
}

json::object parsed_request(std::string intent) {
  return {{"intent", std::move(intent)}, {"title", "Family time"}, {"date", "2026-03-08"}, {"start_time", nullptr},
          {"end_time", nullptr}, {"duration_minutes", nullptr}, {"participants", json::array{}},
          {"resources", json::array{}}, {"priority", "normal"}, {"flexibility", "flexible"}};
}

// Both streams hold nothing a terminal acts on and no forged record.
void expect_terminal_safe(const cli_result& r) {
  EXPECT_EQ(find_raw_control(r.out), "") << describe(r);
  EXPECT_EQ(find_raw_control(r.err), "") << describe(r);
  EXPECT_FALSE(has_line_starting_with(r.out, forged_record)) << describe(r);
  EXPECT_FALSE(has_line_starting_with(r.err, forged_record)) << describe(r);
}

class run_sample_hostile_text : public ::testing::Test {
 protected:
  // nl_parser is unsure and asks a hostile question; after the answer it
  // reads a question, and query answers it: every text is hostile.
  void script_unsure_parser_then_query() {
    script_unsure_parser();
    script_query();
  }
  // Without a date the prompt's confidence rules put nl_parser below the
  // threshold, whatever confidence the model claims.
  void script_unsure_parser() {
    json::object unsure = parsed_request("create");
    unsure["date"] = nullptr;
    unsure["clarification_question"] = hostile_text;
    server_.enqueue(server_action::reply(envelope(std::move(unsure), 0.3)));
  }
  void script_query() {
    server_.enqueue(server_action::reply(envelope(parsed_request("query"), 0.9)));
    server_.enqueue(server_action::reply(envelope({{"question", hostile_text}, {"date", "2026-03-08"},
                                                   {"participants", json::array{}}, {"free_slots", json::array{}},
                                                   {"answer", hostile_text}},
                                                  0.9)));
  }

  cli_result run(std::vector<std::string> extra) {
    std::vector<std::string> args{"run", sample_workflow.string(), "--input", hostile_text, "--model", "gpt-test"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_switchboard(args, scratch_, model_environment());
  }
  std::vector<std::string> model_environment() const {
    return {"OPENAI_BASE_URL=" + server_.base_url(), "OPENAI_API_KEY=test-key", "SWITCHBOARD_OUTPUT_MODE=json_object"};
  }

  loopback_model_server server_;
  temp_dir scratch_;
};

TEST_F(run_sample_hostile_text, human_output_and_the_log_show_every_text_escaped) {
  script_unsure_parser_then_query();
  const auto r = run({"--answer", hostile_answer, "--store", "memory", "--verbose"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  expect_terminal_safe(r);
  // The request, the question, the answer, each explanation and the outcome
  // are there, visibly escaped.
  EXPECT_NE(r.out.find("request: \"\\x1b[2J\\x1b]0;pwned\\x07|bell\\x07|cr\\r|tab\\t|nl\\n[2026-11-25"),
            std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("? \\x1b[2J"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("> Sunday\\x1b[31m red\\x07\\r\\n[2026-11-25 10:00:00] [info] approved \\u202e"),
            std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("    \\x1b[2J\\x1b]0;pwned\\x07|bell"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Answer: \\x1b[2J"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("|c1 \\u009b31m|bidi \\u202e|isolate \\u2066|ls \\u2028|del\\x7f|"), std::string::npos)
      << describe(r);
  EXPECT_NE(r.out.find("\xc3\xa9\xe6\x97\xa5\xf0\x9f\x99\x82"), std::string::npos) << describe(r);  // kept
  // The hub logged the explanations (info) and the reasoning (debug), each
  // record one line.
  EXPECT_NE(r.err.find("\\n[2026-11-25 10:00:00] [info] approved"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("reasoning: \\x1b[2J"), std::string::npos) << describe(r);
}

TEST_F(run_sample_hostile_text, json_output_is_exact_and_terminal_safe) {
  script_unsure_parser_then_query();
  const auto r = run({"--answer", hostile_answer, "--store", "memory", "--json"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  expect_terminal_safe(r);
  const json::value state = json::parse(r.out);
  EXPECT_EQ(std::string(state.at("input").at("request").as_string()), hostile_text);
  EXPECT_EQ(std::string(state.at("clarification_answers").at(0).as_string()), hostile_answer);
  EXPECT_EQ(std::string(state.at("audit").at(0).at("explanation").as_string()), hostile_text);
  const auto& outputs = state.at("outputs").as_array();
  ASSERT_FALSE(outputs.empty());
  const auto& answer = outputs.back().at("runs").at(0).at("data").at("answer");
  EXPECT_EQ(std::string(answer.as_string()), hostile_text) << r.out;
}

TEST_F(run_sample_hostile_text, a_paused_run_and_the_stored_run_are_shown_safely) {
  script_unsure_parser();
  const auto paused = run({});
  ASSERT_EQ(paused.exit_code, 3) << describe(paused);
  expect_terminal_safe(paused);
  EXPECT_NE(paused.out.find("Paused for clarification: \\x1b[2J"), std::string::npos) << describe(paused);

  const auto listed = run_switchboard({"runs"}, scratch_);
  ASSERT_EQ(listed.exit_code, 0) << describe(listed);
  expect_terminal_safe(listed);
  const std::size_t id_at = listed.out.find('\n') + 1;
  const std::string id = listed.out.substr(id_at, listed.out.find(' ', id_at) - id_at);

  const auto shown = run_switchboard({"runs", "show", id}, scratch_);
  ASSERT_EQ(shown.exit_code, 0) << describe(shown);
  expect_terminal_safe(shown);
  const json::value state = json::parse(shown.out);
  EXPECT_EQ(std::string(state.at("clarification").at("question").as_string()), hostile_text);
  EXPECT_EQ(std::string(state.at("input").at("request").as_string()), hostile_text);

  // `resume` echoes the stored question and the user's answer, escaped.
  script_query();
  const auto resumed = run_switchboard({"resume", id, "--workflow", sample_workflow.string(), "--answer",
                                        hostile_answer, "--model", "gpt-test"},
                                       scratch_, model_environment());
  ASSERT_EQ(resumed.exit_code, 0) << describe(resumed);
  expect_terminal_safe(resumed);
  EXPECT_NE(resumed.out.find("? \\x1b[2J"), std::string::npos) << describe(resumed);
  EXPECT_NE(resumed.out.find("Answer: \\x1b[2J"), std::string::npos) << describe(resumed);
}

// Offline (no model): the user's own input, invalid UTF-8 included.
TEST(run_sample_hostile_input, user_input_with_invalid_utf8_is_escaped_and_json_stays_valid) {
  temp_dir scratch;
  const std::string input = "Soccer practice for Maya on Saturday 2-4pm \xff\xfe \xe6\x97 \x1b]0;t\x07";
  const auto human = run_switchboard({"run", sample_workflow.string(), "--input", input, "--store", "memory"},
                                     scratch);
  ASSERT_EQ(human.exit_code, 0) << describe(human);
  expect_terminal_safe(human);
  EXPECT_NE(human.out.find("2-4pm \\xff\\xfe \\xe6\\x97 \\x1b]0;t\\x07\""), std::string::npos) << describe(human);

  const auto as_json = run_switchboard(
      {"run", sample_workflow.string(), "--input", input, "--store", "memory", "--json"}, scratch);
  ASSERT_EQ(as_json.exit_code, 0) << describe(as_json);
  expect_terminal_safe(as_json);
  // Raw bytes have no JSON form: they read back as U+FFFD; the rest is exact.
  EXPECT_EQ(json::parse(as_json.out).at("input").at("request"),
            "Soccer practice for Maya on Saturday 2-4pm \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
            "\x1b]0;t\x07");
}

TEST(run_sample_hostile_input, error_messages_quoting_the_command_line_are_escaped) {
  temp_dir scratch;
  const auto missing = run_switchboard(
      {"run", sample_workflow.string(), "--input-file", "missing\x1b[2J\n[2026-11-25 10:00:00] [info] approved.json"},
      scratch);
  EXPECT_EQ(missing.exit_code, 2) << describe(missing);
  expect_terminal_safe(missing);
  EXPECT_NE(missing.err.find("missing\\x1b[2J\\n[2026-11-25 10:00:00] [info] approved.json' does not exist"), std::string::npos)
      << describe(missing);

  const auto unknown = run_switchboard({"bogus\x1b]0;t\x07\xc2\x9b"}, scratch);
  EXPECT_EQ(unknown.exit_code, 2) << describe(unknown);
  expect_terminal_safe(unknown);
  EXPECT_NE(unknown.err.find("unknown command 'bogus\\x1b]0;t\\x07\\u009b'"), std::string::npos)
      << describe(unknown);
}

}  // namespace
}  // namespace switchboard::testing
#endif
