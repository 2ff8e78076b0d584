#include <switchboard/orchestrator/workflow_state.hpp>

#include <switchboard/orchestrator/error.hpp>

#include "orchestrator_test_support.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace switchboard::orchestrator {
namespace {

using ::testing::HasSubstr;
namespace json = boost::json;

workflow_state sample_state() {
  workflow_state s;
  s.id = "wf-1";
  s.workflow_name = "flow";
  s.input = json::parse(R"({"request": "meet Tuesday"})");
  s.status = workflow_status::awaiting_clarification;
  s.step = 3;
  s.starts = 2;
  s.next_node = "parse";
  s.add_output("a", testing::make_envelope({{"status", "first"}}, 0.9));
  s.add_output("b", testing::make_envelope({{"status", "b"}}, 0.8));
  s.add_output("a", testing::make_envelope({{"status", "second"}}, 0.4, "unsure"));
  audit_entry entry;
  entry.step = 1;
  entry.node = "parse";
  entry.agent = "a";
  entry.prompt_version = "v2";
  entry.confidence = 0.9;
  entry.explanation = "done";
  entry.route = "next";
  entry.condition = "otherwise";
  entry.duration = std::chrono::microseconds{1234};
  entry.tokens = {10, 20};
  entry.attempts = 2;
  entry.note = "retried";
  s.audit.push_back(entry);
  s.errors.push_back({"timeout", "agent 'a' did not answer", true, "a"});
  s.clarification = clarification_request{"Which Tuesday?", "parse", "a", 1};
  s.clarification_answers = {"the next one"};
  s.result = testing::make_envelope({{"status", "final"}});
  return s;
}

TEST(workflow_state, outputs_keep_history_latest_last_in_first_run_order) {
  auto s = sample_state();
  EXPECT_EQ(s.agent_names(), (std::vector<std::string>{"a", "b"}));
  ASSERT_NE(s.latest("a"), nullptr);
  EXPECT_EQ(s.latest("a")->data.at("status"), "second");
  EXPECT_EQ(s.history("a").size(), 2u);
  EXPECT_EQ(s.history("a").front().data.at("status"), "first");
  EXPECT_EQ(s.latest("nobody"), nullptr);
  EXPECT_TRUE(s.history("nobody").empty());
  EXPECT_EQ(s.first_error()->type, "timeout");
}

TEST(workflow_state, json_round_trip_keeps_everything) {
  auto s = sample_state();
  auto json_form = s.to_json();
  auto back = workflow_state::from_json(json::parse(json::serialize(json_form)));
  EXPECT_EQ(back.to_json(), json_form);
  EXPECT_EQ(back.status, workflow_status::awaiting_clarification);
  EXPECT_EQ(back.audit.at(0).duration, std::chrono::microseconds{1234});
  EXPECT_EQ(back.audit.at(0).tokens.total(), 30);
  EXPECT_EQ(back.clarification->question, "Which Tuesday?");
  EXPECT_EQ(back.history("a").size(), 2u);
  EXPECT_TRUE(back.errors.at(0).retryable);
  EXPECT_EQ(back.starts, 2);  // tracing numbers a resumed run's stretches by it
}

// A state saved before the hub counted a run's starts reads as 0 starts,
// not as corrupt: the next start is then numbered 1 again.
TEST(workflow_state, a_state_without_starts_reads_as_none) {
  auto json_form = sample_state().to_json();
  json_form.as_object().erase("starts");
  EXPECT_EQ(workflow_state::from_json(json_form).starts, 0);
}

TEST(workflow_state, corrupt_state_names_the_field) {
  auto json_form = sample_state().to_json();
  auto expect_corrupt = [](const json::value& v, std::string_view what) {
    try {
      workflow_state::from_json(v);
      ADD_FAILURE() << "accepted";
    } catch (const orchestrator_error& e) {
      EXPECT_EQ(e.errc(), orchestrator_errc::corrupt_checkpoint);
      EXPECT_THAT(e.what(), HasSubstr(std::string(what)));
    }
  };
  auto missing = json_form;
  missing.as_object().erase("next_node");
  expect_corrupt(missing, "missing field 'next_node'");
  auto bad_status = json_form;
  bad_status.as_object()["status"] = "sleeping";
  expect_corrupt(bad_status, "unknown status 'sleeping'");
  auto bad_audit = json_form;
  bad_audit.as_object()["audit"].as_array()[0].as_object()["step"] = "one";
  expect_corrupt(bad_audit, "/audit/0: field 'step' must be an integer");
  auto bad_envelope = json_form;
  bad_envelope.as_object()["outputs"].as_array()[0].as_object()["runs"].as_array()[1] = 5;
  expect_corrupt(bad_envelope, "/outputs/0/runs/1: not an envelope");
  auto future = json_form;
  future.as_object()["format"] = 99;
  expect_corrupt(future, "unsupported format 99");
  expect_corrupt(json::value("text"), "expected an object");
}

TEST(workflow_state, status_strings) {
  for (auto s : {workflow_status::running, workflow_status::awaiting_clarification, workflow_status::completed,
                 workflow_status::failed, workflow_status::cancelled}) {
    EXPECT_EQ(parse_workflow_status(to_string(s)), s);
  }
  EXPECT_EQ(parse_workflow_status("paused"), std::nullopt);
}

// ---------------------------------------------------------------- raw model text

TEST(audit_entry, keeps_a_short_raw_text_whole) {
  audit_entry entry;
  entry.keep_raw_text("{\"data\": {}} and some prose, caf\xC3\xA9");
  EXPECT_EQ(entry.raw_text, "{\"data\": {}} and some prose, caf\xC3\xA9");
  EXPECT_EQ(entry.raw_text_bytes, 0);
}

TEST(audit_entry, cuts_a_huge_raw_text_at_a_character_and_notes_its_length) {
  audit_entry entry;
  std::string text = "a";
  for (int i = 0; i < 40000; ++i) text += "\xC3\xA9";  // two bytes each: the cut falls inside one
  entry.keep_raw_text(text);
  EXPECT_EQ(entry.raw_text.size(), max_raw_text_bytes - 1);  // the last whole character
  EXPECT_EQ(entry.raw_text, text.substr(0, max_raw_text_bytes - 1));
  EXPECT_EQ(entry.raw_text_bytes, static_cast<std::int64_t>(text.size()));
}

TEST(audit_entry, replaces_bytes_that_are_not_utf8_so_the_state_stays_readable) {
  audit_entry entry;
  entry.keep_raw_text("ok \xFF \xC3 \xED\xA0\x80 end");
  EXPECT_EQ(entry.raw_text, "ok \xEF\xBF\xBD \xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD end");
  workflow_state s = sample_state();
  s.audit[0] = entry;
  const auto text = json::serialize(s.to_json());
  EXPECT_EQ(workflow_state::from_json(json::parse(text)).audit[0].raw_text, entry.raw_text);
}

TEST(audit_entry, a_replacement_character_counts_its_three_bytes_against_the_bound) {
  audit_entry fits;
  fits.keep_raw_text(std::string(max_raw_text_bytes - 3, 'x') + "\xFF");
  EXPECT_EQ(fits.raw_text, std::string(max_raw_text_bytes - 3, 'x') + "\xEF\xBF\xBD");
  EXPECT_EQ(fits.raw_text_bytes, 0) << "all of it was kept";

  audit_entry cut;
  const std::string text = std::string(max_raw_text_bytes - 2, 'x') + "\xFF";
  cut.keep_raw_text(text);
  EXPECT_EQ(cut.raw_text, std::string(max_raw_text_bytes - 2, 'x'));
  EXPECT_EQ(cut.raw_text_bytes, static_cast<std::int64_t>(text.size()));
}

TEST(audit_entry, the_cut_is_exact_wherever_ascii_runs_meet_the_bound) {
  // ASCII is taken eight bytes at a time: every offset of a character after
  // a run, near the bound, is cut as one character at a time would be.
  for (std::size_t run = max_raw_text_bytes - 12; run <= max_raw_text_bytes + 1; ++run) {
    for (const std::string_view character : {std::string_view("\xC3\xA9"), std::string_view("\xFF")}) {
      const std::string_view kept_as = character == "\xFF" ? std::string_view("\xEF\xBF\xBD") : character;
      const std::string text = std::string(run, 'x') + std::string(character) + std::string(20, 'y');
      std::string expected(std::min(run, max_raw_text_bytes), 'x');
      if (run + kept_as.size() <= max_raw_text_bytes) {
        expected += kept_as;
        expected += std::string(std::min<std::size_t>(20, max_raw_text_bytes - expected.size()), 'y');
      }
      audit_entry entry;
      entry.keep_raw_text(text);
      ASSERT_EQ(entry.raw_text, expected) << "run " << run << ", character of " << character.size() << " byte(s)";
      const bool cut = expected.size() < text.size() + (kept_as.size() - character.size());
      EXPECT_EQ(entry.raw_text_bytes, cut ? static_cast<std::int64_t>(text.size()) : 0) << "run " << run;
    }
  }
}

TEST(audit_entry, raw_text_round_trips_through_json_and_a_stored_one_is_held_to_the_bound) {
  workflow_state s = sample_state();
  s.audit[0].keep_raw_text(std::string(20000, 'x'));
  auto json_form = s.to_json();
  EXPECT_EQ(json_form.at("audit").at(0).at("raw_text_bytes").as_int64(), 20000);
  auto back = workflow_state::from_json(json_form);
  EXPECT_EQ(back.audit[0].raw_text, s.audit[0].raw_text);
  EXPECT_EQ(back.audit[0].raw_text_bytes, 20000);

  // A stored state is untrusted: a raw text past the bound is cut on reading.
  json_form.at("audit").at(0).as_object()["raw_text"] = std::string(1 << 20, 'y');
  json_form.at("audit").at(0).as_object().erase("raw_text_bytes");
  back = workflow_state::from_json(json_form);
  EXPECT_EQ(back.audit[0].raw_text.size(), max_raw_text_bytes);
  EXPECT_EQ(back.audit[0].raw_text_bytes, 1 << 20);
}

}  // namespace
}  // namespace switchboard::orchestrator
